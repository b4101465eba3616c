"""XSS payloads in every free-text field a user controls, rendered in a real browser (headless
Chromium driven by Playwright, Django's ``live_server``, embedded mode).

One user whose username, first and last names are payloads, in a research group whose name is
one, stores payloads through the site's own paths (the REST API, the run page's comment form, the
services the views call): a trace (its name, description, uploaded file name and a header comment
line), a scenario (its name, description and tags, and in its document the scenario's name and
description, both clusters, both streams and the advance reservation), runs of it (name,
description, tags, comments) executed by the embedded worker, so that their pages have Gantt
charts whose hover names clusters, streams and the reservation, a cancelled run, a sweep (name,
description, and the swept values: a stream's name) and a reproduction shared with the group.

Then every page that shows them is opened in one browser page: home, gallery (also with filters
from the query), run pages (Gantt hover tooltips, jobs table, status, comments, citation, sharing
form), compare (picker, tables, charts), sweeps (list, form and its errors, detail and its plot's
hover), scenarios (list, a search, detail, builder: edit with its validation and trace upload
messages, fork, from a run, import and its errors), reproductions (and a refused re-run's
message), profile, the REST API's browsable HTML, and logging in with a ``next`` address. On each: no ``window.__xss`` was set (an
init script traps the assignment), no dialog opened, no element carries an injected handler or
script or a ``javascript:`` URL (also in shadow roots: Bokeh's tooltips), no JavaScript error, and
each payload is shown as text. Every problem is collected and all are reported together.

Every payload is :func:`xss`: a ``javascript:`` URL (if it became a link's address), quotes and
``>`` leaving an attribute, an ``<img onerror>``, a ``</script><script>`` leaving an inline script
or JSON block, and ``{{7*7}}`` (it must stay literal). Each sets ``window.__xss`` to its own
label, so a failure names the field.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile

from gridweb.reproductions.execution import create_reproduction
from gridweb.reproductions.models import Reproduction
from gridweb.runs import execution
from gridweb.runs.models import Run, Status, Sweep
from gridweb.runs.services import cancel_run, create_run
from gridweb.scenarios.models import Scenario, TraceFile
from gridweb.sharing import Visibility
from tests.web.conftest import client_for

# (the login throttle's cache keys hold the username, which here has characters memcached would
# refuse; the site's caches are local memory and Redis, which take any key)
pytestmark = [pytest.mark.slow,
              pytest.mark.filterwarnings("ignore::django.core.cache.backends.base.CacheKeyWarning")]

#: shorter payloads where the whole does not fit: the swept values (a sweep point's scenario is
#: named "<name> [<path>=<value>]", at most 200 characters)
SHORT = {"sv1": "<img src=x onerror=window.__xss='sv1'>", "sv2": "</script><script>window.__xss='sv2'</script>"}


def xss(label: str) -> str:
    """A payload (123 characters for a 3-letter label: it fits a username) that sets
    ``window.__xss`` to ``label`` wherever it is not escaped."""
    if label in SHORT:
        return SHORT[label]
    hit = f"window.__xss='{label}'"
    return (f"javascript:{hit}//\"'><img src=x onerror={hit}>"
            f"</script><script>{hit}</script>{{{{7*7}}}}")


def tail(label: str) -> str:
    """The part of :func:`xss` without double quotes: how it reads inside a JSON document."""
    if label in SHORT:
        return SHORT[label]
    hit = f"window.__xss='{label}'"
    return f"'><img src=x onerror={hit}></script><script>{hit}</script>{{{{7*7}}}}"


#: tags are at most 50 characters: one attack each
TAGS = ["<img src=x onerror=window.__xss='tg1'>", "javascript:window.__xss='tg2'",
        "\"'><svg onload=window.__xss='tg3'>", "</script><script>window.__xss='tg4'</script>",
        "{{7*7}}<b>tg5</b>"]


def file_name(label: str, extension: str) -> str:
    """An uploaded file's name that is a payload (no '/': it is a file name)."""
    return f"<img src=x onerror=window.__xss='{label}'>{extension}"


