"""The live Gantt in real Chromium against the full stack (PostgreSQL, Redis, two Celery workers,
the ASGI server): a run draws while it simulates, in simulated-time order; pages that join late or
lose their connection end with exactly the segments of a page that watched from the start (and
of the stored result); a run cancelled midway keeps the Gantt of what it simulated.

The runs use the event-driven cluster path (preemption with suspend/resume), whose replication 0
streams slice by slice while it simulates (simengine.local.run).
"""

from __future__ import annotations

import json
import time

import psycopg
import pytest
from playwright.sync_api import Error as PlaywrightError

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

SCREENSHOTS = ROOT / "artifacts" / "screenshots"


def spec(completions: int, replications: int = 1, name: str = "live") -> dict:
    return {
        "name": name,
        "platform": {"clusters": [
            {"name": "east", "processors": 64, "scheduler": {"name": "easy"},
             "preemption": {"name": "suspend", "params": {"overhead": 60}}},
            {"name": "west", "processors": 64, "scheduler": {"name": "easy"},
             "preemption": {"name": "suspend", "params": {"overhead": 60}}}]},
        "workload": {"streams": [
            {"kind": "synthetic", "name": "batch", "target": "grid", "priority": 0, "arrival": {"target_load": 0.7},
             "size": {"kind": "uniform", "low": 1, "high": 16, "integer": True},
             "runtime": {"kind": "exponential", "mean": 1800},
             "estimate": {"kind": "factor", "factor": {"kind": "uniform", "low": 1, "high": 3}}},
            {"kind": "synthetic", "name": "interactive", "target": "grid", "priority": 10,
             "arrival": {"mean_interarrival": 600},
             "size": {"kind": "uniform", "low": 4, "high": 24, "integer": True},
             "runtime": {"kind": "exponential", "mean": 300}}]},
        "run": {"seed": 4, "replications": replications, "stop": {"completions": completions}},
    }


CREATE = """
import json
from django.contrib.auth import get_user_model
from gridweb.runs.services import create_run
user, _ = get_user_model().objects.get_or_create(username="live-watcher")
run = create_run(user, json.loads({spec!r}), visibility="public", dispatch_now=False)
print(json.dumps(run.pk))
"""
DISPATCH = "import json\nfrom gridweb.runs.execution import dispatch\ndispatch({run})\nprint(json.dumps(True))\n"
# The multiset of rows a page holds, as one digest: times as floor(t * 1024) (exact in both languages).
DIGEST_JS = """() => {
  const g = window.gridwebGantt.gantt;
  const keys = [];
  for (const c of [g.streamed, g.openRows]) {
    const d = c.data;
    for (let i = 0; i < c.n; i++) keys.push([Math.floor(d.t0[i] * 1024), Math.floor(d.t1[i] * 1024), d.job_id[i],
      d.stream[i], d.cluster[i], d.first[i], d.procs[i], d.kind[i]].join(","));
  }
  keys.sort();
  let h = 2166136261;
  for (const k of keys) for (let i = 0; i < k.length; i++) { h ^= k.charCodeAt(i); h = Math.imul(h, 16777619); }
  return {n: keys.length, digest: h >>> 0};
}"""
RESULT_DIGEST = """
import json, math
import numpy as np
from gridweb.runs import result_store
from gridweb.runs.models import RunResult
table = result_store.gantt_table(RunResult.objects.get(run_id={run}))
r = table.rows(np.arange(table.n))
keys = sorted(",".join(str(v) for v in (math.floor(a * 1024), math.floor(b * 1024), int(j), int(s), int(c), int(f),
              int(p), int(k))) for a, b, j, s, c, f, p, k in zip(r["t0"], r["t1"], r["job_id"], r["stream"],
              r["cluster"], r["first_processor"], r["processors"], r["kind"]))
h = 2166136261
for key in keys:
    for ch in key:
        h = ((h ^ ord(ch)) * 16777619) & 0xFFFFFFFF
print(json.dumps({{"n": len(keys), "digest": h}}))
"""
# Kept across the reload a run's end causes (static/runs/run.js): the digest of what the page held.
KEEP_DIGEST_AT_END = """(name) => document.addEventListener("gridweb:status", () => sessionStorage.setItem(name,
  JSON.stringify({...(""" + DIGEST_JS + """)(), lastSeq: gridwebGantt.lastSeq(),
                  connections: gridwebGantt.connections()})))"""


