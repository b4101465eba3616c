"""Demo data: the real workload traces shipped in ``gridweb/demo/`` replayed as curated runs.

``load_demo()`` (the ``gridweb_demo`` command) is idempotent: it creates the ``gridweb-demo``
user, stores each shipped trace as a public ``TraceFile`` (through the upload path,
``gridweb.scenarios.traces.store_trace``, which checks it with the engine's reader and finds a
trace it stored before by its sha256), and creates one public curated run per demo that does
not exist yet — each trace replayed with EASY backfilling on a cluster of the trace's own size
(its ``MaxProcs``, as in ``examples/das2-replay.yaml`` and docs/traces.md), and Zikos &
Karatza's Random site allocation (``simengine.presets.SCENARIOS["grid-4site-zikos"]``).
Provenance of the traces: ``gridweb/demo/PROVENANCE.txt``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files import File
from django.db import transaction

from gridweb.sharing import Visibility

from .models import FINISHED, Run, Status

DEMO_USER = "gridweb-demo"
DEMO_DIR = Path(__file__).resolve().parents[1] / "demo"
PROVENANCE = (DEMO_DIR / "PROVENANCE.txt").read_text() if (DEMO_DIR / "PROVENANCE.txt").exists() else ""


@dataclass(frozen=True)
class DemoTrace:
    """A shipped trace and the machine it was recorded on."""

    file: str
    cluster: str
    processors: int  # the trace's MaxProcs header
    title: str
    about: str
    tags: tuple[str, ...] = field(default=())


TRACES = (
    DemoTrace("DAS2-fs1-2003-1.swf.gz", "fs1", 64, "DAS-2 fs1 (Leiden) 2003, EASY",
              "The DAS-2 fs1 cluster at Leiden in 2003 (32 dual-CPU nodes = 64 processors, about 40,000 jobs), "
              "replayed as recorded (real runtimes, walltimes not enforced) under EASY backfilling.",
              ("das2",)),
    DemoTrace("NASA-iPSC-1993-3.1-cln.swf.gz", "ipsc", 128, "NASA Ames iPSC/860 1993, EASY",
              "The 128-node Intel iPSC/860 at NASA Ames in 1993 (18,239 jobs of the cleaned log), replayed "
              "under EASY backfilling. The log has no requested times: EASY plans with the real runtimes.",
              ("nasa",)),
    DemoTrace("HPC2N-2002-2.2-cln.first3171.swf.gz", "seth", 240, "HPC2N Seth 2002 (first 3,170 jobs), EASY",
              "The first 3,170 jobs of the HPC2N Seth Linux cluster (120 dual nodes = 240 processors) "
              "replayed under EASY backfilling.",
              ("hpc2n",)),
    DemoTrace("LCG-2005-1.swf.gz", "lcg", 24515, "LCG grid 2005 (188,041 jobs), EASY",
              "The LHC Computing Grid log of 2005: 188,041 one-processor jobs over 170 sites, replayed on one "
              "pool of its 24,515 processors under EASY — a large run: zoomed out, the Gantt shows utilisation.",
              ("lcg", "large")),
)


def trace_spec(trace: DemoTrace, stored_name: str) -> dict[str, Any]:
    """The scenario replaying ``trace`` (stored as ``stored_name``) under EASY on its own machine."""
    return {
        "name": trace.title,
        "description": trace.about,
        "platform": {"clusters": [{"name": trace.cluster, "processors": trace.processors,
                                   "scheduler": {"name": "easy"}}]},
        "workload": {"streams": [{"kind": "trace", "name": trace.cluster, "path": stored_name, "format": "swf",
                                  "target": trace.cluster}]},
        "run": {"seed": 1, "enforce_walltime": False},
    }


def zikos_spec() -> dict[str, Any]:
    from simengine.presets import SCENARIOS

    return copy.deepcopy(SCENARIOS["grid-4site-zikos"])


def demo_user():
    user, created = get_user_model().objects.get_or_create(username=DEMO_USER)
    if created:
        user.set_unusable_password()  # nobody logs in as the demo user
        user.save(update_fields=["password"])
    return user


def store_demo_trace(user, trace: DemoTrace):
    """The public TraceFile of a shipped trace (stored once; found again by its bytes)."""
    from gridweb.scenarios.traces import store_trace

    path = DEMO_DIR / trace.file
    with open(path, "rb") as handle:
        stored = store_trace(user, File(handle, name=trace.file), name=trace.file, visibility=Visibility.PUBLIC,
                             format="swf", description=f"{trace.about}\n\nProvenance:\n{PROVENANCE}".strip(),
                             tags=["demo", *trace.tags])
    if stored.visibility != Visibility.PUBLIC:
        stored.visibility = Visibility.PUBLIC
        stored.save(update_fields=["visibility", "updated"])
    return stored


@dataclass
class DemoOutcome:
    created: list[Run] = field(default_factory=list)
    existing: list[Run] = field(default_factory=list)
    executed: list[tuple[Run, str]] = field(default_factory=list)


def demo_specs(user) -> list[tuple[dict[str, Any], list[str]]]:
    """(scenario document, tags) of every demo run, storing the traces they replay."""
    specs = []
    for trace in TRACES:
        stored = store_demo_trace(user, trace)
        specs.append((trace_spec(trace, stored.stored_name), ["demo", "trace", "easy", *trace.tags]))
    zikos = zikos_spec()
    zikos["name"] = "Zikos & Karatza: Random site allocation, high load"
    specs.append((zikos, ["demo", "reproduction", "zikos", "lwr"]))
    return specs


def load_demo(*, run_now: bool = False, reset: bool = False,
              say: Callable[[str], None] = lambda text: None) -> DemoOutcome:
    """Create what is missing of the demo data (see the module docstring).

    ``run_now`` executes queued demo runs here and now (``execution.execute_run``); otherwise
    they are dispatched — to Celery in full-stack mode; in embedded mode they stay queued for the
    server's embedded worker, which picks queued runs up when it starts (a worker thread of this
    short-lived command would die with it, half-way through a run). ``reset`` deletes the demo
    runs first, so they are simulated again.
    """
    from .execution import dispatch, execute_run
    from .services import create_run

    user = demo_user()
    outcome = DemoOutcome()
    if reset:
        deleted, _ = Run.objects.filter(owner=user, curated=True).delete()
        say(f"deleted {deleted} demo objects")
    for spec, tags in demo_specs(user):
        run = Run.objects.filter(owner=user, curated=True, name=spec["name"]).order_by("pk").first()
        if run is None:
            with transaction.atomic():
                run = create_run(user, spec, name=spec["name"], description=spec.get("description", ""),
                                 visibility=Visibility.PUBLIC, tags=tags, curated=True, dispatch_now=False)
            outcome.created.append(run)
            say(f"created run #{run.pk}: {run.name}")
            if not run_now and not settings.GRIDWEB_EMBEDDED_WORKER:
                dispatch(run.pk)
        else:
            outcome.existing.append(run)
            say(f"run #{run.pk} exists ({run.status}): {run.name}")
        if run_now and run.status == Status.QUEUED:
            result = execute_run(run.pk)
            run.refresh_from_db()
            outcome.executed.append((run, result))
            say(f"  executed run #{run.pk}: {result}" + (f" — {run.error}" if run.error else ""))
        elif run.status not in FINISHED and not run_now and settings.GRIDWEB_EMBEDDED_WORKER:
            say(f"  run #{run.pk} is {run.status}: the server's embedded worker runs it when it starts")
    return outcome
