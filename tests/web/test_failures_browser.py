"""Resource failures end to end in a real browser (headless Chromium via Playwright, embedded-mode
live server): a cluster's failures added in the scenario builder, the run saved and run, its
down intervals drawn on the run page's Gantt as their own kind (docs/failures.md)."""

from __future__ import annotations

import pytest

from gridweb.runs import execution
from gridweb.runs.models import Run, Status
from gridweb.scenarios.models import Scenario
from simengine.gantt import KIND_NAMES

from tests.web.test_builder_browser import SCREENSHOTS, error_beside, expect_text, field, open_builder, wait_validated
from tests.web.test_reservations_browser import idle_worker  # noqa: F401  (autouse: each test starts and ends idle)

pytestmark = pytest.mark.slow


@pytest.fixture
def user(transactional_db, django_user_model):
    return django_user_model.objects.create_user("failures-user", password="pw-failures-123")


def test_add_failures_to_a_cluster_run_it_and_see_the_processors_down(live_server, builder, user):
    page = builder
    open_builder(page, live_server.url + "/scenarios/new/")
    page.click("#btn-add-cluster")
    page.click("#btn-add-stream")
    field(page, "workload.streams.0.arrival.target_load").fill("0.7")
    field(page, "workload.streams.0.count").fill("200")
    seen = wait_validated(page, None)

    # Failures are an optional part of a cluster: added with defaults (a week up, an hour down)
    page.click("#btn-add-platform-clusters-0-failures")
    assert field(page, "platform.clusters.0.failures.mtbf.kind").input_value() == "exponential"
    assert field(page, "platform.clusters.0.failures.mtbf.mean").input_value() == "604800"
    # a mistake shows beside its field
    field(page, "platform.clusters.0.failures.group").fill("64")
    expect_text(error_beside(page, "platform.clusters.0.failures.group"), "must be at most the cluster's 32 processors")
    seen = wait_validated(page, seen)
    # nodes of 4 failing every 2 hours for 20 minutes: a 32-processor cluster sees dozens of failures
    field(page, "platform.clusters.0.failures.group").fill("4")
    field(page, "platform.clusters.0.failures.mtbf.mean").fill("7200")
    field(page, "platform.clusters.0.failures.mttr.mean").fill("1200")
    page.wait_for_function(
        "() => document.querySelector('[data-error-for=\"platform.clusters.0.failures.group\"]').hidden")
    field(page, "run.seed").fill("3")
    field(page, "name").fill("Browser failures")
    seen = wait_validated(page, seen)
    page.wait_for_function("() => !document.getElementById('builder').dataset.validating")
    assert page.locator("#builder").get_attribute("data-error-count") == "0"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "builder-failures.png"), full_page=True)

    page.click("#btn-run")  # saves, then starts the run and opens its page
    page.wait_for_url("**/runs/*/")
    spec = Scenario.objects.get().spec
    assert spec["platform"]["clusters"][0]["failures"] == {
        "mtbf": {"kind": "exponential", "mean": 7200}, "mttr": {"kind": "exponential", "mean": 1200}, "group": 4}

    assert execution.embedded_worker().wait_idle(120)
    run = Run.objects.get()
    assert run.status == Status.DONE, run.error
    page.reload()  # the finished run, drawn from its tiles
    page.wait_for_function("() => window.gridwebGantt && window.gridwebGantt.ready", timeout=30_000)
    page.wait_for_function("() => document.getElementById('gantt').dataset.mode === 'segments'")
    data = page.evaluate("(() => { const d = gridwebGantt.source.data;"
                         " return {kind: [...d.kind], processors: [...d.procs]}; })()")
    kinds = [KIND_NAMES[k] for k in data["kind"]]
    down = [i for i, k in enumerate(kinds) if k == "down"]
    assert down and all(data["processors"][i] == 4 for i in down)  # a node of 4 at a time
    assert "killed" in kinds  # the failures killed running jobs
    page.wait_for_function("() => document.getElementById('gantt').dataset.colour === 'kind'")
    legend = page.locator("#gantt-legend [data-kind]").evaluate_all("items => items.map((i) => i.dataset.kind)")
    assert legend == [kind for kind in KIND_NAMES if kind in set(kinds)] and "down" in legend
    # the run's metrics say how much was up
    assert 0.0 < run.summary["metrics"]["availability"]["mean"] < 1.0
    metrics = page.locator("table.metrics").inner_text() if page.locator("table.metrics").count() else page.inner_text("body")
    assert "availability (processor time up)" in metrics and "availability of c1" in metrics and "goodput" in metrics
    page.screenshot(path=str(SCREENSHOTS / "gantt-failures.png"), full_page=True)
    assert page.js_errors == []
