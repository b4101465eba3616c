"""Small things a researcher meets on the run page while watching runs, in a real browser
(headless Chromium, Playwright, Django's ``live_server``): the jobs table when a filter matches
nothing.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

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