# Set before any page script runs: an assignment to window.__xss is recorded (and logged), so a
# payload that runs is caught even if something overwrote or deleted the value afterwards.
TRAP = """(() => {
  const hits = [];
  Object.defineProperty(window, "__xss", { configurable: false,
    get: () => (hits.length ? hits.join(",") : undefined),
    set: (value) => { hits.push(String(value)); console.error("XSS-HIT " + value); } });
})();"""

# What an escaped payload never makes: a payload's element (an on* handler or a script that sets
# window.__xss) and a javascript: URL; in the document, its shadow roots (Bokeh's tooltips) and
# its same-origin frames.
INJECTED = r"""() => {
  const found = [];
  const walk = (root, where) => {
    for (const el of root.querySelectorAll("*")) {
      for (const a of el.attributes) {
        const value = a.value.trim().toLowerCase();
        if (a.name.startsWith("on") && value.includes("__xss")) found.push(`${where}<${el.localName} ${a.name}=${a.value}>`);
        if (["href", "src", "action", "formaction", "xlink:href", "data"].includes(a.name) && value.startsWith("javascript:"))
          found.push(`${where}<${el.localName} ${a.name}=${a.value}>`);
      }
      if (el.localName === "script" && /window\.__xss\s*=\s*'\w+'$/.test(el.text.trim()) && !/json/.test(el.type))
        found.push(`${where}<script>${el.text.trim()}</script>`);
      if (el.shadowRoot) walk(el.shadowRoot, where + "(shadow)");
      if (el.localName === "iframe") {
        try { if (el.contentDocument) walk(el.contentDocument, where + "(frame)"); } catch (e) { /* other origin */ }
      }
    }
  };
  walk(document, "");
  return found;
}"""


def spaced(text: str) -> str:
    return " ".join(text.split())


# --- The world: payloads stored through the site's own paths ---------------------------------------


def swf(jobs: int = 60, comment: str = "") -> bytes:
    lines = ["; Version: 2.2", "; MaxProcs: 16"] + ([f"; Note: {comment}"] if comment else [])
    for i in range(1, jobs + 1):
        procs = 1 + (i * 5) % 12
        lines.append(" ".join(str(f) for f in
                              [i, i * 90, 0, 200 + i * 7, procs, -1, -1, procs, 600, -1, 1, 1, 1, 1, 1, 1, -1, -1]))
    return ("\n".join(lines) + "\n").encode()


def scenario_spec(trace_path: str, name: str = xss("spn"), c1: str = xss("cl1")) -> dict[str, Any]:
    """Two clusters, a synthetic stream and the uploaded trace, a reservation: every name a payload."""
    c0 = xss("cl0")
    return {
        "name": name, "description": xss("spd"),
        "platform": {"clusters": [{"name": c0, "processors": 16, "scheduler": {"name": "easy"}},
                                  {"name": c1, "processors": 16, "scheduler": {"name": "easy"}}]},
        "workload": {"streams": [
            {"kind": "synthetic", "name": xss("st0"), "target": c0, "arrival": {"target_load": 0.7},
             "size": {"kind": "uniform", "low": 1, "high": 8, "integer": True},
             "runtime": {"kind": "exponential", "mean": 400}, "count": 150},
            {"kind": "trace", "name": xss("st1"), "path": trace_path, "target": c1}]},
        "reservations": [{"name": xss("rsv"), "cluster": c0, "processors": 8, "start": 3000, "end": 6000,
                          "job": {"runtime": 2500}}],
        "run": {"seed": 5, "replications": 1},
    }


def created(response, status: int = 201) -> dict[str, Any]:
    assert response.status_code == status, response.content.decode()[:2000]
    return response.json()


