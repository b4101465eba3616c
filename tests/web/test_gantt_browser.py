"""The run page's Gantt chart in a real browser (headless Chromium driven by Playwright).

Embedded mode against Django's ``live_server``: finished runs (executed synchronously with the
engine) load their segments in one request. The counts the page reports are checked against the
run's stored result arrays, read here with numpy. Then the full stack: a page that watches a run
live over the websocket, and loses its connection half-way, ends with exactly the run's segments.
Screenshots go to artifacts/screenshots/.
"""

from __future__ import annotations

import io
import json
import time
from collections import Counter

import numpy as np
import pytest
from django.test import Client

from gridweb.runs.demo import TRACES, demo_user, store_demo_trace, trace_spec
from gridweb.runs.execution import execute_run
from gridweb.runs.models import Run, Status
from gridweb.runs.services import create_run
from gridweb.sharing import Visibility
from tests.conftest import ROOT

pytestmark = pytest.mark.slow

SCREENSHOTS = ROOT / "artifacts" / "screenshots"
KIND_RUN_COLOUR = "#3b75af"  # static/runs/gantt.js, KIND_COLOURS.run


def small_spec(name: str = "browser run") -> dict:
    return {
        "name": name,
        "platform": {"clusters": [{"name": "left", "processors": 16, "scheduler": {"name": "easy"}},
                                  {"name": "right", "processors": 12, "scheduler": {"name": "easy"}}]},
        "workload": {"streams": [{
            "kind": "synthetic", "name": "users", "target": "grid", "arrival": {"target_load": 0.85},
            "size": {"kind": "uniform", "low": 1, "high": 12, "integer": True},
            "runtime": {"kind": "exponential", "mean": 300}, "count": 400}]},
        "run": {"seed": 11, "replications": 1},
    }


def finished_run(owner, spec: dict, visibility=Visibility.PUBLIC) -> Run:
    run = create_run(owner, spec, name=spec["name"], visibility=visibility, dispatch_now=False)
    assert execute_run(run.pk) == Status.DONE
    run.refresh_from_db()
    return run


def stored_segments(run: Run) -> dict[str, np.ndarray]:
    """The run's segments from its stored result, plus each segment's job id and stream."""
    with np.load(io.BytesIO(bytes(run.result.npz))) as npz:
        segments = {k.removeprefix("segments_"): npz[k] for k in npz.files if k.startswith("segments_")}
        rows = segments["job"].astype(int)
        segments["job_id"] = npz["jobs_job_id"][rows]
        segments["stream"] = npz["jobs_stream"][rows]
    return segments


def open_gantt(page, url: str, timeout: float = 30_000) -> float:
    """Open a run page and wait until its Gantt holds its segments; seconds it took."""
    started = time.monotonic()
    response = page.goto(url)
    assert response is not None and response.status == 200, url
    page.wait_for_function("() => window.gridwebGantt && window.gridwebGantt.ready", timeout=timeout)
    return time.monotonic() - started


def screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / name), full_page=True)


def log_in(page, base_url: str, user) -> None:
    """Copy a Django test client's session cookie into the browser (the login page is not needed)."""
    client = Client()
    client.force_login(user)
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": base_url}])


@pytest.fixture
def alice(transactional_db, django_user_model):
    return django_user_model.objects.create_user("alice", password="pw-alice-123")


def test_finished_run_draws_exactly_its_segments(live_server, page, alice):
    run = finished_run(alice, small_spec(), visibility=Visibility.PRIVATE)
    expected = len(stored_segments(run)["t0"])
    assert expected == run.segments_count > 100
    url = f"{live_server.url}/runs/{run.pk}/"

    # Private: a visitor gets the 404 page, the owner (session cookie copied in) the Gantt.
    assert page.goto(url).status == 404
    log_in(page, live_server.url, alice)
    open_gantt(page, url)

    gantt = page.locator("#gantt")
    assert gantt.get_attribute("data-segments-count") == str(expected)
    assert gantt.get_attribute("data-mode") == "segments"
    assert page.evaluate("gridwebGantt.segmentsCount()") == expected
    assert page.evaluate("gridwebGantt.drawnCount()") == expected  # rectangles in Bokeh's glyph
    assert page.evaluate("gridwebGantt.source.get_length()") == expected
    screenshot(page, "gantt-small-run.png")


