"""Reservations and preemption end to end in a real browser (headless Chromium via Playwright,
embedded-mode live server): built in the scenario builder, saved and run, then drawn on the
run page's Gantt chart with its reservation window and suspended gaps.

Hooks: docs/builder.md (inputs by ``data-path``, errors by ``data-error-for``) and
docs/gallery.md (``window.gridwebGantt``). Screenshots go to artifacts/screenshots/.
"""

from __future__ import annotations

import pytest

from gridweb.runs import execution
from gridweb.runs.models import Run, Status
from gridweb.scenarios.models import Scenario
from simengine.gantt import KIND_NAMES

from tests.web.test_builder_browser import (SCREENSHOTS, error_beside, expect_text, field, open_builder,
                                            wait_validated)

pytestmark = pytest.mark.slow

RESERVATION_COLOUR = "#8e6cbf"  # static/runs/gantt.js, KIND_COLOURS.reservation


@pytest.fixture
def user(transactional_db, django_user_model):
    return django_user_model.objects.create_user("reservations-user", password="pw-reservations-123")


@pytest.fixture(autouse=True)
def idle_worker():
    """The embedded worker outlives tests (one per process): start and end each test with it idle."""
    assert execution.embedded_worker().wait_idle(120)
    yield
    assert execution.embedded_worker().wait_idle(120), "the embedded worker did not finish its queue"


