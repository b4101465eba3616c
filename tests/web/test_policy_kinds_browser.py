"""Nested policy fields in the scenario builder, in a real browser (headless Chromium via Playwright,
embedded-mode live server): a policy named inside another policy's params (rars-heft's reservation
admission, KOALA's preemption) is picked from its registry with a form from its parameter model --
not typed as JSON -- and the scenario saves and runs (issue 35).

Hooks: docs/builder.md (inputs by ``data-path``, errors by ``data-error-for``).
"""
from __future__ import annotations

import pytest
import yaml

from gridweb.runs import execution
from gridweb.runs.models import Run, Status
from gridweb.scenarios.models import Scenario
from simengine import policy_fields
from tests.conftest import ROOT
from tests.web.test_builder_browser import SCREENSHOTS, expect_text, field, open_builder, wait_validated
from tests.web.test_reservations_browser import idle_worker  # noqa: F401  (autouse: the embedded worker idle)

pytestmark = pytest.mark.slow


@pytest.fixture
def user(transactional_db, django_user_model):
    return django_user_model.objects.create_user("kinds-user", password="pw-kinds-123")


def options(page, path: str) -> list[str]:
    return field(page, path).locator("option").evaluate_all("os => os.map(o => o.value)")


def test_nested_policies_are_chosen_from_their_registries_with_forms_saved_and_run(live_server, builder, user):
    page = builder
    spec = yaml.safe_load((ROOT / "examples" / "cao-scojo-rars.yaml").read_text())
    for stream in spec["workload"]["streams"]:
        stream["count"] = 120
    spec["run"]["replications"] = 1
    spec["grid"] = {"workflow_scheduling": spec["grid"]["workflow_scheduling"]}  # site allocation left out
    scenario = Scenario.objects.create(owner=user, name="Cao", spec=spec)
    found = policy_fields.registries()
    open_builder(page, f"{live_server.url}/scenarios/{scenario.pk}/edit/")
    seen = wait_validated(page, None)

    # every policy field of a cluster is a picker of its registry's policies
    for entry in page.evaluate("JSON.parse(document.getElementById('builder-config').textContent)"
                               ".catalog.cluster_policies"):
        assert options(page, f"platform.clusters.0.{entry['field']}.name") == found[entry["registry"]].names()

    # rars-heft's admission: its registry's names, the default shown, then rigid-frame's own form
    admission = "grid.workflow_scheduling.params.admission"
    assert field(page, f"{admission}.name").evaluate("el => el.tagName") == "SELECT"
    assert options(page, f"{admission}.name") == found["reservation_admission"].names()
    assert field(page, f"{admission}.name").input_value() == "earliest-lft"
    assert page.locator(f'[data-path="{admission}.params"]').count() == 0  # (no JSON box)
    field(page, f"{admission}.name").select_option("rigid-frame")
    expect_text(page.locator(f'[data-group="{admission}"]'), "Rigid reservations")
    field(page, f"{admission}.params.behind").fill("-5")
    seen = wait_validated(page, seen)
    expect_text(page.locator(f'[data-group="{admission}"]'), "greater than or equal to 0")
    field(page, f"{admission}.params.behind").fill("90")

    # KOALA's preemption offers the part of the preemption registry it takes (no suspend)
    field(page, "grid.deadline_policy.name").select_option("koala")
    assert options(page, "grid.deadline_policy.params.preemption.name") == ["kill", "none", "requeue"]
    assert field(page, "grid.deadline_policy.params.preemption.name").input_value() == "requeue"
    field(page, "grid.deadline_policy.name").select_option("")

    # a parameter of a policy shown as the default: the document names the policy too
    field(page, "grid.site_allocation.params.weights").select_option("equal")
    seen = wait_validated(page, seen)
    page.wait_for_function("() => document.getElementById('builder').dataset.errorCount === '0'")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator(f'[data-group="{admission}"]').scroll_into_view_if_needed()
    page.screenshot(path=str(SCREENSHOTS / "builder-nested-policies.png"), full_page=True)

    page.click("#btn-run")  # saves, then starts the run and opens its page
    page.wait_for_url("**/runs/*/")
    grid = Scenario.objects.get().spec["grid"]
    assert grid["workflow_scheduling"]["params"]["admission"] == {"name": "rigid-frame", "params": {"behind": 90}}
    assert grid["site_allocation"] == {"name": "random", "params": {"weights": "equal"}}
    assert "deadline_policy" not in grid
    assert execution.embedded_worker().wait_idle(120)
    run = Run.objects.get()
    assert run.status == Status.DONE, run.error
    assert run.policy.split(",") == ["scojo-pect", "rars-heft", "rigid-frame"]
    assert page.js_errors == []
