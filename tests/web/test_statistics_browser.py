"""Shaky intervals say so where they are shown (simengine.statistics): the run page, the compare
page and a sweep's table and plot, in a real browser (headless Chromium, Django's live_server);
and an interval from an older result that reached below its metric's domain is shown cut to it."""

from __future__ import annotations

import copy

import pytest

from gridweb.runs import services
from gridweb.runs.execution import execute_run
from gridweb.runs.models import Run, Status
from gridweb.sharing import Visibility
from tests.web.test_gantt_browser import finished_run

pytestmark = pytest.mark.slow

SPEC = {
    "name": "busy cluster",
    "platform": {"clusters": [{"name": "main", "processors": 16, "scheduler": {"name": "fcfs"}}]},
    "workload": {"streams": [{"kind": "synthetic", "name": "u", "target": "main", "arrival": {"target_load": 0.95},
                              "size": {"kind": "uniform", "low": 1, "high": 16, "integer": True},
                              "runtime": {"kind": "exponential", "mean": 300}, "count": 300}]},
    "run": {"seed": 3, "replications": 3},
}


def spec(name: str, replications: int) -> dict:
    out = copy.deepcopy(SPEC)
    out["name"], out["run"]["replications"] = name, replications
    return out


@pytest.fixture
def user(transactional_db, django_user_model):
    return django_user_model.objects.create_user("stats", password="pw-stats-123")


def flag_of(page, metric: str) -> str:
    return page.locator(f'#metrics-table tr[data-metric="{metric}"] td.shaky').inner_text().strip()


def test_shaky_intervals_are_flagged_on_the_run_compare_and_sweep_pages(live_server, builder, user, monkeypatch):
    few = finished_run(user, spec("three replications", 3))
    many = finished_run(user, spec("thirty replications", 30))

    builder.goto(f"{live_server.url}/runs/{few.pk}/")
    assert flag_of(builder, "mean_wait").startswith("⚠ only 3 replications")
    assert "fewer than 5 replications" in builder.locator(
        '#metrics-table tr[data-metric="mean_wait"] .flag').get_attribute("title")
    low = float(builder.locator('#metrics-table tr[data-metric="mean_wait"]').get_attribute("data-ci-low"))
    assert low >= 0
    builder.goto(f"{live_server.url}/runs/{many.pk}/")
    assert flag_of(builder, "utilisation") == ""  # 30 replications of a steady quantity: trusted

    builder.goto(f"{live_server.url}/compare/?runs={few.pk},{many.pk}")
    cells = builder.locator('tr[data-metric="mean_wait"] td')
    assert "⚠ only 3 replications" in cells.nth(0).inner_text()
    assert "⚠ only 3" not in cells.nth(1).inner_text()

    # an older result's stored interval below 0 is shown cut to the domain
    Run.objects.filter(pk=few.pk).update(summary={**few.summary, "metrics": {
        **few.summary["metrics"], "mean_wait": {**few.summary["metrics"]["mean_wait"], "ci_low": -854.3}}})
    builder.goto(f"{live_server.url}/runs/{few.pk}/")
    assert builder.locator('#metrics-table tr[data-metric="mean_wait"] td.ci').inner_text().startswith("[0 –")

    monkeypatch.setattr(services, "_dispatch_sweep", lambda sweep_id: None)  # the test runs the points
    sweep = services.create_sweep(user, spec("sweep", 3), {"run.seed": [1, 2]}, visibility=Visibility.PUBLIC)
    for run in sweep.runs.order_by("pk"):
        assert execute_run(run.pk) == Status.DONE
    builder.goto(f"{live_server.url}/sweeps/{sweep.pk}/?metric=mean_wait")
    flags = builder.locator("#sweep-points td.shaky").all_inner_texts()
    assert len(flags) == 2 and all(f.startswith("⚠ only 3 replications") for f in flags), flags
    assert "Hollow points have a shaky interval" in builder.locator(".hint").last.inner_text()
    fills = builder.evaluate("""() => Bokeh.documents[0].roots()[0].renderers
        .filter((r) => r.data_source && r.data_source.data.fill).map((r) => r.data_source.data.fill)""")
    assert fills and all(f == "white" for fill in fills for f in fill), fills
    assert builder.js_errors == []