def test_build_a_scenario_with_preemption_and_a_reservation_run_it_and_see_the_window(live_server, builder, user):
    page = builder
    open_builder(page, live_server.url + "/scenarios/new/")
    page.click("#btn-add-cluster")
    field(page, "platform.clusters.0.scheduler.name").select_option("easy")

    # The cluster's preemption field is a policy widget of its own registry (it used to be drawn
    # as a second "Local scheduler" with the local schedulers).
    preemption = page.locator('[data-group="platform.clusters.0.preemption"]')
    assert preemption.locator("> legend").inner_text() == "Preemption"
    options = field(page, "platform.clusters.0.preemption.name").locator("option")
    assert sorted(options.all_inner_texts()) == ["kill", "none", "requeue", "suspend"]
    assert field(page, "platform.clusters.0.preemption.name").input_value() == "none"  # the engine's default
    field(page, "platform.clusters.0.preemption.name").select_option("suspend")
    field(page, "platform.clusters.0.preemption.params.overhead").fill("60")

    # Two streams on the cluster: batch jobs, and fewer urgent ones of priority 10.
    for i, (load, count) in enumerate([("0.8", "150"), ("0.2", "30")]):
        page.click("#btn-add-stream")
        field(page, f"workload.streams.{i}.arrival.target_load").fill(load)
        field(page, f"workload.streams.{i}.count").fill(count)
    field(page, "workload.streams.1.priority").fill("10")

    # A reservation: its cluster is a select of the clusters; a mistake shows beside its field.
    assert page.locator("#section-reservations").is_visible()
    page.click("#btn-add-reservation")
    assert field(page, "reservations.0.cluster").input_value() == "c1"
    assert field(page, "reservations.0.cluster").locator("option").all_inner_texts()[1:] == ["c1"]
    field(page, "reservations.0.processors").fill("16")
    field(page, "reservations.0.start").fill("3600")
    seen = wait_validated(page, None)
    field(page, "reservations.0.end").fill("1000")
    expect_text(error_beside(page, "reservations.0.end"), "must be after start (3600)")
    assert field(page, "reservations.0.end").get_attribute("aria-invalid") == "true"
    seen = wait_validated(page, seen)
    field(page, "reservations.0.end").fill("7200")
    page.wait_for_function("() => document.querySelector('[data-error-for=\"reservations.0.end\"]').hidden")

    # Optional parts: a relaxed frame (it may start from 1800 s) and the job using the window.
    page.click("#btn-add-reservations-0-relaxed")
    assert field(page, "reservations.0.relaxed.earliest_start").input_value() == "3600"  # starts as the window
    field(page, "reservations.0.relaxed.earliest_start").fill("1800")
    page.click("#btn-add-reservations-0-job")
    assert field(page, "reservations.0.job.runtime").input_value() == "3600"  # fills the window
    page.click("#btn-remove-reservations-0-job")
    assert field(page, "reservations.0.job.runtime").count() == 0
    page.click("#btn-add-reservations-0-job")

    # Renaming the cluster renames the reservation's cluster and the streams' targets.
    field(page, "platform.clusters.0.name").fill("main")
    field(page, "platform.clusters.0.name").press("Tab")
    assert field(page, "reservations.0.cluster").input_value() == "main"
    assert field(page, "workload.streams.1.target").input_value() == "main"

    field(page, "run.seed").fill("1")
    field(page, "run.stop.horizon").fill("40000")
    field(page, "name").fill("Browser reservations")
    # The preview counts the reserved processor time: 16 x 3600 s of 32 x 40000 s.
    page.wait_for_function(
        "() => { const r = document.querySelector('#preview-load rect[data-reserved-cluster=\"main\"]');"
        " return r && Math.abs(Number(r.dataset.reserved) - 0.045) < 1e-9; }")
    seen = wait_validated(page, seen)
    page.wait_for_function("() => !document.getElementById('builder').dataset.validating")
    assert page.locator("#builder").get_attribute("data-error-count") == "0"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#section-reservations").scroll_into_view_if_needed()
    page.screenshot(path=str(SCREENSHOTS / "builder-reservations.png"), full_page=True)

    page.click("#btn-run")  # saves, then starts the run and opens its page
    page.wait_for_url("**/runs/*/")
    scenario = Scenario.objects.get()
    assert scenario.spec["reservations"] == [{
        "name": "r1", "cluster": "main", "processors": 16, "start": 3600, "end": 7200,
        "relaxed": {"earliest_start": 1800, "latest_finish": 10800}, "job": {"runtime": 3600}}]
    assert scenario.spec["platform"]["clusters"][0]["preemption"] == {"name": "suspend", "params": {"overhead": 60}}
    assert [s.get("priority", 0) for s in scenario.spec["workload"]["streams"]] == [0, 10]

    assert execution.embedded_worker().wait_idle(120)
    run = Run.objects.get()
    assert run.status == Status.DONE, run.error
    page.reload()  # the finished run, drawn from its tiles
    page.wait_for_function("() => window.gridwebGantt && window.gridwebGantt.ready", timeout=30_000)
    page.wait_for_function("() => document.getElementById('gantt').dataset.mode === 'segments'")
    data = page.evaluate("(() => { const d = gridwebGantt.source.data;"
                         " return {kind: [...d.kind], job_id: [...d.job_id], t0: [...d.t0], t1: [...d.t1],"
                         " stream: [...d.stream]}; })()")
    kinds = [KIND_NAMES[k] for k in data["kind"]]
    reservation_stream = 2  # after the two workload streams
    reservation = [i for i, k in enumerate(kinds) if k == "reservation"]
    assert reservation, "no reservation segment on the Gantt"
    for i in reservation:  # reservation 0 (job id 1); relaxed: it may have slid to 1800 s at the earliest
        assert data["job_id"][i] == 1 and data["stream"][i] == reservation_stream
        assert 1800 <= data["t0"][i] <= 3600 and data["t1"][i] - data["t0"][i] == 3600
    suspended = [i for i, k in enumerate(kinds) if k == "suspended"]
    assert suspended, "no suspended segment: the urgent jobs preempted nobody"
    assert {data["stream"][i] for i in suspended} == {0}  # only the priority-0 jobs (jobs1) are preempted

    # A run with reservations and suspended gaps opens coloured by kind, and the legend names them
    # (one item per kind the run has, in the engine's order: no "killed", nobody was).
    page.wait_for_function("() => document.getElementById('gantt').dataset.colour === 'kind'")
    assert page.evaluate("gridwebGantt.colourField()") == "kind"
    legend = page.locator("#gantt-legend [data-kind]").evaluate_all("items => items.map((i) => i.dataset.kind)")
    assert legend == [kind for kind in KIND_NAMES if kind in set(kinds)]
    assert {"reservation", "suspended"} <= set(legend) and "killed" not in legend
    # The window is outlined over what runs inside it, so it shows at any zoom.
    outlined = page.evaluate("[...gridwebGantt.gantt.outlineSource.data.kind]")
    assert outlined.count(KIND_NAMES.index("reservation")) == len(reservation)

    # Hovering the window says what it is.
    i = reservation[0]
    page.evaluate(f"gridwebGantt.zoomTo({data['t0'][i] - 600}, {data['t1'][i] + 600})")
    page.wait_for_timeout(500)
    i = page.evaluate("(() => { const d = gridwebGantt.source.data; return d.kind.indexOf(2); })()")
    point = page.evaluate(f"gridwebGantt.screenPoint({i})")
    page.mouse.move(point["x"], point["y"])
    tooltip = page.locator(".bk-tooltip-content").first
    tooltip.wait_for(state="visible", timeout=5000)
    text = " ".join(page.locator(".bk-tooltip-content").all_inner_texts())
    text = " ".join(text.split())
    assert "job: r1" in text and "kind: reservation" in text and "stream: reservations" in text
    page.screenshot(path=str(SCREENSHOTS / "gantt-reservations.png"), full_page=True)

    # The busy strip counts each processor once: the window (its job runs inside it) and the
    # suspended gaps (their preemptors run there) are left out, so it never passes 100 %.
    busy = page.evaluate("[...gridwebGantt.gantt.stripSource.data.busy_1].filter((v) => v === v)")
    assert max(busy) <= 100 + 1e-3 and max(busy) > 50  # float32 columns
    assert page.js_errors == []


