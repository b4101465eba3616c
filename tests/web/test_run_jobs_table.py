"""The run page's jobs table: ``runs/<pk>/jobs.json`` (a page of job rows, filtered and sorted)
and the "Jobs" section that shows it (docs/gallery.md, docs/web.md). Values are checked against
the engine's own Result of the same scenario, not against numbers written here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from django.urls import reverse

import simengine
from gridweb.runs.demo import RESERVATIONS_DEMO, reservations_demo_spec
from gridweb.runs.execution import execute_run
from gridweb.runs.models import Run, Status
from gridweb.runs.services import create_run
from gridweb.sharing import Visibility
from simengine.results import STANDARD_JOB_COLUMNS
from simengine.workload import STATUS_NAMES
from tests.web.conftest import client_for
from tests.web.test_gantt_browser import log_in, open_gantt, screenshot
from tests.web.test_run_pages import finished_run, queued_run

pytestmark = pytest.mark.django_db

RESERVATION_COLUMNS = ["priority", "preemptions", "lost_time", "reservation"]


@pytest.fixture
def plain_run(alice) -> Run:
    return finished_run(alice)  # two clusters, grid stream, 3 replications


@pytest.fixture
def reservations_run(alice) -> Run:
    run = create_run(alice, reservations_demo_spec(), name=RESERVATIONS_DEMO, visibility=Visibility.PRIVATE,
                     dispatch_now=False)
    assert execute_run(run.pk) == Status.DONE, run.error
    run.refresh_from_db()
    return run


def engine_result(run: Run) -> simengine.results.Result:
    """The engine's Result of the run's scenario, computed here (same scenario + seed ⇒ same jobs)."""
    return simengine.run(simengine.load_scenario(run.spec))


def jobs(client, run: Run, **params):
    return client.get(reverse("runs:jobs", args=[run.pk]), params)


def expected_rows(result, replication: int = 0) -> tuple[list[str], list[list]]:
    """Every job row of ``replication`` from the engine's Result, as the endpoint should show it."""
    j = result.jobs
    columns = [c for c in STANDARD_JOB_COLUMNS if c in j]
    columns += [c for c, v in j.items() if c not in columns and c != "killed" and np.ndim(v) == 1]
    rows = []
    for i in np.flatnonzero(j["replication"] == replication):
        row = []
        for c in columns:
            v = j[c][i].item()
            if c == "cluster":
                v = result.cluster_names[v] if v >= 0 else None
            elif c == "status":
                v = STATUS_NAMES[v]
            elif isinstance(v, float) and not math.isfinite(v):
                v = None
            row.append(v)
        rows.append(row)
    return columns, rows


def all_rows(client, run: Run, **params) -> dict:
    body = jobs(client, run, limit=1000, **params).json()
    assert body["total"] <= 1000  # the runs here are small: one page holds them all
    return body


def test_plain_run_rows_equal_the_engine_result(alice, plain_run):
    client = client_for(alice)
    result = engine_result(plain_run)
    columns, rows = expected_rows(result)
    body = all_rows(client, plain_run)
    assert body["columns"] == columns == list(STANDARD_JOB_COLUMNS)  # no model-specific columns for a plain run
    assert body["rows"] == rows and body["total"] == len(rows) > 0
    assert {c: bool(d) for c, d in body["descriptions"].items()} == {c: True for c in columns}
    # Another replication: its own rows.
    columns1, rows1 = expected_rows(result, 1)
    assert all_rows(client, plain_run, replication=1)["rows"] == rows1 != rows
    assert body["replications"] == [0, 1, 2]


def test_reservation_run_has_its_model_specific_columns_after_the_standard_ones(alice, reservations_run):
    client = client_for(alice)
    result = engine_result(reservations_run)
    columns, rows = expected_rows(result)
    body = all_rows(client, reservations_run)
    assert body["columns"][:len(STANDARD_JOB_COLUMNS)] == list(STANDARD_JOB_COLUMNS)
    assert set(RESERVATION_COLUMNS) <= set(body["columns"][len(STANDARD_JOB_COLUMNS):])
    assert body["columns"] == columns and body["rows"] == rows
    assert body["model_columns"] == columns[len(STANDARD_JOB_COLUMNS):]
    # The reservations' rows are in the stream after the workload streams, named so.
    names = {s["index"]: s["name"] for s in body["streams"]}
    assert names[len(reservations_run.spec["workload"]["streams"])] == "reservations"
    preempted = [r for r in rows if r[columns.index("preemptions")] > 0]
    assert preempted, "the demo preempts some jobs"  # so the column is not all zeros