def create(site, spec_doc: dict) -> int:
    return site.python_json(CREATE.format(spec=json.dumps(spec_doc)))


def state(site, run: int) -> dict:
    """The run's row, read straight from the site's database (fast enough to poll)."""
    with psycopg.connect(site.env["DATABASE_URL"]) as conn:
        row = conn.execute("SELECT status, extract(epoch FROM started_at), segments_count, last_seq, error"
                           " FROM runs_run WHERE id = %s", [run]).fetchone()
    return {"status": row[0], "started": None if row[1] is None else float(row[1]), "segments": row[2],
            "last_seq": row[3], "error": row[4]}


def first_chunk_stored(site, run: int) -> float:
    """Seconds from the run's start to its first stored segments chunk (where a slow start went)."""
    with psycopg.connect(site.env["DATABASE_URL"]) as conn:
        return float(conn.execute("SELECT extract(epoch FROM min(c.created) - r.started_at) FROM runs_runchunk c"
                                  " JOIN runs_run r ON r.id = c.run_id WHERE c.run_id = %s AND c.kind = 'segments'"
                                  " GROUP BY r.started_at", [run]).fetchone()[0])


def open_page(browser, site, run: int):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.js_errors = []
    page.on("pageerror", lambda error: page.js_errors.append(str(error)))
    page.goto(f"{site.base_url}/runs/{run}/")
    page.wait_for_function("() => window.gridwebGantt && window.gridwebGantt.ready", timeout=30_000)
    return context, page


def test_a_long_run_draws_while_it_simulates_in_simulated_time_order(full_stack_site, browser):
    site = full_stack_site
    run = create(site, spec(1_200_000, name="ten seconds of replication 0"))  # (700,000 took 8.9 s on 2026-11-29)
    context, page = open_page(browser, site, run)
    try:
        site.python_json(DISPATCH.format(run=run))
        # the page notes the moment (at the animation frame) it first holds rectangles
        page.wait_for_function("() => gridwebGantt.segmentsCount() > 0"
                               " && (window.firstDrawnAt = window.firstDrawnAt || Date.now())",
                               timeout=60_000, polling="raf")
        drawn_at = page.evaluate("window.firstDrawnAt") / 1000
        first = state(site, run)
        assert first["status"] == "running" and first["started"] is not None
        # The first rectangles came within 1.5 s of the worker starting the run (its started_at,
        # written when the worker claims the run; page and database share this machine's clock).
        assert drawn_at - first["started"] < 1.5, (drawn_at - first["started"], first_chunk_stored(site, run))

        samples = []
        while state(site, run)["status"] == "running":
            try:
                sample = page.evaluate("({count: gridwebGantt.segmentsCount(), right: gridwebGantt.rightmost(),"
                                       " drawn: gridwebGantt.drawnCount() + gridwebGantt.gantt.rasterSource.get_length(),"
                                       " status: document.getElementById('run').dataset.status})")
            except PlaywrightError:  # the run ended meanwhile: the page reloads itself
                break
            if sample["status"] != "running":
                break
            samples.append(sample)
            time.sleep(0.5)
        assert len(samples) >= 5, f"only {len(samples)} samples while the run was running"
        counts = [s["count"] for s in samples]
        rights = [s["right"] for s in samples]
        assert counts == sorted(counts) and counts[-1] > counts[0], counts
        assert rights == sorted(rights) and rights[-1] > rights[0], rights  # simulated time moves right
        assert len(set(counts)) >= 4  # rectangles kept coming, not all at the end
        assert all(s["drawn"] > 0 for s in samples)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "gantt-live-long.png"), full_page=True)
        final = state(site, run)
        assert final["status"] == "done", final["error"]
        engine = site.python_json(f"import json\nfrom gridweb.runs.models import Run\n"
                                  f"print(json.dumps(Run.objects.get(pk={run}).summary['engine_seconds']))\n")
        assert engine >= 10, f"replication 0 took {engine:.1f} s: lengthen the run"
        assert page.js_errors == []
    finally:
        context.close()