def test_a_lublin_stream_is_drawn_from_the_schema_and_previewed(live_server, builder):
    page = builder
    open_builder(page, live_server.url + "/scenarios/new/")
    page.click("#btn-add-cluster")
    page.click("#btn-add-stream")
    field(page, "workload.streams.0.kind").select_option("lublin")
    # the kind's own fields, generated from the schema's LublinStream
    for name in ("count", "processors", "job_types", "start_hour", "time_scale", "target_load"):
        assert field(page, f"workload.streams.0.{name}").count() == 1, name
    assert field(page, "workload.streams.0.priority").count() == 0  # lublin streams have no priority
    # the new synthetic stream's count (a blank scenario has no stop) carries over to the new kind
    assert field(page, "workload.streams.0.count").input_value() == "10000"
    seen = wait_validated(page, None)
    field(page, "workload.streams.0.count").fill("")
    seen = wait_validated(page, seen)
    expect_text(error_beside(page, "workload.streams.0.count"), "required")
    field(page, "workload.streams.0.count").fill("300")
    field(page, "workload.streams.0.target_load").fill("0.5")
    wait_validated(page, seen)
    page.wait_for_function("() => document.querySelector('#preview-stream-0')?.dataset.jobs === '300'")
    load = float(page.locator('#preview-load rect[data-cluster="c1"]').get_attribute("data-load"))
    assert load == pytest.approx(0.5)  # target_load rescales the sample's submit times to exactly this
    assert page.locator("#preview-stream-0 svg[data-histogram='sizes'] rect.bar").count() > 0
    assert page.js_errors == []


def test_renaming_a_cluster_to_a_taken_name_and_back_leaves_every_reference_where_it_was(live_server, builder):
    """Renaming c1 to c2 (another cluster's name) moved c1's reservation and stream to 'c2'; the
    rename back then took c2's references to c1 too. A duplicate name now moves nothing."""
    page = builder
    open_builder(page, live_server.url + "/scenarios/new/")
    page.click("#btn-add-cluster")
    page.click("#btn-add-cluster")
    for cluster in (0, 1):
        field(page, f"platform.clusters.{cluster}.scheduler.name").select_option("easy")
    for stream, target in ((0, "c1"), (1, "c2")):
        page.click("#btn-add-stream")
        field(page, f"workload.streams.{stream}.target").select_option(target)
    page.click("#btn-add-reservation")
    field(page, "reservations.0.cluster").select_option("c1")

    def references():
        return (field(page, "reservations.0.cluster").input_value(),
                [field(page, f"workload.streams.{i}.target").input_value() for i in (0, 1)])

    name = field(page, "platform.clusters.0.name")
    name.fill("c2")
    name.press("Tab")  # a duplicate: nothing follows it
    assert references() == ("c1", ["c1", "c2"])
    name.fill("c1")
    name.press("Tab")  # back: the other cluster keeps its stream
    assert references() == ("c1", ["c1", "c2"])
    name.fill("left")
    name.press("Tab")  # a new unique name: its references follow it
    assert references() == ("left", ["left", "c2"])
    assert page.js_errors == []