def build_world(user, group) -> dict[str, Any]:
    api = client_for(user)
    share = {"visibility": "group", "group": group.name, "tags": TAGS}

    trace = created(api.post("/api/traces/", {
        "file": SimpleUploadedFile(file_name("trf", ".swf"), swf(comment=xss("trh"))), "name": xss("trn"),
        "description": xss("trd"), "visibility": "group", "group": group.name}))
    assert trace["original_name"] == file_name("trf", ".swf")
    spec = scenario_spec(trace["stored_name"])
    scenario = created(api.post("/api/scenarios/", {"name": xss("scn"), "description": xss("scd"), "spec": spec,
                                                    **share}, content_type="application/json"))

    # runs the embedded worker executes: of the saved scenario, and of a variant (another cluster
    # and scenario name, so that compare's scenario differences show payloads too); a sweep
    run = created(api.post("/api/runs/", {"scenario": scenario["id"], "name": xss("run"),
                                          "description": xss("rud"), **share}, content_type="application/json"))
    variant = scenario_spec(trace["stored_name"], name=xss("sp2"), c1=xss("cx1"))
    run2 = created(api.post("/api/runs/", {"spec": variant, "name": xss("ru2"), "description": xss("rd2"),
                                           **share}, content_type="application/json"))
    # so many jobs that the chart opens zoomed out on the occupancy per processor band
    big_spec = scenario_spec(trace["stored_name"])
    big_spec["workload"]["streams"][0]["count"] = 13_000
    big = created(api.post("/api/runs/", {"spec": big_spec, "name": xss("ru3"), **share},
                           content_type="application/json"))
    sweep = created(api.post("/api/sweeps/", {
        "scenario": scenario["id"], "parameters": {"workload.streams.0.name": [xss("sv1"), xss("sv2")]},
        "name": xss("swn"), "description": xss("swd"), **share}, content_type="application/json"))
    # a run that ends without a result (cancelled while queued)
    cancelled = create_run(user, spec, name=xss("ruc"), description=xss("rdc"), tags=TAGS,
                           visibility=Visibility.GROUP, group=group, dispatch_now=False)
    cancel_run(cancelled, user)

    # comments: the run page's form, and the API (two lines: |linebreaksbr)
    response = api.post(f"/runs/{run['id']}/comments/", {"text": xss("cm1")})
    assert response.status_code == 302, response.content.decode()[:2000]
    created(api.post(f"/api/runs/{run['id']}/comments/", {"text": f"{xss('cm2')}\n{xss('cm3')}"},
                     content_type="application/json"))

    assert execution.embedded_worker().wait_idle(120)
    runs = Run.objects.filter(pk__in=[run["id"], run2["id"], big["id"], *[r["id"] for r in sweep["runs"]]])
    assert {r.pk: (r.status, r.error) for r in runs} == {r.pk: (Status.DONE, "") for r in runs}
    assert Sweep.objects.get(pk=sweep["id"]).status == Status.DONE
    assert Run.objects.get(pk=cancelled.pk).status == Status.CANCELLED

    # a reproduction shared with the group (its texts are the recipe's; its owner's and group's
    # names are payloads): created as the re-run form does, ended as a worker would
    rep = create_reproduction(user, "zikos", quick=True, visibility=Visibility.GROUP, group=group,
                              dispatch_now=False)
    Reproduction.objects.filter(pk=rep.pk).update(status=Status.DONE, progress=1.0)

    return {"trace": trace, "scenario": scenario["id"], "run": run["id"], "run2": run2["id"], "big": big["id"],
            "cancelled": cancelled.pk, "sweep": sweep["id"], "point": sweep["runs"][0]["id"], "reproduction": rep.pk}


# --- Fixtures ----------------------------------------------------------------------------------------


@pytest.fixture
def group(transactional_db) -> Group:
    return Group.objects.create(name=xss("grp"))


@pytest.fixture
def user(transactional_db, django_user_model, group):
    """The ``builder`` fixture's user (tests/web/conftest.py), every name of it a payload. (Made
    as an administrator could in the shell: ``gridweb_group invite`` and the admin's forms refuse
    such usernames; first and last names are free text.)"""
    person = django_user_model.objects.create_user(xss("usr"), password="pw-xss-123456",
                                                   first_name=xss("fst"), last_name=xss("lst"))
    person.groups.add(group)
    return person


@pytest.fixture
def idle_worker():
    """The embedded worker outlives tests (one per process): start and end the test with it idle."""
    assert execution.embedded_worker().wait_idle(120)
    yield
    assert execution.embedded_worker().wait_idle(120), "the embedded worker did not finish its queue"


# --- Visiting pages ----------------------------------------------------------------------------------