def test_late_and_reconnecting_pages_end_with_the_segments_of_one_that_watched_from_the_start(
        full_stack_site, browser):
    site = full_stack_site
    # Fewer rows than a page holds (100,000), so every page keeps every streamed row; replications
    # after replication 0 keep the run going after its Gantt is out (about 0.3 s each since the
    # event path is compiled: 30 of them).
    run = create(site, spec(20_000, replications=30, name="joined late"))
    early_context, early = open_page(browser, site, run)
    contexts = [early_context]
    try:
        early.evaluate(KEEP_DIGEST_AT_END, "early")
        site.python_json(DISPATCH.format(run=run))
        early.wait_for_function("() => gridwebGantt.segmentsCount() > 0", timeout=60_000)
        # a page that joins while replication 0 is still streaming
        late_context, late = open_page(browser, site, run)
        contexts.append(late_context)
        assert state(site, run)["status"] == "running", "the late page did not join mid-run; lengthen the run"
        late.evaluate(KEEP_DIGEST_AT_END, "late")
        # the early page loses its connection once; it asks again with ?after=
        early.evaluate("gridwebGantt.dropConnection()")
        for page in (early, late):
            page.wait_for_selector("#metrics-table", timeout=240_000)  # reloaded: the run is done
            page.wait_for_function("() => window.gridwebGantt && window.gridwebGantt.ready", timeout=60_000)
        final = state(site, run)
        assert final["status"] == "done", final["error"]
        seen_early = json.loads(early.evaluate("sessionStorage.getItem('early')"))
        seen_late = json.loads(late.evaluate("sessionStorage.getItem('late')"))
        stored = site.python_json(RESULT_DIGEST.format(run=run))
        assert seen_early["connections"] >= 2
        assert seen_early["lastSeq"] == seen_late["lastSeq"] == final["last_seq"]
        assert stored["n"] == final["segments"] < 100_000
        assert (seen_early["n"], seen_early["digest"]) == (seen_late["n"], seen_late["digest"]) \
            == (stored["n"], stored["digest"])
        assert early.js_errors == [] and late.js_errors == []
    finally:
        for context in contexts:
            context.close()


def test_a_run_cancelled_midway_keeps_the_gantt_of_what_it_simulated(full_stack_site, browser):
    site = full_stack_site
    run = create(site, spec(1_000_000, name="cancelled midway"))  # about 25 s: cancelled long before its end
    site.python_json("import json\nfrom django.contrib.auth import get_user_model\nfrom gridweb.runs.models import Run\n"
                     f"Run.objects.filter(pk={run}).update(owner=get_user_model().objects.get(username='live-watcher'))\n"
                     "print(json.dumps(True))\n")
    context, page = open_page(browser, site, run)
    try:
        site.python_json(DISPATCH.format(run=run))
        page.wait_for_function("() => gridwebGantt.segmentsCount() > 2000", timeout=60_000)
        site.python_json("import json\nfrom django.contrib.auth import get_user_model\n"
                         "from gridweb.runs.models import Run\nfrom gridweb.runs.services import cancel_run\n"
                         f"cancel_run(Run.objects.get(pk={run}), get_user_model().objects.get(username='live-watcher'))\n"
                         "print(json.dumps(True))\n")
        try:
            page.wait_for_function("() => document.getElementById('run').dataset.status === 'cancelled'"
                                   " && window.gridwebGantt && window.gridwebGantt.ready", timeout=60_000)
        except PlaywrightError as exc:  # say which side did not get there: the run, or the page
            seen = page.evaluate("() => ({status: document.getElementById('run').dataset.status,"
                                 " connections: document.getElementById('gantt')?.dataset.connections})")
            raise AssertionError(f"the page did not show the cancelled run: run {state(site, run)}, page {seen}") from exc
        final = state(site, run)
        assert final["status"] == "cancelled" and final["segments"] > 2000
        page.wait_for_function("() => gridwebGantt.segmentsCount() > 0 && gridwebGantt.tile() !== null")
        shown = page.evaluate("gridwebGantt.segmentsCount()")
        assert shown >= final["segments"]  # the streamed rows and the ones in progress when it stopped
        assert "the Gantt shows what it simulated before" in page.locator(".run-page").inner_text()
        page.screenshot(path=str(SCREENSHOTS / "gantt-cancelled.png"), full_page=True)
    finally:
        context.close()
