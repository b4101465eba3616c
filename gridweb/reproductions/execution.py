"""Creating, executing and storing reproductions (one recipe of simengine.reproductions each).

A reproduction is queued, then executed by a worker -- a Celery task in full-stack mode
(``gridweb.execute_reproduction``, gridweb.reproductions.tasks), the embedded worker thread
otherwise -- which runs the recipe into a temporary folder, telling the database its stage and
log as it goes, then stores every file the recipe wrote under ``reproductions/<id>/<token>/`` in
the "results" storage and the claims with their verdicts in the row. Inside a Celery prefork
child the recipe uses one process (gridweb.runs.execution.engine_processes).
"""

from __future__ import annotations

import html
import inspect
import logging
import os
import re
import secrets
import socket
import tempfile
import time
from pathlib import Path

from django.core.files.base import File
from django.db import close_old_connections
from django.http import FileResponse, Http404
from django.utils import timezone

from gridweb.runs.execution import (embedded, embedded_worker, engine_processes, readable_error, send_task,
                                    worker_name)
from gridweb.runs.models import FINISHED, Status
from gridweb.runs.result_store import results_storage
from gridweb.sharing import Visibility
from simengine import reproductions as recipes
from simengine.version import ENGINE_VERSION

from .models import Reproduction

log = logging.getLogger(__name__)

EXECUTE_REPRODUCTION = "gridweb.execute_reproduction"
#: seconds between two writes of the stage and log while a recipe runs
SAVE_EVERY = 0.5
#: the files of a reproduction a page may show or download (the recipe writes only these kinds)
SERVED = re.compile(r"^[A-Za-z0-9_.-]+\.(html|csv)$")


#: queued or running reproductions one user may have at once (each keeps a worker busy)
ACTIVE_LIMIT = 1


class TooManyActive(Exception):
    """The user has ACTIVE_LIMIT reproductions queued or running already."""


def check_active(user) -> None:
    """TooManyActive (saying so) when ``user`` may not start another reproduction now."""
    active = Reproduction.objects.filter(owner=user).exclude(status__in=FINISHED).count()
    if active >= ACTIVE_LIMIT:
        raise TooManyActive(f"you already have {active} reproduction queued or running; start another once it "
                            "has finished")


def describe(recipe: str) -> dict[str, str]:
    """Title and text of a recipe: its module's docstring (one place says what it reproduces)."""
    module = recipes.module(recipe)
    title = (inspect.getdoc(module) or recipe).partition("\n")[0]
    # (KOALA's two workloads share one experiment module, whose docstring says what it is)
    text = inspect.getdoc(inspect.getmodule(module.recipe)) or ""
    if inspect.getmodule(module.recipe) is module:
        text = text.partition("\n")[2]
    return {"name": recipe, "title": title.strip(), "text": text.strip()}


def short_title(title: str) -> str:
    """The paper part of a recipe's title: before its colon, else before its parenthesis."""
    head = title.split(":")[0] if ":" in title else title.split(" (")[0]
    return head.rstrip(". ")


def create_reproduction(user, recipe: str, *, quick: bool, visibility: str = Visibility.PRIVATE, group=None,
                        curated: bool = False, dispatch_now: bool = True) -> Reproduction:
    """A queued reproduction of ``recipe`` (a name of simengine.reproductions.RECIPES), handed to
    a worker unless ``dispatch_now`` is False; ``group`` is kept only with group visibility."""
    if recipe not in recipes.RECIPES:
        raise ValueError(f"recipe: unknown reproduction {recipe!r}; known: {', '.join(sorted(recipes.RECIPES))}")
    title = describe(recipe)["title"]
    rep = Reproduction.objects.create(
        owner=user, recipe=recipe, quick=quick, visibility=visibility,
        group=group if visibility == Visibility.GROUP else None, curated=curated,
        name=f"{short_title(title)} ({'quick' if quick else 'full'})", description=title,
        tags=["reproduction", recipe, "quick" if quick else "full"])
    if dispatch_now:
        dispatch(rep.pk)
    return rep


def dispatch(pk: int) -> bool:
    """Hand a queued reproduction to a worker (as gridweb.runs.execution.dispatch does a run).
    False when the broker did not take it: the reproduction stays queued without a task, and each
    worker's recovery sweep sends it (:func:`send_waiting`) once the broker answers again."""
    if embedded():
        embedded_worker().submit("reproduction", pk)
        return True
    task_id = secrets.token_hex(16)
    if not Reproduction.objects.filter(pk=pk, status=Status.QUEUED, task_id="").update(task_id=task_id):
        return False  # sent already (by another sweep), or no longer queued
    try:
        send_task(EXECUTE_REPRODUCTION, (pk,), task_id)
    except Exception:  # noqa: BLE001 - the broker is away: the request must not fail for it
        Reproduction.objects.filter(pk=pk, task_id=task_id).update(task_id="")
        log.warning("could not hand reproduction %s to the broker; the recovery sweep sends it", pk, exc_info=True)
        return False
    return True


def send_waiting() -> list[int]:
    """Send the queued reproductions no task was sent for (the broker was down when they were
    created); what each Celery worker's recovery sweep does (gridweb.runs.execution)."""
    waiting = Reproduction.objects.filter(status=Status.QUEUED, task_id="").order_by("pk").values_list("pk", flat=True)
    return [pk for pk in waiting if dispatch(pk)]


def recover() -> list[int]:
    """When the embedded worker starts: fail the reproductions a gone process was running and
    return the queued ones, to be executed again."""
    now = timezone.now()
    for rep in Reproduction.objects.filter(status=Status.RUNNING):
        if _gone(rep.pk, rep.worker):
            Reproduction.objects.filter(pk=rep.pk, status=Status.RUNNING).update(
                status=Status.FAILED, finished_at=now, error="interrupted: the GridWeb process running it stopped "
                "before it finished (re-run it)")
    return list(Reproduction.objects.filter(status=Status.QUEUED).order_by("pk").values_list("pk", flat=True))