def test_paging_keeps_the_total_and_slices_the_rows(alice, plain_run):
    client = client_for(alice)
    _, rows = expected_rows(engine_result(plain_run))
    first = jobs(client, plain_run).json()
    assert (first["offset"], first["limit"], first["total"]) == (0, 100, len(rows))
    assert first["rows"] == rows[:100]
    second = jobs(client, plain_run, offset=100, limit=30).json()
    assert second["rows"] == rows[100:130] and second["total"] == len(rows)
    past = jobs(client, plain_run, offset=len(rows) + 5).json()
    assert past["rows"] == [] and past["total"] == len(rows)


def test_status_and_stream_filters(alice, reservations_run):
    client = client_for(alice)
    columns, rows = expected_rows(engine_result(reservations_run))
    status, stream = columns.index("status"), columns.index("stream")
    counts = {}
    for name in STATUS_NAMES:
        body = all_rows(client, reservations_run, status=name)
        assert body["rows"] == [r for r in rows if r[status] == name]
        counts[name] = body["total"]
    assert sum(counts.values()) == len(rows) and counts["completed"] > 0 and counts["rejected"] > 0
    for s in {r[stream] for r in rows}:
        body = all_rows(client, reservations_run, stream=s, status="completed")
        assert body["rows"] == [r for r in rows if r[stream] == s and r[status] == "completed"]
        assert body["total"] == len(body["rows"]) > 0


def test_sort_by_a_column_ascending_and_descending(alice, plain_run):
    client = client_for(alice)
    columns, rows = expected_rows(engine_result(plain_run))
    wait = columns.index("wait")
    up = all_rows(client, plain_run, sort="wait")["rows"]
    down = all_rows(client, plain_run, sort="-wait")["rows"]
    finite = sorted(r[wait] for r in rows if r[wait] is not None)
    missing = sum(r[wait] is None for r in rows)
    # numbers in order, jobs that never started (null) last either way; ties keep submit order
    assert [r[wait] for r in up] == finite + [None] * missing
    assert [r[wait] for r in down] == finite[::-1] + [None] * missing
    assert sorted(map(tuple, up), key=str) == sorted(map(tuple, rows), key=str)  # the same rows
    ties = [r for r in up if r[wait] == finite[0]]
    assert ties == [r for r in rows if r[wait] == finite[0]]
    # cluster sorts by name, as shown
    by_cluster = all_rows(client, plain_run, sort="-cluster")["rows"]
    shown = [r[columns.index("cluster")] or "" for r in by_cluster]
    assert shown == sorted(shown, reverse=True) and len(set(shown)) == 2


@pytest.mark.parametrize("params, parameter", [
    ({"offset": "-1"}, "offset"), ({"offset": "x"}, "offset"), ({"limit": "0"}, "limit"),
    ({"limit": "1001"}, "limit"), ({"status": "done"}, "status"), ({"stream": "7"}, "stream"),
    ({"stream": "a"}, "stream"), ({"replication": "3"}, "replication"), ({"sort": "colour"}, "sort"),
    ({"sort": "--wait"}, "sort"),
])
def test_bad_parameters_are_400_naming_the_parameter(alice, plain_run, params, parameter):
    response = jobs(client_for(alice), plain_run, **params)
    assert response.status_code == 400
    body = response.json()
    assert body["parameter"] == parameter and body["error"].startswith(f"{parameter}: ") and body["reason"]


def test_private_run_jobs_are_404_for_outsiders_and_visitors(alice, bob, carol, plain_run):
    assert jobs(client_for(bob), plain_run).status_code == 404
    assert jobs(client_for(), plain_run).status_code == 404
    assert jobs(client_for(alice), plain_run).status_code == 200
    assert client_for(alice).get(reverse("runs:jobs", args=[999_999])).status_code == 404
    public = finished_run(alice, visibility=Visibility.PUBLIC)
    assert jobs(client_for(), public).status_code == 200
def test_an_unfinished_run_has_no_jobs_yet_and_its_page_says_so(alice):
    run = queued_run(alice)
    response = jobs(client_for(alice), run)
    assert response.status_code == 409 and "when the run finishes" in response.json()["error"]
    page = client_for(alice).get(reverse("runs:run", args=[run.pk])).content.decode()
    assert 'id="jobs-table-section"' in page and "available when the run finishes" in page