def segment_in_page(page, key: str) -> int:
    return page.evaluate(f"""() => {{
        const g = window.gridwebGantt;
        for (let i = 0; i < g.segmentsCount(); i++) if (g.keyOf(i) === {json.dumps(key)}) return i;
        return -1;
    }}""")


def test_hover_shows_the_segment_and_click_highlights_its_job(live_server, page, alice):
    run = finished_run(alice, small_spec())
    segments = stored_segments(run)
    # The job with the most segments: its processors were not contiguous, so its blocks are apart.
    per_job = Counter(zip(segments["stream"].tolist(), segments["job_id"].tolist()))
    (stream, job_id), count = per_job.most_common(1)[0]
    assert count >= 2, "this run has no job split over several processor blocks"
    key = f"{stream}:{job_id}"

    open_gantt(page, f"{live_server.url}/runs/{run.pk}/")
    i = segment_in_page(page, key)
    assert i >= 0
    seg = page.evaluate(f"gridwebGantt.segment({i})")
    pad = max((seg["t1"] - seg["t0"]) * 2, 1.0)
    page.evaluate(f"gridwebGantt.zoomTo({seg['t0'] - pad}, {seg['t1'] + pad})")
    page.wait_for_timeout(300)

    point = page.evaluate(f"gridwebGantt.screenPoint({i})")
    page.mouse.move(point["x"], point["y"])
    tooltip = page.locator(".bk-tooltip-content").first
    tooltip.wait_for(state="visible", timeout=5000)
    text = tooltip.inner_text()
    assert f"job:\t{job_id}" in text or f"job: {job_id}" in text.replace("\t", " ")
    cluster_names = [c["name"] for c in run.summary["clusters"]]
    assert cluster_names[int(seg["cluster"])] in text
    screenshot(page, "gantt-hover.png")

    page.mouse.click(point["x"], point["y"])
    page.wait_for_function(f"() => document.getElementById('gantt').dataset.highlighted === '{count}'")
    assert page.evaluate("gridwebGantt.highlightedKey()") == key
    selected = page.evaluate("gridwebGantt.source.selected.indices.map(i => gridwebGantt.keyOf(i))")
    assert len(selected) == count and set(selected) == {key}
    screenshot(page, "gantt-highlight.png")


def test_wheel_zoom_changes_the_time_range_and_reset_restores_it(live_server, page, alice):
    run = finished_run(alice, small_spec())
    open_gantt(page, f"{live_server.url}/runs/{run.pk}/")
    start, end = page.evaluate("gridwebGantt.xRange()")
    box = page.locator("#gantt").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.45, box["y"] + box["height"] * 0.5)
    page.mouse.wheel(0, -600)
    page.wait_for_function(f"() => gridwebGantt.xRange()[1] - gridwebGantt.xRange()[0] < {0.8 * (end - start)}")
    zoomed = page.evaluate("gridwebGantt.xRange()")
    assert start < zoomed[0] < zoomed[1] < end
    visible = int(page.locator("#gantt").get_attribute("data-visible"))
    assert 0 < visible < run.segments_count

    page.locator(".bk-tool-icon-reset").first.click()
    page.wait_for_function(f"() => Math.abs(gridwebGantt.xRange()[0] - ({start})) < 1e-6")
    assert page.evaluate("gridwebGantt.xRange()") == pytest.approx([start, end])


