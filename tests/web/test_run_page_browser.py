"""Small things a researcher meets on the run page while watching runs, in a real browser
(headless Chromium, Playwright, Django's ``live_server``): the jobs table when a filter matches
nothing, the Gantt legend while segments stream in, and a run that ends while its page is open.

A live run's websocket is served by Playwright here (``page.route_web_socket``): the embedded
live server speaks no websocket, and a mock lets the test say exactly when the run ends.
"""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from gridweb.runs import frames
from gridweb.runs.execution import execute_run
from gridweb.runs.models import Run, Status
from gridweb.runs.services import cancel_run, create_run
from gridweb.sharing import Visibility
from simengine.gantt import KIND_NAMES
from simengine.streaming import live_rows
from simengine.workload import STATUS_NAMES
from tests.web.conftest import client_for
from tests.web.test_gantt_browser import finished_run, small_spec

pytestmark = pytest.mark.slow


@pytest.fixture
def user(transactional_db, django_user_model):
    return django_user_model.objects.create_user("watcher", password="pw-watcher-123")


def jobs_ready(page) -> None:
    page.wait_for_function("() => document.getElementById('jobs-table').dataset.ready === 'true'")


# --- Jobs table ------------------------------------------------------------------------------------


def test_a_status_filter_that_matches_no_job_says_so(live_server, builder, user):
    """The range read "rows 0–0 of 0" when a filter matched nothing."""
    run = finished_run(user, small_spec())
    client = client_for(user)
    totals = {s: client.get(reverse("runs:jobs", args=[run.pk]), {"status": s}).json()["total"] for s in STATUS_NAMES}
    empty = next(s for s in STATUS_NAMES if totals[s] == 0)  # e.g. nothing is rejected in this run
    everything = client.get(reverse("runs:jobs", args=[run.pk])).json()["total"]
    assert everything == sum(totals.values()) > 100

    builder.goto(f"{live_server.url}/runs/{run.pk}/")
    jobs_ready(builder)
    assert builder.locator("#jobs-range").inner_text() == f"rows 1–100 of {everything}"

    builder.select_option("#jobs-status", empty)
    builder.wait_for_function("() => document.getElementById('jobs-table').dataset.total === '0'"
                              " && document.getElementById('jobs-table').dataset.ready === 'true'")
    assert builder.locator("#jobs-range").inner_text() == "no jobs match"
    assert builder.locator("#jobs-table tbody tr").count() == 0
    assert builder.locator("#jobs-prev").is_disabled() and builder.locator("#jobs-next").is_disabled()

    builder.select_option("#jobs-status", "")  # back to every job
    builder.wait_for_function(f"() => document.getElementById('jobs-table').dataset.total === '{everything}'"
                              " && document.getElementById('jobs-table').dataset.ready === 'true'")
    assert builder.locator("#jobs-range").inner_text() == f"rows 1–100 of {everything}"
    assert builder.js_errors == []


# --- The Gantt legend --------------------------------------------------------------------------------


def legend_kinds(page) -> list[str]:
    return page.locator("#gantt-legend [data-kind]").evaluate_all("items => items.map((i) => i.dataset.kind)")


def segments_chunk(seq: int, kinds: list[str]) -> bytes:
    """A ``segments`` chunk as the site streams it (a binary frame, gridweb/runs/frames.py): one
    segment per kind, closed in the window [100 seq, 100 seq + 100)."""
    n = len(kinds)
    rows = {"cluster": [0] * n, "first_processor": list(range(n)), "processors": [1] * n,
            "t0": [100.0 * seq] * n, "t1": [100.0 * seq + 50] * n, "component": [0] * n,
            "kind": [KIND_NAMES.index(k) for k in kinds], "job_id": list(range(1, n + 1)), "stream": [0] * n}
    chunk = {"kind": "segments", "seq": seq, "replication": 0, "window": [100.0 * seq, 100.0 * seq + 100],
             "final": False, "fraction": 0.1, "sim_time": 100.0 * seq + 100,
             "segments": live_rows(rows, n), "open": live_rows({k: [] for k in rows}, 0)}
    return frames.segments_chunk_frame(chunk)[1]