def test_run_page_has_the_jobs_section_after_the_gantt(alice, plain_run):
    html = client_for(alice).get(reverse("runs:run", args=[plain_run.pk])).content.decode()
    url = reverse("runs:jobs", args=[plain_run.pk])
    assert f'data-url="{url}"' in html
    assert html.index('id="gantt"') < html.index('id="jobs-table-section"')
    assert "runs/jobs_table.js" in html


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_jobs_table_in_the_browser_pages_filters_and_highlights_a_job_on_the_gantt(live_server, page, alice):
    run = create_run(alice, reservations_demo_spec(), name=RESERVATIONS_DEMO, visibility=Visibility.PRIVATE,
                     dispatch_now=False)
    assert execute_run(run.pk) == Status.DONE, run.error
    columns, rows = expected_rows(engine_result(run))
    status = columns.index("status")
    log_in(page, live_server.url, alice)
    page.set_viewport_size({"width": 1400, "height": 1000})
    open_gantt(page, f"{live_server.url}/runs/{run.pk}/")
    table = page.locator("#jobs-table")
    page.wait_for_function("() => document.getElementById('jobs-table').dataset.ready === 'true'")
    assert table.get_attribute("data-total") == str(len(rows)) and len(rows) > 100
    assert page.locator("#jobs-range").inner_text() == f"rows 1–100 of {len(rows)}"
    assert page.locator("#jobs-table thead th").all_inner_texts() == columns
    first = page.locator("#jobs-table tbody tr").first.locator("td").all_inner_texts()
    assert first[columns.index("job_id")] == str(rows[0][columns.index("job_id")])

    # Page forward: rows 101–200, the 101st job first.
    page.click("#jobs-next")
    page.wait_for_function("() => document.getElementById('jobs-table').dataset.offset === '100'"
                           " && document.getElementById('jobs-table').dataset.ready === 'true'")
    assert page.locator("#jobs-range").inner_text() == f"rows 101–{min(200, len(rows))} of {len(rows)}"
    assert page.locator("#jobs-table tbody tr").first.get_attribute("data-job") == str(rows[100][0])

    # Filter by status (the rarest status the run has, so the total changes): back to the first
    # page, only those jobs.
    counts = {name: sum(r[status] == name for r in rows) for name in STATUS_NAMES}
    rare = min((name for name in counts if counts[name]), key=counts.get)
    assert 0 < counts[rare] < len(rows)
    page.select_option("#jobs-status", rare)
    page.wait_for_function(f"() => document.getElementById('jobs-table').dataset.total === '{counts[rare]}'"
                           " && document.getElementById('jobs-table').dataset.ready === 'true'")
    shown = {tr for tr in page.locator(f"#jobs-table tbody td:nth-child({status + 1})").all_inner_texts()}
    assert shown == {rare}
    assert page.locator("#jobs-range").inner_text().startswith("rows 1–")

    # Click a completed job: its segments are highlighted on the Gantt.
    page.select_option("#jobs-status", "completed")
    page.wait_for_function(f"() => document.getElementById('jobs-table').dataset.total === '{counts['completed']}'"
                           " && document.getElementById('jobs-table').dataset.ready === 'true'")
    row = page.locator("#jobs-table tbody tr").nth(2)
    key = f"{row.get_attribute('data-stream')}:{row.get_attribute('data-job')}"
    row.click()
    page.wait_for_function(f"() => gridwebGantt.highlightedKey() === '{key}'")
    assert int(page.locator("#gantt").get_attribute("data-highlighted")) >= 1
    assert "highlighted" in row.get_attribute("class")
    screenshot(page, "run-jobs-table.png")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_jobs_table_prints_whole_and_fractional_times_alike(live_server, page, alice):
    """Whole numbers were printed bare ('7200') beside fractional ones with separators
    ('7,238.5'); ids stay bare."""
    run = create_run(alice, reservations_demo_spec(), name=RESERVATIONS_DEMO, visibility=Visibility.PRIVATE,
                     dispatch_now=False)
    assert execute_run(run.pk) == Status.DONE, run.error
    log_in(page, live_server.url, alice)
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    page.wait_for_function("() => document.getElementById('jobs-table').dataset.ready === 'true'")
    page.select_option("#jobs-stream", "2")  # the reservations: whole-second windows (docs/reservations.md)
    page.wait_for_function("() => document.getElementById('jobs-table').dataset.total === '4'"
                           " && document.getElementById('jobs-table').dataset.ready === 'true'")
    columns = page.locator("#jobs-table thead th").all_inner_texts()
    rows = {tuple(tr.locator("td").all_inner_texts()) for tr in page.locator("#jobs-table tbody tr").all()}
    demo_east = next(r for r in rows if r[columns.index("reservation")] == "0")
    assert demo_east[columns.index("start")] == "7,200" and demo_east[columns.index("processors")] == "32"
    assert demo_east[columns.index("job_id")] == "1" and demo_east[columns.index("stream")] == "2"