def test_colour_by_kind_toggle(live_server, page, alice):
    run = finished_run(alice, small_spec())
    open_gantt(page, f"{live_server.url}/runs/{run.pk}/")
    by_job = page.evaluate("new Set(gridwebGantt.source.data.colour).size")
    assert by_job > 10  # one colour per job

    page.select_option("#gantt-colour", "kind")
    page.wait_for_function("() => document.getElementById('gantt').dataset.colour === 'kind'")
    colours = page.evaluate("[...new Set(gridwebGantt.source.data.colour)]")
    assert colours == [KIND_RUN_COLOUR]  # every segment of this run is of kind "run"
    # the legend lists the kinds the run has, not all seven (docs/gallery.md)
    assert page.locator("#gantt-legend [data-kind]").all_inner_texts() == ["run"]
    screenshot(page, "gantt-by-kind.png")

    page.select_option("#gantt-colour", "job")
    page.wait_for_function(f"() => new Set(gridwebGantt.source.data.colour).size === {by_job}")


def test_replay_scrubber_reveals_segments_up_to_its_time(live_server, page, alice):
    run = finished_run(alice, small_spec())
    t0 = stored_segments(run)["t0"]
    open_gantt(page, f"{live_server.url}/runs/{run.pk}/")
    gantt = page.locator("#gantt")
    assert gantt.get_attribute("data-revealed") == str(len(t0))

    page.locator("#gantt-scrubber").fill("400")  # 40% of the way
    page.wait_for_function("() => document.getElementById('gantt').dataset.replayTime !== ''")
    shown_until = float(gantt.get_attribute("data-replay-time"))
    assert t0.min() < shown_until < t0.max()
    assert int(gantt.get_attribute("data-revealed")) == int((t0 <= shown_until).sum())
    assert page.locator("#gantt-time").inner_text().endswith(" s")
    screenshot(page, "gantt-replay.png")

    page.select_option("#gantt-speed", "3")
    page.click("#gantt-play")
    page.wait_for_function(f"() => Number(document.getElementById('gantt').dataset.revealed) > "
                           f"{int((t0 <= shown_until).sum())}")
    page.wait_for_function("() => document.getElementById('gantt').dataset.replayTime === ''", timeout=15_000)
    assert gantt.get_attribute("data-revealed") == str(len(t0))  # played to the end
    assert page.locator("#gantt-play").inner_text() == "Play"


def test_das2_fs1_trace_run_opens_with_its_full_gantt_and_zooms(live_server, page, alice):
    user = demo_user()
    das2 = TRACES[0]
    assert das2.file.startswith("DAS2-fs1")
    trace = store_demo_trace(user, das2)
    spec = trace_spec(das2, trace.stored_name)
    run = finished_run(user, spec)
    expected = len(stored_segments(run)["t0"])
    assert expected == run.segments_count > 40_000

    seconds = open_gantt(page, f"{live_server.url}/runs/{run.pk}/", timeout=60_000)
    gantt = page.locator("#gantt")
    assert int(gantt.get_attribute("data-segments-count")) == expected
    # zoomed out, more than 20,000 rectangles are in view: the utilisation view stands in
    assert gantt.get_attribute("data-mode") == "utilisation"
    screenshot(page, "gantt-das2-full.png")

    # Wheel in over the middle segment (in start order) until single jobs are drawn.
    point = page.evaluate(f"gridwebGantt.screenPoint({expected // 2})")
    page.mouse.move(point["x"], point["y"])
    for _ in range(40):
        page.mouse.wheel(0, -200)
        page.wait_for_timeout(100)
        if gantt.get_attribute("data-mode") == "segments":
            break
    page.wait_for_function("() => document.getElementById('gantt').dataset.mode === 'segments'", timeout=20_000)
    start, end = page.evaluate("gridwebGantt.xRange()")
    assert end - start < 0.5 * run.summary["metrics"]["makespan"]["mean"]
    assert 0 < int(gantt.get_attribute("data-visible")) <= 20_000
    assert page.evaluate("gridwebGantt.drawnCount()") == expected
    screenshot(page, "gantt-das2-zoomed.png")
    print(f"DAS2-fs1 Gantt ready {seconds:.2f} s after navigation (live_server, embedded mode)")


