"""The run page's Gantt chart in a real browser (headless Chromium driven by Playwright).

Embedded mode against Django's ``live_server``: finished runs (executed synchronously with the
engine) are drawn from level-of-detail tiles. What the page draws is checked against the run's
stored result, read here with numpy: the exact segments of a small run, the occupancy raster of a
big one and the single jobs once zoomed in, hover and click-to-highlight at both levels, colours,
replay, and the SVG / PNG export. The live view over the full stack is in test_gantt_live_browser.py.
Screenshots go to artifacts/screenshots/.
"""

from __future__ import annotations

import json
import struct
import time
import xml.etree.ElementTree as ET
from collections import Counter

import numpy as np
import pytest
from django.test import Client

from gridweb.runs import result_store
from gridweb.runs.demo import TRACES, demo_user, store_demo_trace, trace_spec
from gridweb.runs.execution import execute_run
from gridweb.runs.models import Run, RunResult, Status
from gridweb.runs.services import create_run
from gridweb.sharing import Visibility
from tests.conftest import ROOT

pytestmark = pytest.mark.slow

SCREENSHOTS = ROOT / "artifacts" / "screenshots"


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
    """The run's segments from its stored result (the live columns: job named by job id and stream)."""
    table = result_store.gantt_table(RunResult.objects.get(run=run))
    return table.rows(np.arange(table.n))


def open_gantt(page, url: str, timeout: float = 30_000) -> float:
    """Open a run page and wait until its Gantt has drawn; seconds it took."""
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


def wait_mode(page, mode: str, timeout: float = 20_000) -> None:
    page.wait_for_function(f"() => document.getElementById('gantt').dataset.mode === '{mode}'", timeout=timeout)


@pytest.fixture
def alice(transactional_db, django_user_model):
    return django_user_model.objects.create_user("alice", password="pw-alice-123")


def test_finished_run_draws_exactly_its_segments(live_server, page, alice):
    run = finished_run(alice, small_spec(), visibility=Visibility.PRIVATE)
    expected = stored_segments(run)
    n = len(expected["t0"])
    assert n == run.segments_count > 100
    url = f"{live_server.url}/runs/{run.pk}/"

    # Private: a visitor gets the 404 page, the owner (session cookie copied in) the Gantt.
    assert page.goto(url).status == 404
    log_in(page, live_server.url, alice)
    open_gantt(page, url)

    gantt = page.locator("#gantt")
    assert gantt.get_attribute("data-segments-count") == str(n)
    assert gantt.get_attribute("data-mode") == "segments"
    assert page.evaluate("gridwebGantt.segmentsCount()") == n
    assert page.evaluate("gridwebGantt.drawnCount()") == n  # rectangles in Bokeh's glyph
    held = page.evaluate("(() => { const d = gridwebGantt.source.data; return {t0: [...d.t0], t1: [...d.t1],"
                         " job_id: [...d.job_id], cluster: [...d.cluster], first: [...d.first]}; })()")
    assert sorted(zip(held["t0"], held["t1"], held["job_id"], held["cluster"], held["first"])) == sorted(zip(
        expected["t0"].tolist(), expected["t1"].tolist(), expected["job_id"].tolist(), expected["cluster"].tolist(),
        expected["first_processor"].tolist()))
    # the strip under the chart: busy processors and queued jobs, total and per cluster
    strip = page.evaluate("(() => { const d = gridwebGantt.gantt.stripSource.data;"
                          " return {x: d.x.length, busy: Math.max(...d.busy_0), queue: Math.max(...d.queue_0)}; })()")
    assert strip["x"] > 100 and 50 < strip["busy"] <= 100 + 1e-6 and strip["queue"] >= 1
    screenshot(page, "gantt-small-run.png")