def test_the_kind_legend_grows_as_kinds_arrive_on_the_stream(live_server, builder, user):
    run = create_run(user, small_spec(), name="live", visibility=Visibility.PRIVATE, dispatch_now=False)
    sockets = serve_stream(builder)
    builder.goto(f"{live_server.url}/runs/{run.pk}/")
    builder.wait_for_function("() => window.gridwebGantt && window.gridwebGantt.ready")  # the socket is open
    builder.select_option("#gantt-colour", "kind")
    builder.wait_for_function("() => document.getElementById('gantt').dataset.colour === 'kind'")
    assert legend_kinds(builder) == []  # no segment yet

    sockets[0].send(segments_chunk(0, ["run", "run"]))
    builder.wait_for_function("() => gridwebGantt.segmentsCount() === 2")
    assert legend_kinds(builder) == ["run"]
    # a kill and a claim arrive: they join the legend, in the engine's order of kinds
    sockets[0].send(segments_chunk(1, ["killed", "run", "claimed"]))
    builder.wait_for_function("() => gridwebGantt.segmentsCount() === 5")
    assert legend_kinds(builder) == ["run", "claimed", "killed"]
    # back to colour by job and again by kind: the same three
    builder.select_option("#gantt-colour", "job")
    builder.wait_for_function("() => document.getElementById('gantt').dataset.colour === 'job'")
    assert legend_kinds(builder) == []
    builder.select_option("#gantt-colour", "kind")
    builder.wait_for_function("() => document.getElementById('gantt').dataset.colour === 'kind'")
    assert legend_kinds(builder) == ["run", "claimed", "killed"]
    assert builder.js_errors == []


# --- A run that ends while its page is open --------------------------------------------------------


def serve_stream(page) -> list:
    """Serve the run page's websocket from the test (nothing is sent until the test says so):
    the connections the page opened, in order."""
    sockets: list = []
    page.route_web_socket(re.compile(r"/ws/runs/\d+/"), lambda ws: sockets.append(ws))
    return sockets


def count_page_loads(page) -> list[str]:
    """The page's document requests (first load and every reload), as they happen."""
    loads: list[str] = []
    page.on("request", lambda request: loads.append(request.url) if request.is_navigation_request() else None)
    return loads


# Kept across the reload: what the notice said when the run ended (this listener runs after
# static/runs/run.js's, which shows the notice and asks for the reload). The page is also marked,
# so that a wait can tell the reloaded page from it.
RECORD_NOTICE = """() => {
  window.testOldPage = true;
  document.addEventListener("gridweb:status", () => sessionStorage.setItem(
    "test-notice", document.getElementById("run-finished-notice").textContent.trim()));
}"""
FRESH_PAGE_READY = "() => !window.testOldPage && window.gridwebGantt && window.gridwebGantt.ready"


def watch_queued_run(live_server, page, user, name: str):
    """A queued run's page, open with its stream faked: (run, sockets, page loads, url)."""
    run = create_run(user, small_spec(), name=name, visibility=Visibility.PRIVATE, dispatch_now=False)
    sockets = serve_stream(page)
    loads = count_page_loads(page)
    url = f"{live_server.url}/runs/{run.pk}/"
    page.goto(url)
    page.wait_for_function("() => window.gridwebGantt && window.gridwebGantt.ready")
    return run, sockets, loads, url


def test_a_run_that_finishes_while_watched_shows_its_results_without_a_manual_reload(live_server, builder, user):
    run, sockets, loads, url = watch_queued_run(live_server, builder, user, "watched")
    assert len(sockets) == 1 and len(loads) == 1
    assert builder.locator("#metrics-table").count() == 0 and builder.locator("#jobs-pending").is_visible()
    builder.evaluate(RECORD_NOTICE)

    assert execute_run(run.pk) == Status.DONE
    run.refresh_from_db()
    sockets[0].send(json.dumps({"kind": "status", "status": "done", "error": "", "last_seq": run.last_seq}))

    # The page reloads itself: the fresh page has the metrics, the jobs table and all segments.
    builder.wait_for_selector("#metrics-table")
    builder.wait_for_function("() => window.gridwebGantt && window.gridwebGantt.ready"
                              " && document.getElementById('jobs-table').dataset.ready === 'true'")
    assert builder.evaluate("sessionStorage.getItem('test-notice')") == "Run finished — loading results"
    assert builder.locator("#run-status").inner_text() == "done"
    assert builder.evaluate("gridwebGantt.segmentsCount()") == run.segments_count > 100
    total = client_for(user).get(reverse("runs:jobs", args=[run.pk])).json()["total"]
    assert builder.locator("#jobs-table").get_attribute("data-total") == str(total) and total > 100
    assert builder.locator("#run-finished-notice").is_hidden()
    # Once: the fresh page opened on a done run, so it did not stream and cannot reload again.
    assert loads == [url, url] and len(sockets) == 1
    assert builder.evaluate(f"sessionStorage.getItem('gridweb:reloaded-run-{run.pk}')") is None
    assert builder.js_errors == []


