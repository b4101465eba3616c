"""The scenario builder in a real browser (headless Chromium via Playwright, embedded-mode live server).

The tests drive the builder through its documented hooks (docs/builder.md): inputs by
``data-path``, errors by ``data-error-for``, buttons by id. The user is logged in by copying a
session cookie from Django's test client, so the tests do not depend on the login page.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gridweb.scenarios.models import Scenario, TraceFile
from tests.conftest import ROOT
from tests.web.conftest import BROWSER_TIMEOUT_MS as TIMEOUT_MS

pytestmark = pytest.mark.slow

SCREENSHOTS = ROOT / "artifacts" / "screenshots"


@pytest.fixture
def user(transactional_db, django_user_model):
    return django_user_model.objects.create_user("builder-user", password="pw-builder-123")


def open_builder(page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector('#builder[data-ready="1"]')


def field(page, path: str):
    return page.locator(f'[data-path="{path}"]')


def error_beside(page, path: str):
    """The error element of the field at ``path``: inside the same field box as its input."""
    return page.locator(f'[data-field="{path}"] > [data-error-for="{path}"]')


def wait_validated(page, previous: str | None) -> str:
    """Wait until a validation answer newer than ``previous`` arrived; return its number."""
    page.wait_for_function(
        "prev => { const b = document.getElementById('builder');"
        " return !b.dataset.validating && b.dataset.validated && b.dataset.validated !== prev; }",
        arg=previous)
    return page.locator("#builder").get_attribute("data-validated")


def histogram_total(page, selector: str) -> tuple[int, int]:
    """(sum of the bars' counts, the histogram's stated total) of an SVG histogram."""
    return page.locator(selector).evaluate(
        "svg => [Array.from(svg.querySelectorAll('rect.bar')).reduce((s, r) => s + Number(r.dataset.count), 0),"
        " Number(svg.dataset.total)]")


def test_build_a_scenario_from_blank_preview_fix_an_error_save_and_reload(live_server, builder, user):
    page = builder
    open_builder(page, live_server.url + "/scenarios/new/")
    # A blank scenario lacks clusters and streams; the builder says so beside those sections.
    expect_text(page.locator('[data-error-for="platform.clusters"]'), "at least 1")
    assert page.locator("#link-export").is_hidden() and page.locator("#btn-delete").is_hidden()  # nothing saved yet

    page.click("#btn-add-cluster")
    page.click("#btn-add-cluster")
    assert page.locator("#section-platform [data-cluster]").count() == 2
    field(page, "platform.clusters.0.processors").fill("16")
    field(page, "platform.clusters.1.name").fill("big")
    field(page, "platform.clusters.1.name").press("Tab")  # commits the rename
    field(page, "platform.clusters.1.processors").fill("64")
    field(page, "platform.clusters.1.scheduler.name").select_option("easy")
    field(page, "platform.clusters.1.scheduler.params.overrun_step").fill("30")

    page.click("#btn-add-stream")
    stream = "workload.streams.0"
    field(page, f"{stream}.target").select_option("c1")
    field(page, f"{stream}.arrival.target_load").fill("0.7")
    field(page, f"{stream}.size.kind").select_option("rsd")
    field(page, f"{stream}.size.high").fill("16")
    field(page, f"{stream}.runtime.kind").select_option("bounded_pareto")
    field(page, f"{stream}.runtime.alpha").fill("1.25")
    field(page, f"{stream}.runtime.high").fill("5000")
    field(page, f"{stream}.runtime.mean").fill("120")
    field(page, "name").fill("Browser-built scenario")

    # The live preview: histograms of the sampled jobs and the offered load per cluster.
    sizes = "#preview-stream-0 svg[data-histogram='sizes']"
    page.wait_for_function(
        "() => { const s = document.querySelector(\"#preview-stream-0 svg[data-histogram='runtimes']\");"
        " return s && s.querySelectorAll('rect.bar').length > 0 && s.dataset.scale === 'log'; }")
    bars, total = histogram_total(page, sizes)
    assert bars == total == int(page.locator("#preview-stream-0").get_attribute("data-jobs")) > 0
    assert page.locator(f"{sizes} rect.bar").count() == 16  # RSD(1, 16): one bar per size
    load = float(page.locator('#preview-load rect[data-cluster="c1"]').get_attribute("data-load"))
    assert load == pytest.approx(0.7, rel=0.2)
    assert float(page.locator('#preview-load rect[data-cluster="big"]').get_attribute("data-load")) == 0

    # A mistake: its message appears beside the field, and saving is refused.
    seen = wait_validated(page, None)
    field(page, "platform.clusters.1.processors").fill("0")
    message = error_beside(page, "platform.clusters.1.processors")
    expect_text(message, "greater than 0")
    assert field(page, "platform.clusters.1.processors").get_attribute("aria-invalid") == "true"
    page.click("#btn-save")
    expect_text(page.locator("#save-status"), "Not saved")
    assert Scenario.objects.count() == 0

    # Renaming a cluster renames the stream's target with it.
    field(page, "platform.clusters.0.name").fill("small")
    field(page, "platform.clusters.0.name").press("Tab")
    assert field(page, f"{stream}.target").input_value() == "small"

    # Fixed, the message goes away and the scenario saves.
    seen = wait_validated(page, seen)
    field(page, "platform.clusters.1.processors").fill("64")
    page.wait_for_function(
        "() => document.querySelector('[data-error-for=\"platform.clusters.1.processors\"]').hidden")
    wait_validated(page, seen)
    assert page.locator("#builder").get_attribute("data-error-count") == "0"
    page.click("#btn-save")
    expect_text(page.locator("#save-status"), "Saved")
    scenario = Scenario.objects.get()
    assert page.url == f"{live_server.url}/scenarios/{scenario.pk}/edit/"
    assert page.locator("#link-export").get_attribute("href") == f"/scenarios/{scenario.pk}/export.json"
    assert page.locator("#link-export").is_visible()
    assert scenario.owner == user and scenario.name == "Browser-built scenario"
    clusters = scenario.spec["platform"]["clusters"]
    assert [(c["name"], c["processors"]) for c in clusters] == [("small", 16), ("big", 64)]
    assert clusters[1]["scheduler"] == {"name": "easy", "params": {"overrun_step": 30}}
    saved_stream = scenario.spec["workload"]["streams"][0]
    assert saved_stream["target"] == "small" and saved_stream["arrival"] == {"target_load": 0.7}
    assert saved_stream["size"] == {"kind": "rsd", "low": 1, "high": 16, "q": 0.9}
    assert saved_stream["runtime"] == {"kind": "bounded_pareto", "alpha": 1.25, "high": 5000, "mean": 120}
    # a blank scenario has no stop rule (a trace would run whole); a new synthetic stream is finite
    assert saved_stream["count"] == 10000 and "stop" not in scenario.spec.get("run", {})

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "builder.png"), full_page=True)

    page.reload()
    page.wait_for_selector('#builder[data-ready="1"]')
    assert field(page, "name").input_value() == "Browser-built scenario"
    assert field(page, "platform.clusters.1.name").input_value() == "big"
    assert field(page, "platform.clusters.1.processors").input_value() == "64"
    assert field(page, "platform.clusters.1.scheduler.name").input_value() == "easy"
    assert field(page, f"{stream}.target").input_value() == "small"
    assert field(page, f"{stream}.size.kind").input_value() == "rsd"
    assert field(page, f"{stream}.runtime.alpha").input_value() == "1.25"
    assert page.js_errors == []


def test_a_corrupt_trace_upload_shows_its_line_and_a_good_one_becomes_the_stream(live_server, builder, tmp_path):
    page = builder
    open_builder(page, live_server.url + "/scenarios/new/")
    page.click("#btn-add-cluster")
    page.click("#btn-add-stream")
    field(page, "workload.streams.0.kind").select_option("trace")

    good = ["; MaxProcs: 32", "1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1",
            "2 10 0 50 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 -1 -1", "3 30 0 80 8 -1 -1 8 100 -1 1 1 1 -1 1 -1 -1 -1"]
    corrupt = tmp_path / "corrupt.swf"
    corrupt.write_text("\n".join(good[:2] + ["2 10 0 fifty 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 -1 -1"] + good[3:]) + "\n")
    page.set_input_files("#trace-file-0", str(corrupt))
    expect_text(page.locator('[data-error-for="workload.streams.0.upload"]'), "line 3")
    assert TraceFile.objects.count() == 0

    tiny = tmp_path / "tiny.swf"
    tiny.write_text("\n".join(good) + "\n")
    page.set_input_files("#trace-file-0", str(tiny))
    trace = wait_for(lambda: TraceFile.objects.first())
    page.wait_for_function(
        "name => document.querySelector('[data-path=\"workload.streams.0.path\"]').value === name",
        arg=trace.stored_name)
    assert page.locator('[data-error-for="workload.streams.0.upload"]').is_hidden()
    page.wait_for_selector("#preview-stream-0 svg[data-histogram='sizes'] rect.bar")
    bars, total = histogram_total(page, "#preview-stream-0 svg[data-histogram='sizes']")
    assert bars == total == 3
    # A stop that would cut the trace short is said before anything runs (it was silent).
    assert page.locator("#preview-stop-warning").count() == 0
    field(page, "run.stop.completions").fill("2")
    expect_text(page.locator("#preview-stop-warning"), "stops the run at 2 of the workload's 3 jobs")
    field(page, "run.stop.completions").fill("")
    page.wait_for_function("() => !document.getElementById('preview-stop-warning')")
    # A cluster too small for some of the trace's jobs: the run would reject them, and the preview says so.
    assert page.locator("#preview-too-large-0").count() == 0
    field(page, "platform.clusters.0.processors").fill("4")
    expect_text(page.locator("#preview-too-large-0"), "1 of its 3 jobs need more than c1's 4 processors (up to 8)")
    assert page.locator("#preview-too-large-0").get_attribute("data-jobs") == "1"
    assert page.js_errors == []


def test_a_batsim_workloads_walltime_kill_is_left_to_its_default_or_set_either_way(live_server, builder, user):
    # an optional yes/no field offers "default" beside yes and no (a checkbox would always send
    # false, and a Batsim workload would run past its walltimes)
    page = builder
    open_builder(page, live_server.url + "/scenarios/new/")
    page.click("#btn-add-cluster")
    field(page, "platform.clusters.0.processors").fill("4")
    page.click("#btn-add-stream")
    field(page, "workload.streams.0.kind").select_option("trace")
    page.set_input_files("#trace-file-0", str(ROOT / "tests" / "data" / "batsim-v5" / "test_case_study1.json"))
    trace = wait_for(lambda: TraceFile.objects.first())
    page.wait_for_function(
        "name => document.querySelector('[data-path=\"workload.streams.0.path\"]').value === name",
        arg=trace.stored_name)
    walltime = field(page, "workload.streams.0.enforce_walltime")
    assert walltime.input_value() == ""
    assert walltime.locator("option").all_inner_texts() == ["default", "yes", "no"]
    field(page, "name").fill("Batsim walltimes")
    page.wait_for_function("() => document.getElementById('builder').dataset.errorCount === '0'")
    page.click("#btn-save")
    expect_text(page.locator("#save-status"), "Saved")
    stream = Scenario.objects.get().spec["workload"]["streams"][0]
    assert "enforce_walltime" not in stream
    walltime.select_option("false")
    page.wait_for_function("() => document.getElementById('builder').dataset.errorCount === '0'")
    page.click("#btn-save")
    page.wait_for_function("() => document.getElementById('save-status').textContent.includes('Saved')")
    wait_for(lambda: Scenario.objects.get().spec["workload"]["streams"][0].get("enforce_walltime") is False)
    assert page.js_errors == []


def test_imported_document_with_an_unknown_field_lists_it_in_the_summary(live_server, builder, tmp_path):
    page = builder
    open_builder(page, live_server.url + "/scenarios/new/?preset=multicluster-4x32")
    assert page.locator("#section-platform [data-cluster]").count() == 4  # the preset's clusters, editable
    document = json.loads(page.locator("#builder-config").text_content())["document"]
    document["colour"] = "blue"  # not a scenario field: no widget shows it
    document["platform"]["clusters"][2]["processors"] = -4
    path = Path(tmp_path / "imported.json")
    path.write_text(json.dumps(document))

    page.set_input_files("#import-file", str(path))  # the form submits itself
    page.wait_for_url("**/scenarios/import/")
    page.wait_for_selector('#builder[data-ready="1"]')

    summary = page.locator("#error-summary")
    expect_text(summary, "colour")
    assert summary.is_visible()
    expect_text(error_beside(page, "platform.clusters.2.processors"), "greater than 0")
    assert Scenario.objects.count() == 0
    assert page.js_errors == []


# --- helpers -----------------------------------------------------------------------------------------


def expect_text(locator, text: str) -> None:
    from playwright.sync_api import expect

    expect(locator).to_contain_text(text, timeout=TIMEOUT_MS)


def wait_for(query, timeout: float = TIMEOUT_MS / 1000):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = query()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_a_newly_registered_policy_gets_a_generated_parameter_form(live_server, builder, monkeypatch):
    """No front-end work for a new policy: its name appears in the select, its parameters as fields."""
    from typing import Literal

    from pydantic import BaseModel, ConfigDict, Field

    from simengine.registry import LOCAL_SCHEDULERS, Entry

    class ShortestFirstParams(BaseModel):
        model_config = ConfigDict(extra="forbid")
        window: int = Field(10, ge=1, description="queued jobs looked at")
        order: Literal["shortest", "longest"] = "shortest"

    monkeypatch.setitem(LOCAL_SCHEDULERS._entries, "shortest_first",
                        Entry("shortest_first", ShortestFirstParams, object(), "Shortest job first (test policy)"))
    page = builder
    open_builder(page, live_server.url + "/scenarios/new/")
    page.click("#btn-add-cluster")
    scheduler = "platform.clusters.0.scheduler"
    field(page, f"{scheduler}.name").select_option("shortest_first")

    expect_text(page.locator(f'[data-group="{scheduler}"]'), "Shortest job first (test policy)")
    assert field(page, f"{scheduler}.params.window").get_attribute("placeholder") == "default 10"
    options = field(page, f"{scheduler}.params.order").locator("option").all_inner_texts()
    assert options == ["default (shortest)", "shortest", "longest"]

    field(page, f"{scheduler}.params.window").fill("0")
    expect_text(error_beside(page, f"{scheduler}.params.window"), "greater than or equal to 1")
    field(page, f"{scheduler}.params.order").select_option("longest")
    page.click("#btn-add-stream")
    field(page, "platform.clusters.0.scheduler.params.window").fill("5")
    page.wait_for_function(
        f"() => document.querySelector('[data-error-for=\"{scheduler}.params.window\"]').hidden")
    assert page.js_errors == []


def test_an_installed_policy_package_is_offered_by_the_builder_and_runs(live_server, builder, user):
    """examples/policies (installed by `make venv` through its entry point): its scheduler is in
    the select with a form from its parameter model, and a scenario saved with it simulates."""
    import simengine

    page = builder
    open_builder(page, live_server.url + "/scenarios/new/")
    page.click("#btn-add-cluster")
    scheduler = "platform.clusters.0.scheduler"
    field(page, f"{scheduler}.name").select_option("sjf-backfill")
    expect_text(page.locator(f'[data-group="{scheduler}"]'), "Shortest job first")
    options = field(page, f"{scheduler}.params.key").locator("option").all_inner_texts()
    assert options == ["default (estimate)", "estimate", "area"]
    field(page, f"{scheduler}.params.key").select_option("area")
    page.click("#btn-add-stream")
    field(page, "workload.streams.0.target").select_option("c1")
    field(page, "workload.streams.0.arrival.target_load").fill("0.8")
    field(page, "name").fill("SJF")
    page.wait_for_function("() => document.getElementById('builder').dataset.errorCount === '0'")
    page.click("#btn-save")
    expect_text(page.locator("#save-status"), "Saved")
    spec = Scenario.objects.get().spec
    assert spec["platform"]["clusters"][0]["scheduler"] == {"name": "sjf-backfill", "params": {"key": "area"}}
    spec["run"] = {**spec.get("run", {}), "stop": {"completions": 500}}
    assert simengine.run(spec).metrics["jobs_measured"].mean == 500
    assert page.js_errors == []


def test_an_installed_packages_placement_and_site_allocation_are_offered_with_their_forms(
        live_server, builder, user):
    """examples/policies' Best-Fit placement and round-robin site allocation (simengine.policy's
    PlacementPolicy and SiteAllocationPolicy) are in the grid's selects, with forms from their
    parameter models, and are saved into the scenario."""
    page = builder
    open_builder(page, f"{live_server.url}/scenarios/new/?preset=das2")
    seen = wait_validated(page, None)
    field(page, "grid.placement.name").select_option("best-fit")
    expect_text(page.locator('[data-group="grid.placement"]'), "fills most tightly")
    field(page, "grid.placement.params.headroom").fill("-2")
    expect_text(error_beside(page, "grid.placement.params.headroom"), "greater than or equal to 0")
    field(page, "grid.placement.params.headroom").fill("4")
    field(page, "grid.site_allocation.name").select_option("round-robin")
    options = field(page, "grid.site_allocation.params.start").locator("option").all_inner_texts()
    assert options == ["default (first)", "first", "random"]
    field(page, "grid.site_allocation.params.start").select_option("random")
    seen = wait_validated(page, seen)
    page.wait_for_function("() => document.getElementById('builder').dataset.errorCount === '0'")
    page.click("#btn-save")
    expect_text(page.locator("#save-status"), "Saved")
    grid = Scenario.objects.get().spec["grid"]
    assert grid["placement"] == {"name": "best-fit", "params": {"headroom": 4}}
    assert grid["site_allocation"] == {"name": "round-robin", "params": {"start": "random"}}
    assert page.js_errors == []


def test_an_optional_grid_policy_can_be_chosen_and_taken_out_again(live_server, builder, user):
    """The grid's placement has no default: once a policy was picked there was no way back to
    'not set' (the select offered only the policies)."""
    page = builder
    open_builder(page, f"{live_server.url}/scenarios/new/?preset=das2")
    placement = field(page, "grid.placement.name")
    assert placement.input_value() == ""
    assert placement.locator("option").first.inner_text() == "not set"
    assert field(page, "grid.site_allocation.name").locator('option[value=""]').count() == 0  # has a default

    seen = wait_validated(page, None)
    placement.select_option("worst-fit")
    seen = wait_validated(page, seen)
    page.click("#btn-save")
    expect_text(page.locator("#save-status"), "Saved")
    assert Scenario.objects.get().spec["grid"]["placement"] == {"name": "worst-fit", "params": {}}

    field(page, "grid.placement.name").select_option("")
    wait_validated(page, seen)
    assert page.locator("#builder").get_attribute("data-error-count") == "0"
    page.click("#btn-save")
    page.wait_for_function("() => document.getElementById('save-status').textContent.startsWith('Saved')")
    spec = Scenario.objects.get().spec
    assert "placement" not in spec.get("grid", {})
    assert page.js_errors == []