def segment_in_page(page, key: str) -> int:
    return page.evaluate(f"""() => {{
        const g = window.gridwebGantt;
        for (let i = 0; i < g.source.get_length(); i++) if (g.keyOf(i) === {json.dumps(key)}) return i;
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
    page.wait_for_timeout(400)
    i = segment_in_page(page, key)  # the zoomed tile may hold the rows in another order

    point = page.evaluate(f"gridwebGantt.screenPoint({i})")
    page.mouse.move(point["x"], point["y"])
    tooltip = page.locator(".bk-tooltip-content").first
    tooltip.wait_for(state="visible", timeout=5000)
    text = " ".join(tooltip.inner_text().split())
    assert f"job: {job_id}" in text and "stream: users" in text and "kind: run" in text
    cluster_names = [c["name"] for c in run.summary["clusters"]]
    assert cluster_names[int(seg["cluster"])] in text
    screenshot(page, "gantt-hover.png")

    page.mouse.click(point["x"], point["y"])
    page.wait_for_function(f"() => document.getElementById('gantt').dataset.highlighted === '{count}'")
    assert page.evaluate("gridwebGantt.highlightedKey()") == key
    outlined = page.evaluate("gridwebGantt.gantt.highlightSource.get_length()")
    assert outlined == count
    screenshot(page, "gantt-highlight.png")


def test_wheel_zoom_changes_the_time_range_and_reset_restores_it(live_server, page, alice):
    run = finished_run(alice, small_spec())
    open_gantt(page, f"{live_server.url}/runs/{run.pk}/")
    start, end = page.evaluate("gridwebGantt.xRange()")
    box = page.locator("#gantt").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.45, box["y"] + box["height"] * 0.25)
    page.mouse.wheel(0, -600)
    page.wait_for_function(f"() => gridwebGantt.xRange()[1] - gridwebGantt.xRange()[0] < {0.8 * (end - start)}")
    zoomed = page.evaluate("gridwebGantt.xRange()")
    assert start < zoomed[0] < zoomed[1] < end
    page.wait_for_function(f"() => Number(document.getElementById('gantt').dataset.visible) < {run.segments_count}")
    assert 0 < int(page.locator("#gantt").get_attribute("data-visible")) < run.segments_count

    page.locator(".bk-tool-icon-reset").first.click()
    page.wait_for_function(f"() => Math.abs(gridwebGantt.xRange()[0] - ({start})) < 1e-6")
    assert page.evaluate("gridwebGantt.xRange()") == pytest.approx([start, end])


def test_colour_by_kind_toggle(live_server, page, alice):
    run = finished_run(alice, small_spec())
    open_gantt(page, f"{live_server.url}/runs/{run.pk}/")
    # a run of plain jobs opens coloured by job: one colour per job
    assert page.locator("#gantt").get_attribute("data-colour") == "job"
    assert page.evaluate("gridwebGantt.colourField()") == "hue"
    assert page.evaluate("new Set(gridwebGantt.source.data.hue).size") > 10

    page.select_option("#gantt-colour", "kind")
    page.wait_for_function("() => document.getElementById('gantt').dataset.colour === 'kind'")
    assert page.evaluate("gridwebGantt.colourField()") == "kind"
    assert page.evaluate("[...new Set(gridwebGantt.source.data.kind)]") == [0]  # every segment is a run
    # the legend lists the kinds the run has, not all seven (docs/gallery.md)
    assert page.locator("#gantt-legend [data-kind]").all_inner_texts() == ["run"]
    screenshot(page, "gantt-by-kind.png")

    page.select_option("#gantt-colour", "job")
    page.wait_for_function("() => gridwebGantt.colourField() === 'hue'")


def test_replay_scrubber_reveals_segments_up_to_its_time(live_server, page, alice):
    run = finished_run(alice, small_spec())
    t0 = stored_segments(run)["t0"]
    open_gantt(page, f"{live_server.url}/runs/{run.pk}/")
    gantt = page.locator("#gantt")
    page.evaluate("gridwebGantt.setTime(null)")
    assert gantt.get_attribute("data-revealed") == str(len(t0))

    page.locator("#gantt-scrubber").fill("400")  # 40% of the way
    page.wait_for_function("() => document.getElementById('gantt').dataset.replayTime !== ''")
    shown_until = float(gantt.get_attribute("data-replay-time"))
    assert t0.min() <= shown_until < t0.max()
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


@pytest.fixture
def das2_run(transactional_db) -> Run:
    user = demo_user()
    das2 = TRACES[0]
    assert das2.file.startswith("DAS2-fs1")
    trace = store_demo_trace(user, das2)
    return finished_run(user, trace_spec(das2, trace.stored_name))


def test_das2_fs1_opens_as_an_occupancy_raster_and_zooms_to_single_jobs(live_server, page, das2_run):
    run = das2_run
    segments = stored_segments(run)
    n = len(segments["t0"])
    assert n == run.segments_count > 40_000

    seconds = open_gantt(page, f"{live_server.url}/runs/{run.pk}/", timeout=60_000)
    gantt = page.locator("#gantt")
    # zoomed out, more than 12,000 rectangles are in view: the server sends the raster instead
    wait_mode(page, "raster")
    assert int(gantt.get_attribute("data-segments-count")) == n
    assert page.evaluate("gridwebGantt.heldCount()") == 0  # no rows held, one image per cluster
    tile = page.evaluate("(() => { const t = gridwebGantt.tile(); return {mode: t.mode, bins: t.bins,"
                         " bands: t.bands, window: t.window}; })()")
    assert tile["mode"] == "raster" and tile["bins"] >= 600 and tile["bands"] == [64]  # a band per processor
    image = page.evaluate("gridwebGantt.gantt.rasterSource.data.image[0].length")
    assert image == tile["bins"] * tile["bands"][0]
    screenshot(page, "gantt-das2-full.png")

    # Hovering the raster says what the pixel holds.
    middle = float(np.median(segments["t0"]))
    point = page.evaluate(f"gridwebGantt.screenPointAt(0, 2, {middle})")
    page.mouse.move(point["x"], point["y"])
    tip = page.locator(".gantt-raster-tip")
    tip.wait_for(state="visible", timeout=5000)
    assert tip.inner_text().startswith("fs1 · ")

    # Wheel in over the middle of the run until single jobs are drawn.
    for _ in range(60):
        page.mouse.wheel(0, -300)
        page.wait_for_timeout(80)
        if gantt.get_attribute("data-mode") == "segments":
            break
    wait_mode(page, "segments")
    start, end = page.evaluate("gridwebGantt.xRange()")
    assert end - start < 0.9 * run.summary["metrics"]["makespan"]["mean"]
    visible = int(gantt.get_attribute("data-visible"))
    assert 0 < visible <= 12_000
    held = page.evaluate("gridwebGantt.heldCount()")
    inside = ((segments["t0"] < end) & (segments["t1"] > start)).sum()
    assert inside <= held <= 30_000  # the window padded either side, never the whole run
    assert page.evaluate("gridwebGantt.drawnCount()") == held
    screenshot(page, "gantt-das2-zoomed.png")
    print(f"DAS2-fs1 Gantt ready {seconds:.2f} s after navigation (live_server, embedded mode)")


def test_clicking_a_raster_highlights_the_job_under_the_pointer(live_server, page, das2_run):
    run = das2_run
    segments = stored_segments(run)
    open_gantt(page, f"{live_server.url}/runs/{run.pk}/", timeout=60_000)
    wait_mode(page, "raster")
    # the longest segment on processor 0: easy to hit at this zoom
    on_first = np.flatnonzero(segments["first_processor"] == 0)
    i = on_first[np.argmax(segments["t1"][on_first] - segments["t0"][on_first])]
    key = f"{segments['stream'][i]}:{segments['job_id'][i]}"
    t = float((segments["t0"][i] + segments["t1"][i]) / 2)
    point = page.evaluate(f"gridwebGantt.screenPointAt(0, 0, {t})")
    page.mouse.click(point["x"], point["y"])
    page.wait_for_function(f"() => gridwebGantt.highlightedKey() === {json.dumps(key)}")
    mine = (segments["job_id"] == segments["job_id"][i]) & (segments["stream"] == segments["stream"][i])
    assert page.locator("#gantt").get_attribute("data-highlighted") == str(int(mine.sum()))
    assert page.evaluate("gridwebGantt.gantt.highlightSource.get_length()") == int(mine.sum())


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_charts_export_as_svg_and_png_of_their_size(live_server, page, alice):
    run = finished_run(alice, small_spec())
    open_gantt(page, f"{live_server.url}/runs/{run.pk}/")
    page.wait_for_function("() => document.getElementById('plots').dataset.ready === 'true'")
    scale = page.evaluate("window.devicePixelRatio")
    gantt_box = page.evaluate("(() => { const r = gridwebGantt.gantt.rootView.el.getBoundingClientRect();"
                              " return [r.width, r.height]; })()")
    for where, name, size in (("#gantt", "gantt", gantt_box), ("#plot-utilisation", "utilisation", None)):
        bar = page.locator(f".figure-export[data-for={name}]")
        if size is None:
            size = page.evaluate(f"(() => {{ const v = GridwebFigureExport.viewIn(document.querySelector('{where}'));"
                                 " const r = v.el.getBoundingClientRect(); return [r.width, r.height]; })()")
        with page.expect_download() as png_download:
            bar.locator("[data-export=png]").click()
        png = png_download.value
        assert png.suggested_filename.endswith(".png")
        width, height = png_size(open(png.path(), "rb").read())
        assert abs(width - size[0] * scale) <= 2 * scale and abs(height - size[1] * scale) <= 2 * scale
        with page.expect_download() as svg_download:
            bar.locator("[data-export=svg]").click()
        svg = svg_download.value
        assert svg.suggested_filename.endswith(".svg")
        root = ET.parse(svg.path()).getroot()
        assert root.tag.endswith("svg")
        assert abs(float(root.get("width")) - size[0]) <= 2 and abs(float(root.get("height")) - size[1]) <= 2
        assert len(list(root.iter())) > 50  # drawn, not an empty frame


def download_sizes(page, bar) -> tuple[tuple[int, int], ET.Element]:
    """(PNG width and height, SVG root) of the two downloads of an export bar."""
    with page.expect_download() as png_download:
        bar.locator("[data-export=png]").click()
    png = png_size(open(png_download.value.path(), "rb").read())
    with page.expect_download() as svg_download:
        bar.locator("[data-export=svg]").click()
    return png, ET.parse(svg_download.value.path()).getroot()


def test_compare_stacks_the_gantts_on_one_time_axis_and_exports_them(live_server, page, alice, das2_run):
    small = finished_run(alice, small_spec("compare small"))
    response = page.goto(f"{live_server.url}/compare/?runs={small.pk},{das2_run.pk}")
    assert response.status == 200
    page.wait_for_function("() => window.gridwebCompare && gridwebCompare.ready", timeout=60_000)
    charts = page.evaluate("gridwebCompare.charts.length")
    assert charts == 2
    # opened on the union of both runs
    start, end = page.evaluate("gridwebCompare.xRange()")
    das2 = stored_segments(das2_run)
    assert start <= das2["t0"].min() and end >= das2["t1"].max()
    modes = page.evaluate("gridwebCompare.charts.map((c) => c.mode())")
    assert modes == ["segments", "raster"]  # each at the level of detail its run needs
    # zooming one chart moves both
    page.evaluate("gridwebCompare.charts[0].zoomTo(1000, 5000)")
    page.wait_for_timeout(300)
    assert page.evaluate("gridwebCompare.charts.map((c) => c.xRange())") == [[1000, 5000], [1000, 5000]]
    page.wait_for_function("() => gridwebCompare.charts[1].mode() === 'segments'")  # the trace, zoomed in
    scale = page.evaluate("window.devicePixelRatio")
    size = page.evaluate("(() => { const r = GridwebFigureExport.viewIn(document.getElementById('compare-gantts'))"
                         ".el.getBoundingClientRect(); return [r.width, r.height]; })()")
    (width, height), svg = download_sizes(page, page.locator(".figure-export[data-for=gantt-compare]"))
    assert abs(width - size[0] * scale) <= 2 * scale and abs(height - size[1] * scale) <= 2 * scale
    assert abs(float(svg.get("width")) - size[0]) <= 2 and len(list(svg.iter())) > 50
    screenshot(page, "compare-gantts.png")


def test_another_replication_is_drawn_when_chosen(live_server, page, alice):
    spec = small_spec("three replications")
    spec["run"]["replications"] = 3
    run = finished_run(alice, spec)
    open_gantt(page, f"{live_server.url}/runs/{run.pk}/")
    first = page.evaluate("(() => { const d = gridwebGantt.source.data; return [...d.t0]; })()")
    page.select_option("#gantt-replication", "2")
    page.wait_for_function("() => gridwebGantt.replication() === 2 && gridwebGantt.tile() !== null"
                           " && gridwebGantt.tile().count > 0 && gridwebGantt.heldCount() > 0")
    second = page.evaluate("(() => { const d = gridwebGantt.source.data; return [...d.t0]; })()")
    assert sorted(second) != sorted(first)
    import simengine

    expected = simengine.replication_segments(simengine.load_scenario(run.spec), 2)
    assert sorted(second) == sorted(expected["t0"].tolist())


def test_a_run_without_segments_yet_shows_an_axis_of_an_hour_not_microseconds(live_server, page, alice):
    """A queued run's empty Gantt read '000us' along its time axis (a range of 1 ms)."""
    run = create_run(alice, small_spec("waiting"), name="waiting", visibility=Visibility.PUBLIC, dispatch_now=False)
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    page.wait_for_function("() => window.gridwebGantt && window.gridwebGantt.figure")
    assert page.evaluate("gridwebGantt.xRange()") == [0, 3600]