# --- Full stack: watching a run live over the websocket ---------------------------------------------

LIVE_SPEC = {
    "name": "watched live",
    "platform": {"clusters": [{"name": "main", "processors": 64, "scheduler": {"name": "easy"}}]},
    "workload": {"streams": [{
        "kind": "synthetic", "name": "users", "target": "main", "arrival": {"target_load": 0.8},
        "size": {"kind": "uniform", "low": 1, "high": 32, "integer": True},
        "runtime": {"kind": "exponential", "mean": 600}}]},
    # more than 5,000 segments (several chunks), and replications after the Gantt is out
    "run": {"seed": 2, "replications": 40, "stop": {"completions": 15000}},
}


def test_live_page_streams_reconnects_and_ends_with_exactly_the_runs_segments(full_stack_site, browser):
    created = full_stack_site.python_json(
        "import json\n"
        "from django.contrib.auth import get_user_model\n"
        "from gridweb.runs.services import create_run\n"
        "user, _ = get_user_model().objects.get_or_create(username='live-watcher')\n"
        f"run = create_run(user, {LIVE_SPEC!r}, visibility='public', dispatch_now=False)\n"
        "print(json.dumps({'id': run.pk}))\n")
    run_id = created["id"]
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"{full_stack_site.base_url}/runs/{run_id}/")
        page.wait_for_function("() => window.gridwebGantt && window.gridwebGantt.ready", timeout=30_000)
        assert page.locator("#run-status").inner_text() == "queued"
        full_stack_site.python_json(
            "import json\nfrom gridweb.runs.execution import dispatch\n"
            f"dispatch({run_id})\nprint(json.dumps({{'ok': True}}))\n")
        # Lose the connection once the first segments are in; the page asks again with ?after=.
        page.wait_for_function("() => gridwebGantt.segmentsCount() > 0", timeout=120_000)
        # When the run ends the page reloads itself (static/runs/run.js): what the live page held
        # then is kept in the tab's sessionStorage (this listener runs after run.js's).
        page.evaluate("""() => document.addEventListener("gridweb:status", () => sessionStorage.setItem("live",
            JSON.stringify({connections: gridwebGantt.connections(), lastSeq: gridwebGantt.lastSeq(),
                            segments: gridwebGantt.segmentsCount(),
                            notice: document.getElementById("run-finished-notice").textContent.trim()})))""")
        page.evaluate("gridwebGantt.dropConnection()")
        # the reloaded page: the done run's metrics, and its Gantt from segments.json
        page.wait_for_selector("#metrics-table", timeout=180_000)
        page.wait_for_function("() => window.gridwebGantt && window.gridwebGantt.ready", timeout=60_000)
        live = json.loads(page.evaluate("sessionStorage.getItem('live')"))
        final = full_stack_site.python_json(
            "import json\nfrom gridweb.runs.models import Run\n"
            f"run = Run.objects.get(pk={run_id})\n"
            "print(json.dumps({'status': run.status, 'segments': run.segments_count, 'last_seq': run.last_seq,"
            " 'error': run.error}))\n")
        assert final["status"] == "done", final["error"]
        assert live["connections"] >= 2
        assert live["lastSeq"] == final["last_seq"]
        assert live["segments"] == final["segments"] > 5000
        assert live["notice"] == "Run finished — loading results"
        assert page.evaluate("gridwebGantt.segmentsCount()") == final["segments"]
        assert page.evaluate("gridwebGantt.connections()") == 0  # a done run's page does not stream
        assert page.locator("#run-status").inner_text() == "done"
        screenshot(page, "gantt-live-full-stack.png")
    finally:
        context.close()