def test_a_reloaded_page_that_still_saw_the_run_unfinished_does_not_reload_again(live_server, builder, user):
    """The loop guard: the run is said to be done but the page reloads onto a queued run (as if
    the database lagged); the second end only offers a manual reload."""
    run, sockets, loads, url = watch_queued_run(live_server, builder, user, "lagging")
    builder.evaluate(RECORD_NOTICE)
    sockets[0].send(json.dumps({"kind": "status", "status": "done", "error": "", "last_seq": -1}))
    builder.wait_for_function(FRESH_PAGE_READY)
    assert builder.locator("#run-status").inner_text() == "queued"  # the reloaded page
    assert loads == [url, url] and len(sockets) == 2

    sockets[1].send(json.dumps({"kind": "status", "status": "done", "error": "", "last_seq": -1}))
    notice = builder.locator("#run-finished-notice")
    notice.wait_for(state="visible")
    assert notice.inner_text() == "The run has ended: reload for its results."
    assert notice.locator("a").get_attribute("href") == f"/runs/{run.pk}/"
    assert builder.locator("#run-status").inner_text() == "done"
    assert loads == [url, url] and len(sockets) == 2
    assert builder.js_errors == []


@pytest.mark.parametrize("ending", ["cancelled", "failed"])
def test_a_run_cancelled_or_failed_while_watched_shows_why_after_the_reload(live_server, builder, user, ending):
    run, sockets, loads, url = watch_queued_run(live_server, builder, user, "ending")
    builder.evaluate(RECORD_NOTICE)
    if ending == "cancelled":
        cancel_run(run, user)  # a queued run is cancelled at once
        error = ""
    else:
        error = "scenario: the worker ran out of memory"
        Run.objects.filter(pk=run.pk).update(status=Status.FAILED, error=error, finished_at=timezone.now())
    sockets[0].send(json.dumps({"kind": "status", "status": ending, "error": error, "last_seq": -1}))

    builder.wait_for_function(FRESH_PAGE_READY)
    assert builder.locator("#run-status").inner_text() == ending
    expected_notice = {"cancelled": "Run cancelled — reloading", "failed": "Run failed — loading its error"}
    assert builder.evaluate("sessionStorage.getItem('test-notice')") == expected_notice[ending]
    assert loads == [url, url] and len(sockets) == 1
    assert builder.locator("#jobs-pending").inner_text() == f"No jobs table: the run has no result ({ending})."
    if ending == "cancelled":
        assert "This run was cancelled" in builder.locator(".run-page").inner_text()
    else:
        assert builder.locator("#run-error").inner_text() == error
    assert builder.js_errors == []


def test_the_eta_says_estimating_until_the_worker_has_one_and_cancel_asks_first(live_server, builder, user):
    """Issue 38: "63 min" at 0 % of a 4 s run (the time before the first progress counted as the
    run's pace), and Cancel on a stray click. The page shows the worker's estimate from the
    progress chunks, "estimating…" while there is none; cancelling asks, and a "no" keeps the run."""
    run, sockets, loads, url = watch_queued_run(live_server, builder, user, "eta")
    Run.objects.filter(pk=run.pk).update(status=Status.RUNNING, started_at=timezone.now())
    send = sockets[0].send
    send(json.dumps({"seq": 0, "kind": "progress", "fraction": 0.01, "sim_time": 10.0, "eta_seconds": None}))
    builder.wait_for_function("() => document.getElementById('run-progress-text').textContent === '1%'")
    assert builder.locator("#run-eta").inner_text() == "estimating…"
    send(json.dumps({"seq": 1, "kind": "progress", "fraction": 0.5, "sim_time": 500.0, "eta_seconds": 312.0}))
    builder.wait_for_function("() => document.getElementById('run-eta').textContent === '5 min'")
    send(json.dumps({"seq": 2, "kind": "progress", "fraction": 0.9, "sim_time": 900.0, "eta_seconds": 7.4}))
    builder.wait_for_function("() => document.getElementById('run-eta').textContent === '7 s'")

    asked: list[str] = []
    builder.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    builder.click("#cancel-run")
    builder.wait_for_timeout(300)
    assert asked and "Cancel this run?" in asked[0]
    assert Run.objects.get(pk=run.pk).cancel_requested is False and loads == [url]
    builder.once("dialog", lambda dialog: dialog.accept())
    with builder.expect_navigation():
        builder.click("#cancel-run")
    assert Run.objects.get(pk=run.pk).cancel_requested is True
    assert builder.js_errors == []