class Visitor:
    """One browser page that records, per page, every sign of a payload that was not escaped."""

    def __init__(self, page, base_url: str):
        self.page, self.base_url = page, base_url
        self.problems: list[str] = []
        self.visited: list[str] = []
        self.where = ""
        self.errors_seen = 0
        page.add_init_script(TRAP)
        page.on("dialog", self._dialog)
        page.on("console", lambda message: self.problem(f"ran: {message.text}")
                if message.text.startswith("XSS-HIT") else None)

    def _dialog(self, dialog) -> None:
        self.problem(f"a dialog opened: {dialog.type} {dialog.message!r}")
        dialog.dismiss()

    def problem(self, text: str) -> None:
        self.problems.append(f"{self.where}: {text}")

    def at(self, where: str) -> None:
        """Name what follows (an action on the page already open) in the problems."""
        self.where = where if len(where) < 90 else where[:87] + "…"
        self.visited.append(where)

    def open(self, path: str, ready: str | None = None) -> None:
        self.at(path)
        response = self.page.goto(self.base_url + path)
        if response is None or response.status != 200:
            self.problem(f"status {response.status if response else None}")
        self.page.wait_for_load_state("load")
        if ready:
            self.wait(ready)

    def wait(self, ready: str) -> None:
        try:
            self.page.wait_for_function(ready, timeout=30_000)
        except Exception as exc:  # noqa: BLE001 - one problem among the page's
            self.problem(f"never ready ({ready}): {type(exc).__name__}")

    def check(self, *, text: tuple[str, ...] = (), values: dict[str, str] | None = None,
              options: dict[str, tuple[str, ...]] | None = None, json_text: tuple[str, ...] = ()) -> None:
        """Nothing ran or was injected, no JavaScript error, and the payloads of ``text`` (labels)
        are shown as text, ``values`` (selector -> text) are form fields' values, ``options``
        (selector -> labels) are named by a select's options, ``json_text`` (labels) show in JSON."""
        page = self.page
        hit = page.evaluate("() => window.__xss")
        if hit is not None:
            self.problem(f"window.__xss was set by {hit}")
        for found in page.evaluate(INJECTED):
            self.problem(f"injected markup {found}")
        for error in page.js_errors[self.errors_seen:]:
            self.problem(f"JavaScript error {error}")
        self.errors_seen = len(page.js_errors)
        # (lower case: the style sheet shows some headings in capitals; no payload has any)
        shown = spaced(page.evaluate("() => document.body.innerText")).lower()
        for label in text:
            if spaced(xss(label)) not in shown:
                self.problem(f"the payload {label!r} is not shown as text")
        for label in json_text:
            if tail(label) not in shown:
                self.problem(f"the payload {label!r} is not shown in the JSON")
        for selector, expected in (values or {}).items():
            actual = page.locator(selector).first.input_value()
            if actual != expected:
                self.problem(f"{selector} holds {actual!r}, not {expected!r}")
        for selector, labels in (options or {}).items():
            names = page.locator(selector).first.evaluate("s => [...s.options].map((o) => o.textContent)")
            for label in labels:
                if not any(xss(label) in name for name in names):
                    self.problem(f"no option of {selector} names the payload {label!r}: {names}")

    def shows(self, selector: str, expected: str, what: str) -> None:
        """``expected`` is in the text of ``selector`` (shown or not: its textContent)."""
        texts = self.page.locator(selector).all_text_contents()
        if not any(spaced(expected) in spaced(t) for t in texts):
            self.problem(f"{what} is not shown as text in {selector}: {[t[:200] for t in texts]}")

    def tooltip(self, what: str, labels: tuple[str, ...], any_of: bool = False) -> None:
        """The Bokeh tooltip now shown names the payloads of ``labels`` (or one of them) as text."""
        try:
            self.page.locator(".bk-tooltip-content").first.wait_for(state="visible", timeout=5000)
        except Exception as exc:  # noqa: BLE001 - one problem among the page's
            self.problem(f"no tooltip over {what}: {type(exc).__name__}")
            return
        text = spaced(" ".join(self.page.locator(".bk-tooltip-content").all_inner_texts()))
        found = [label for label in labels if spaced(xss(label)) in text]
        if not found if any_of else len(found) < len(labels):
            self.problem(f"the tooltip over {what} does not show {labels} as text: {text[:600]}")

    def report(self) -> str:
        counts = Counter(self.problems)
        return "\n".join(["payloads ran, were injected or were not shown as text:",
                          *(f"{p}{f' (x{n})' if n > 1 else ''}" for p, n in counts.items())])