#: reproductions executing in this process
_active: set[int] = set()


def _gone(pk: int, worker: str) -> bool:
    """Whether the execution recorded on a running reproduction has stopped: on this machine its
    process tells; a worker of another machine is taken as gone (there is no heartbeat: its task
    is delivered again only when that worker lost it, acks_late)."""
    name, _, pid = worker.rpartition(":")
    if name.rpartition("@")[2] != socket.gethostname() or not pid.isdigit():
        return True
    if int(pid) == os.getpid():
        return pk not in _active
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


class _Reporter:
    """Collects the recipe's log and progress; writes them to the row at most every SAVE_EVERY s."""

    def __init__(self, pk: int):
        self.pk, self.lines, self.stage, self.fraction, self.saved = pk, [], "", 0.0, 0.0

    def log(self, text: str) -> None:
        self.lines.append(str(text))
        self.save()

    def progress(self, done: int, total: int, stage: str) -> None:
        self.fraction = min(max(done / total, 0.0), 1.0) if total else 0.0
        self.stage = f"{stage}: {done} of {total}"
        self.save()

    def save(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.saved >= SAVE_EVERY:
            self.saved = now
            Reproduction.objects.filter(pk=self.pk).update(log="\n".join(self.lines), stage=self.stage,
                                                           progress=self.fraction, updated=timezone.now())


def execute_reproduction(pk: int, worker: str | None = None) -> str:
    """Run a queued reproduction to its end; returns its status ("skipped" if it was not queued)."""
    # queued, or running in an execution that has stopped (a worker lost it and its task came
    # again): taken by this one; the conditional update lets only one delivery take it
    found = Reproduction.objects.filter(pk=pk).values("status", "worker").first()
    if found is None or found["status"] not in (Status.QUEUED, Status.RUNNING):
        return "skipped"
    if found["status"] == Status.RUNNING and not _gone(pk, found["worker"]):
        return "skipped"
    claimed = Reproduction.objects.filter(pk=pk, **found).update(
        status=Status.RUNNING, started_at=timezone.now(), worker=worker or worker_name(), progress=0.0, log="",
        stage="", error="")
    if not claimed:
        return "skipped"
    rep = Reproduction.objects.get(pk=pk)
    reporter = _Reporter(pk)
    _active.add(pk)
    try:
        with tempfile.TemporaryDirectory(prefix="gridweb-reproduction-") as tmp:
            out = Path(tmp)
            kwargs = {"quick": rep.quick, "log": reporter.log, "progress": reporter.progress}
            recipe = recipes.get(rep.recipe)
            if "workers" in inspect.signature(recipe).parameters and engine_processes() is not None:
                kwargs["workers"] = engine_processes()
            claims = recipe(out, **kwargs)
            reporter.save(force=True)
            location, files = _store(rep, out)
    except Exception as exc:  # noqa: BLE001 - any failure ends the reproduction, with its reason
        log.exception("reproduction %s failed", pk)
        reporter.save(force=True)
        close_old_connections()
        Reproduction.objects.filter(pk=pk).update(status=Status.FAILED, error=readable_error(exc),
                                                  finished_at=timezone.now())
        return Status.FAILED
    finally:
        _active.discard(pk)
    rows = [dict(zip(recipes.COLUMNS, (c.claim, c.paper, c.measured, c.verdict, c.reason, c.fit, c.reading,
                                       c.construction))) | {"marks": c.marks} for c in claims]
    tally = recipes.verdict_counts(claims)
    figures = [{"file": name, "title": _title(out_file)} for name, out_file in files if name.endswith(".html")]
    Reproduction.objects.filter(pk=pk).update(
        status=Status.DONE, finished_at=timezone.now(), progress=1.0, claims=rows, tally=tally, figures=figures,
        files=[name for name, _ in files], location=location, engine_version=ENGINE_VERSION,
        stage=f"done: {recipes.summary(claims)}")
    return Status.DONE


def _store(rep: Reproduction, out: Path) -> tuple[str, list[tuple[str, str]]]:
    """Every file the recipe wrote into the results storage; (folder, [(name, title source)])."""
    storage = results_storage()
    location = f"reproductions/{rep.pk}/{secrets.token_hex(8)}"
    files = []
    for path in sorted(out.iterdir()):
        if path.is_file() and SERVED.match(path.name):
            with open(path, "rb") as fh:
                storage.save(f"{location}/{path.name}", File(fh, name=path.name))
            files.append((path.name, path.read_text(errors="replace")[:4096] if path.suffix == ".html" else ""))
    return location, files


def _title(head: str) -> str:
    m = re.search(r"<title>(.*?)</title>", head, re.S | re.I)
    return html.unescape(re.sub(r"\s+", " ", m.group(1)).strip()) if m else ""


def open_file(rep: Reproduction, name: str):
    """A stored file of a done reproduction, opened for reading (FileNotFoundError if it has none)."""
    if not rep.location or name not in rep.files or not SERVED.match(name):
        raise FileNotFoundError(name)
    return results_storage().open(f"{rep.location}/{name}", "rb")


def file_response(rep: Reproduction, name: str, attachment: bool) -> FileResponse:
    """A stored file of the reproduction as a response (the page's and the API's); Http404 if none."""
    try:
        fh = open_file(rep, name)
    except FileNotFoundError:
        raise Http404("No such file.") from None
    kind = "text/html; charset=utf-8" if name.endswith(".html") else "text/csv; charset=utf-8"
    return FileResponse(fh, content_type=kind, as_attachment=attachment, filename=name)