def in_view(page, where: str) -> dict[str, float] | None:
    """The page coordinates ``where`` (a JS function) gives, scrolled into the window first."""
    point = page.evaluate(where)
    height = page.evaluate("() => window.innerHeight")
    if point is not None and not 20 < point["y"] < height - 20:
        page.evaluate(f"() => window.scrollBy(0, {point['y'] - height / 2})")
        page.wait_for_timeout(100)
        point = page.evaluate(where)
    return point


def hover_gantt(visitor: Visitor, stream: int, cluster: int, labels: tuple[str, ...],
                hooks: str = "gridwebGantt") -> None:
    """Hover a segment of ``stream`` on ``cluster``: its tooltip names the payloads of ``labels``."""
    page = visitor.page
    find = f"""() => {{ const d = {hooks}.source.data;
        for (let i = 0; i < d.t0.length; i++) if (d.stream[i] === {stream} && d.cluster[i] === {cluster}) return i;
        return -1; }}"""
    i = page.evaluate(find)
    if i < 0:
        visitor.problem(f"no segment of stream {stream} on cluster {cluster} to hover")
        return
    seg = page.evaluate(f"{hooks}.segment({i})")
    pad = max((seg["t1"] - seg["t0"]) * 0.5, 1.0)
    page.evaluate(f"{hooks}.zoomTo({seg['t0'] - pad}, {seg['t1'] + pad})")
    page.wait_for_timeout(400)
    i = page.evaluate(find)  # the zoomed tile may hold the rows in another order
    point = in_view(page, f"() => {hooks}.screenPoint({i})")
    page.mouse.move(point["x"], point["y"])
    visitor.tooltip(f"stream {stream} on cluster {cluster}", labels)
    page.mouse.move(1, 1)


# The sweep page's plot is a Bokeh document the server embeds: where its first point is.
SWEEP_POINT = """() => {
  for (const plot of Bokeh.index.roots) {
    if (!plot.renderer_views) continue;
    for (const view of plot.renderer_views.values()) {
      const glyph = view.glyph;
      if (!glyph || glyph.model.type !== "Scatter" || !glyph.sx || !glyph.sx.length) continue;
      const box = plot.el.getBoundingClientRect();
      return { x: box.left + glyph.sx[0], y: box.top + glyph.sy[0] };
    }
  }
  return null;
}"""

RUN_READY = ("() => window.gridwebGantt && window.gridwebGantt.ready"
             " && document.getElementById('jobs-table').dataset.ready === 'true'"
             " && document.getElementById('plots').dataset.ready === 'true'")
BUILDER_READY = "() => !!document.querySelector('#builder[data-ready=\"1\"]')"
VALIDATED = "() => { const b = document.getElementById('builder'); return b.dataset.validated && !b.dataset.validating; }"


# --- The test ------------------------------------------------------------------------------------------


def test_payloads_in_every_free_text_field_stay_text_on_every_page(live_server, builder, user, group, idle_worker):
    world = build_world(user, group)
    scenario, trace = world["scenario"], world["trace"]
    run, run2, cancelled, point = world["run"], world["run2"], world["cancelled"], world["point"]
    sweep, rep = world["sweep"], world["reproduction"]
    page = builder
    v = Visitor(page, live_server.url)
    me = ("usr",)  # the navigation bar names the user on every page

    v.open("/")
    v.check(text=me)

    # The gallery: cards (names, owner, tags); the filters' values come from the query.
    v.open("/gallery/")
    v.check(text=(*me, "run", "ru2", "ruc"))
    for tag in TAGS:
        v.shows(".run-card .tag", tag, f"the tag {tag!r}")
    query = {"q": xss("fq"), "author": user.username, "tag": TAGS[0], "policy": xss("fp"), "platform": xss("fl")}
    v.open("/gallery/?" + urlencode(query))
    v.check(text=me, values={"#id_q": xss("fq"), "#id_author": user.username, "#id_tag": TAGS[0],
                             "#id_policy": xss("fp"), "#id_platform": xss("fl")})
    v.open("/gallery/?" + urlencode({"author": user.username, "tag": TAGS[3]}))
    v.check(text=(*me, "run", "ru2", "ruc"))

    # A done run: header, Gantt (hover both streams, both clusters, the reservation), jobs table,
    # metrics, plots, citation (first and last names), comments, sharing form.
    v.open(f"/runs/{run}/", ready=RUN_READY)
    v.check(text=(*me, "run", "rud", "grp", "fst", "lst", "cm1", "cm2", "cm3"),
            values={"#share-form [name=tags]": ", ".join(TAGS)},
            options={"#jobs-stream": ("st0", "st1"), "#share-form [name=group]": ("grp",)})
    for tag in TAGS:
        v.shows(".run-header .tag", tag, f"the tag {tag!r}")
    for label in ("cl0", "cl1"):
        v.shows("#jobs-table tbody td", xss(label), f"the cluster {label!r}")
    config = json.loads(page.locator("#gantt-config").text_content())
    assert config["streams"][:2] == [xss("st0"), xss("st1")] and config["reservations"] == [xss("rsv")]
    hover_gantt(v, 0, 0, ("st0", "cl0"))
    hover_gantt(v, 1, 1, ("st1", "cl1"))
    hover_gantt(v, config["reservationStream"], 0, ("rsv", "cl0"))
    v.check()
    v.at(f"/runs/{run}/ (jobs of a stream)")
    page.select_option("#jobs-stream", "1")
    v.wait("() => document.getElementById('jobs-table').dataset.ready === 'true'")
    v.check()

    v.open(f"/runs/{point}/", ready=RUN_READY)  # a sweep point: its stream is named by the swept value
    v.check(text=(*me, "swn"))
    hover_gantt(v, 0, 0, ("sv1", "cl0"))
    v.check()

    # zoomed out on a big run, the chart draws occupancy per processor band: its own tooltip
    v.open(f"/runs/{world['big']}/", ready="() => window.gridwebGantt && window.gridwebGantt.ready")
    v.wait("() => document.getElementById('gantt').dataset.mode === 'raster'")
    start, end = page.evaluate("gridwebGantt.xRange()")
    spot = in_view(page, f"() => gridwebGantt.screenPointAt(0, 3, {(start + end) / 2})")
    page.mouse.move(spot["x"], spot["y"])
    v.wait("() => { const tip = document.querySelector('.gantt-raster-tip'); return tip && !tip.hidden; }")
    v.shows(".gantt-raster-tip", xss("cl0"), "the cluster's name")
    v.check(text=(*me, "ru3"))

    v.open(f"/runs/{cancelled}/")
    v.check(text=(*me, "ruc", "rdc"))

    # Compare: the picker, then two runs (and the cancelled one, named as left out).
    v.open(f"/compare/?runs={run}")
    v.check(text=(*me, "run", "ru2"))
    v.open(f"/compare/?runs={run},{run2},{cancelled}", ready="() => window.gridwebCompare && gridwebCompare.ready")
    v.check(text=(*me, "run", "ru2", "ruc"))
    for label in ("spn", "sp2", "cl1", "cx1"):  # as JSON values
        v.shows("#scenario-diff", tail(label), f"the payload {label!r}")
    hover_gantt(v, 1, 1, ("st1", "cx1"), hooks="gridwebCompare.charts[1]")
    v.check()

    # Sweeps: the list, the form (pick, new, and its errors), the sweep (its table and its plot).
    v.open("/sweeps/")
    v.check(text=(*me, "swn"))
    v.open("/sweeps/new/")
    v.check(text=me, options={"#pick-scenario": ("scn",)})
    v.open(f"/sweeps/new/?scenario={scenario}")
    v.check(text=(*me, "scn"))
    v.at(f"/sweeps/new/?scenario={scenario} (refused)")
    page.fill("#id_name", xss("sfn"))
    page.fill("#param-0-path", xss("sfp"))
    page.fill("#param-0-values", xss("sfv"))
    with page.expect_navigation():
        page.click("#btn-start-sweep")
    v.check(text=me, values={"#id_name": xss("sfn"), "#param-0-path": xss("sfp"), "#param-0-values": xss("sfv")})
    # (the message quotes the path with Python's repr: its quotes come back with backslashes)
    v.shows('[data-error-for="param-0"]', "<img src=x onerror=window.__xss=\\'sfp\\'></script><script>",
            "the refused parameter")
    v.open(f"/sweeps/{sweep}/", ready="() => window.Bokeh && Bokeh.index.roots.length > 0")
    v.check(text=(*me, "swn", "swd", "scn", "sv1", "sv2"))
    where = in_view(page, SWEEP_POINT)
    if where is None:
        v.problem("no point to hover on the sweep's plot")
    else:
        page.mouse.move(where["x"], where["y"])
        v.tooltip("the sweep plot's point", ("sv1", "sv2"), any_of=True)
        v.check()

    # Scenarios: list (and a search echoed back), detail, builder (edit, fork, from a run, import).
    v.open("/scenarios/")
    v.check(text=(*me, "scn"))
    for tag in TAGS:
        v.shows("#scenario-table .tag", tag, f"the tag {tag!r}")
    v.open("/scenarios/?" + urlencode({"q": xss("sq")}))
    v.check(text=(*me, "sq"), values={"#search-q": xss("sq")})
    v.open(f"/scenarios/{scenario}/")
    v.check(text=(*me, "scn", "scd", "grp", "cl0", "cl1", "st0", "st1", "rsv", "run"))

    fields = {'[data-path="name"]': xss("spn"), '[data-path="description"]': xss("spd"),
              '[data-path="platform.clusters.0.name"]': xss("cl0"),
              '[data-path="platform.clusters.1.name"]': xss("cl1"),
              '[data-path="workload.streams.0.name"]': xss("st0"),
              '[data-path="workload.streams.1.name"]': xss("st1"),
              '[data-path="reservations.0.name"]': xss("rsv")}
    choices = {'[data-path="workload.streams.0.target"]': ("cl0", "cl1"),
               '[data-path="reservations.0.cluster"]': ("cl0",),
               '[data-path="workload.streams.1.path"]': ("trn",),
               '[data-path="meta.group"]': ("grp",)}
    v.open(f"/scenarios/{scenario}/edit/", ready=BUILDER_READY)
    v.wait(VALIDATED)
    v.wait("() => document.getElementById('preview-status').textContent.includes('sampled')")
    v.shows("#preview-load text", xss("cl0"), "the cluster's name in the preview")
    v.check(text=(*me, "scn"), values={**fields, '[data-path="meta.tags"]': ", ".join(TAGS)}, options=choices)
    # the engine's messages name what they are about: a duplicate cluster name, shown beside it
    v.at(f"/scenarios/{scenario}/edit/ (a duplicate cluster name)")
    page.fill('[data-path="platform.clusters.1.name"]', xss("cl0"))
    page.press('[data-path="platform.clusters.1.name"]', "Tab")
    v.wait("() => [...document.querySelectorAll('[data-error-for]')].some((e) => !e.hidden"
           " && e.textContent.includes('duplicate'))")
    v.check()
    v.shows("[data-error-for]", xss("cl0"), "the duplicate cluster name")
    # a trace uploaded in the builder: refused (its name in the message), then stored
    v.at(f"/scenarios/{scenario}/edit/ (trace uploads)")
    page.set_input_files("#trace-file-1", {"name": file_name("tu1", ".swf"), "mimeType": "text/plain",
                                          "buffer": b"1 2 3\nnot a trace\n"})
    v.wait("() => document.getElementById('trace-upload-status-1').textContent === 'Upload refused'")
    v.check()
    v.shows('[data-error-for="workload.streams.1.upload"]', file_name("tu1", ".swf"), "the refused file's name")
    page.set_input_files("#trace-file-1", {"name": file_name("tu2", ".swf"), "mimeType": "text/plain",
                                          "buffer": swf(jobs=30)})
    v.wait("() => (document.getElementById('trace-upload-status-1')?.textContent || '').startsWith('Uploaded')")
    v.check()
    v.shows("#trace-upload-status-1", file_name("tu2", ".swf"), "the uploaded file's name")
    page.goto("about:blank")  # (leave the changed builder without saving)

    v.open(f"/scenarios/new/?from={scenario}", ready=BUILDER_READY)
    v.check(text=(*me, "scn"), values=fields)
    v.open(f"/scenarios/new/?from_run={run}", ready=BUILDER_READY)
    v.check(text=(*me, "run"), values=fields)
    v.open("/scenarios/import/")
    v.check(text=me)
    v.at("/scenarios/import/ (a file that is not JSON)")
    page.set_input_files("#id_file", {"name": file_name("if1", ".json"), "mimeType": "application/json",
                                      "buffer": b"{not json"})
    with page.expect_navigation():
        page.click("#import-form button[type=submit]")
    v.check(text=me)
    v.shows("[data-error-for=file]", file_name("if1", ".json"), "the refused file's name")
    v.at("/scenarios/import/ (a scenario file)")
    page.set_input_files("#id_file", {"name": file_name("if2", ".json"), "mimeType": "application/json",
                                      "buffer": json.dumps(scenario_spec(trace["stored_name"])).encode()})
    with page.expect_navigation():
        page.click("#import-form button[type=submit]")
    v.wait(BUILDER_READY)
    v.check(text=me, values=fields)
    v.shows("#builder-origin", file_name("if2", ".json"), "the imported file's name")

    # Reproductions (and a re-run refused: its message echoes the value), the profile.
    v.open("/reproductions/")
    v.check(text=me)
    v.shows("#recent", xss("usr"), "the owner")
    v.at("/reproductions/ (a refused re-run)")
    page.evaluate("""label => { const s = document.querySelector('#rerun-form [name=recipe]');
        s.add(new Option(label, label)); s.value = label; }""", xss("rcp"))
    with page.expect_navigation():
        page.click("#rerun-button")
    v.check(text=(*me, "rcp"))
    v.open(f"/reproductions/{rep}/")
    v.check(text=(*me, "grp"))
    v.open("/accounts/me/")
    v.check(text=(*me, "grp"))

    # The REST API's browsable HTML (what a browser gets at an API address).
    for path, labels in (
        ("/api/scenarios/", ("scn", "scd", "usr", "grp")),
        (f"/api/scenarios/{scenario}/", ("scn", "scd", "spn", "spd", "cl0", "st1", "rsv")),
        ("/api/traces/", ("trn", "trd")),
        (f"/api/traces/{trace['id']}/", ("trn", "trd", "trh")),
        (f"/api/runs/{run}/", ("run", "rud", "cl0", "st0", "rsv")),
        (f"/api/runs/{run}/comments/", ("cm1", "cm2", "usr")),
        ("/api/sweeps/", ("swn", "swd")),
        (f"/api/sweeps/{sweep}/", ("swn", "swd", "sv1", "sv2")),
        (f"/api/reproductions/{rep}/", ("usr", "grp")),
        ("/api/me/", ("usr",)),
    ):
        v.open(path)
        v.check(json_text=labels)
        if path.startswith("/api/traces/"):
            v.shows("pre", file_name("trf", ".swf"), "the uploaded file's name")

    # Logged out: the login page drops a "next" address of javascript:, and logging in (as the
    # user, whose name is a payload) stays on the site.
    page.context.clear_cookies()
    v.open("/accounts/login/?" + urlencode({"next": xss("nxt")}))
    v.check(values={"input[name=next]": ""})  # (Django leaves out an address of another site)
    v.at("/accounts/login/ (logging in)")
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", "pw-xss-123456")
    with page.expect_navigation():
        page.click("#login-form button[type=submit]")
    if not page.url.startswith(live_server.url):
        v.problem(f"logging in went to {page.url}")
    v.check(text=me)

    assert not v.problems, v.report()
    assert len(v.visited) >= 40
    assert TraceFile.objects.get(pk=trace["id"]).original_name == file_name("trf", ".swf")
    assert Scenario.objects.get(pk=scenario).name == xss("scn")
