"""The run page (permalink), its actions and downloads, compare and the sweep pages, through
Django's test client: who may see and do what, CSRF on every POST, and what the pages show of
real runs executed synchronously with the engine (``execution.execute_run``)."""

from __future__ import annotations

import csv
import io
import json
import math
import re

import numpy as np
import pytest
from django.urls import reverse
from scipy import stats

import simengine
from gridweb.runs.execution import execute_run
from gridweb.runs.models import Comment, Run, Status, Sweep
from gridweb.runs.services import create_run, create_sweep
from gridweb.sharing import Visibility
from simengine.traces import read_swf
from tests.web.conftest import client_for, downloaded

pytestmark = pytest.mark.django_db


def small_spec(processors: int = 16, seed: int = 3, replications: int = 3, name: str = "small") -> dict:
    """Two clusters fed through the grid: a run of well under a second with a few hundred segments."""
    return {
        "name": name,
        "platform": {"clusters": [{"name": "a", "processors": processors, "scheduler": {"name": "easy"}},
                                  {"name": "b", "processors": 8}]},
        "workload": {"streams": [{
            "kind": "synthetic", "name": "users", "target": "grid", "arrival": {"target_load": 0.8},
            "size": {"kind": "uniform", "low": 1, "high": 8, "integer": True},
            "runtime": {"kind": "exponential", "mean": 100}, "count": 300}]},
        "run": {"seed": seed, "replications": replications, "warmup": {"completions": 20}},
    }


def queued_run(owner, visibility=Visibility.PRIVATE, **kwargs) -> Run:
    """A stored run that no worker picks up (nothing is dispatched)."""
    return create_run(owner, small_spec(**kwargs), visibility=visibility, dispatch_now=False)


def finished_run(owner, visibility=Visibility.PRIVATE, **kwargs) -> Run:
    run = queued_run(owner, visibility, **kwargs)
    assert execute_run(run.pk) == Status.DONE
    run.refresh_from_db()
    assert run.status == Status.DONE, run.error
    return run


def run_urls(run: Run) -> dict[str, str]:
    return {
        "page": reverse("runs:run", args=[run.pk]),
        "segments": reverse("runs:segments", args=[run.pk]),
        "gantt tile": reverse("runs:gantt_tile", args=[run.pk]) + "?width=600&height=300",
        "gantt job": reverse("runs:gantt_job", args=[run.pk]) + "?stream=0&job_id=1",
        "gantt at": reverse("runs:gantt_at", args=[run.pk]) + "?cluster=0&processor=0&t=100",
        "plots": reverse("runs:plots", args=[run.pk]),
        "jobs": reverse("runs:jobs", args=[run.pk]),
        **{kind: reverse("runs:export", args=[run.pk, kind])
           for kind in ("jobs.csv", "schedule.swf", "batsim_jobs.csv", "scenario.json", "metrics.json")},
    }


# --- Who may see a run -----------------------------------------------------------------------------


def test_private_run_is_404_for_outsiders_and_visitors_on_every_view(alice, bob):
    run = finished_run(alice)
    for who, client in (("bob", client_for(bob)), ("anonymous", client_for())):
        for name, url in run_urls(run).items():
            assert client.get(url).status_code == 404, f"{who} GET {name}"
        for action in ("cancel", "delete", "comment", "share"):
            response = client.post(reverse(f"runs:{action}", args=[run.pk]), {"text": "hello", "visibility": "public"})
            assert response.status_code == 404, f"{who} POST {action}"
    run.refresh_from_db()
    assert run.visibility == "private" and not Comment.objects.exists()
    owner = client_for(alice)
    for name, url in run_urls(run).items():
        assert owner.get(url).status_code == 200, f"owner GET {name}"


def test_a_run_that_does_not_exist_is_404_like_a_private_one(alice):
    assert client_for(alice).get(reverse("runs:run", args=[999_999])).status_code == 404


def test_group_member_sees_a_group_run_and_an_outsider_does_not(alice, carol, bob, lab):
    run = finished_run(alice, Visibility.GROUP)
    assert run.group == lab
    member = client_for(carol)
    for name, url in run_urls(run).items():
        assert member.get(url).status_code == 200, name
    page = member.get(run_urls(run)["page"]).content.decode()
    assert run.name in page and 'id="delete-run"' not in page  # members view, only the owner deletes
    assert client_for(bob).get(run_urls(run)["page"]).status_code == 404


def test_public_run_is_open_to_visitors_who_must_log_in_to_comment(alice):
    run = finished_run(alice, Visibility.PUBLIC)
    visitor = client_for()
    assert visitor.get(run_urls(run)["page"]).status_code == 200
    response = visitor.post(reverse("runs:comment", args=[run.pk]), {"text": "nice"})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert not Comment.objects.exists()


# --- Owner-only actions ----------------------------------------------------------------------------


def test_non_owner_viewers_cannot_cancel_or_delete(alice, carol):
    queued = queued_run(alice, Visibility.GROUP)
    done = finished_run(alice, Visibility.GROUP)
    member = client_for(carol)

    assert member.post(reverse("runs:cancel", args=[queued.pk])).status_code == 403
    assert member.post(reverse("runs:delete", args=[done.pk])).status_code == 403
    assert member.post(reverse("runs:share", args=[done.pk]), {"visibility": "public"}).status_code == 403
    done.refresh_from_db()
    assert done.visibility == Visibility.GROUP

    queued.refresh_from_db()
    assert queued.status == Status.QUEUED and not queued.cancel_requested
    assert Run.objects.filter(pk=done.pk).exists()


def test_owner_cancels_a_queued_run_from_its_page(alice):
    run = queued_run(alice)
    owner = client_for(alice)
    page = owner.get(run_urls(run)["page"]).content.decode()
    assert 'id="cancel-run"' in page and 'id="run-progress"' in page

    response = owner.post(reverse("runs:cancel", args=[run.pk]), follow=True)

    run.refresh_from_db()
    assert run.status == Status.CANCELLED and run.cancel_requested
    assert response.status_code == 200 and 'id="cancel-run"' not in downloaded(response).decode()


def test_cancel_button_is_only_for_the_owner(alice, carol):
    run = queued_run(alice, Visibility.GROUP)
    assert 'id="cancel-run"' not in client_for(carol).get(run_urls(run)["page"]).content.decode()


def test_owner_deletes_a_finished_run_but_not_a_queued_one(alice):
    owner = client_for(alice)
    queued = queued_run(alice)
    response = owner.post(reverse("runs:delete", args=[queued.pk]))
    assert response.status_code == 302 and Run.objects.filter(pk=queued.pk).exists()

    done = finished_run(alice)
    response = owner.post(reverse("runs:delete", args=[done.pk]))
    assert response.status_code == 302 and response["Location"] == reverse("runs:gallery")
    assert not Run.objects.filter(pk=done.pk).exists()


def test_posts_without_a_csrf_token_are_refused(alice):
    queued = queued_run(alice)
    done = finished_run(alice)
    client = client_for(alice, csrf=True)
    for url, data in ((reverse("runs:cancel", args=[queued.pk]), {}),
                      (reverse("runs:delete", args=[done.pk]), {}),
                      (reverse("runs:comment", args=[done.pk]), {"text": "no token"}),
                      (reverse("runs:share", args=[done.pk]), {"visibility": "public"})):
        assert client.post(url, data).status_code == 403, url
    queued.refresh_from_db()
    assert queued.status == Status.QUEUED and Run.objects.filter(pk=done.pk).exists()
    assert not Comment.objects.exists()

    # The same client with the token the page gave it gets through.
    client.get(run_urls(done)["page"])
    token = client.cookies["csrftoken"].value
    response = client.post(reverse("runs:comment", args=[done.pk]), {"text": "with token"},
                           HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 302
    assert list(Comment.objects.values_list("text", flat=True)) == ["with token"]


def test_gets_never_change_anything(alice):
    run = queued_run(alice)
    owner = client_for(alice)
    for action in ("cancel", "delete", "comment"):
        assert owner.get(reverse(f"runs:{action}", args=[run.pk])).status_code == 405
    run.refresh_from_db()
    assert run.status == Status.QUEUED


# --- Comments --------------------------------------------------------------------------------------


def test_group_members_comment_and_everyone_who_may_view_reads_it(alice, carol):
    run = finished_run(alice, Visibility.GROUP)
    response = client_for(carol).post(reverse("runs:comment", args=[run.pk]), {"text": "Why is b so busy?"})
    assert response.status_code == 302
    page = client_for(alice).get(run_urls(run)["page"]).content.decode()
    assert "Why is b so busy?" in page and "carol" in page


def test_an_empty_comment_is_refused_beside_its_field(alice):
    run = finished_run(alice)
    response = client_for(alice).post(reverse("runs:comment", args=[run.pk]), {"text": "   "})
    assert response.status_code == 400
    assert 'id="comment-error"' in downloaded(response).decode()
    assert not Comment.objects.exists()


# --- What the page shows ---------------------------------------------------------------------------


def replication_mean_waits(jobs_csv: bytes) -> list[float]:
    """Mean wait of the measured jobs (not warm-up; completed or killed) of each replication,
    read from the jobs CSV export."""
    waits: dict[int, list[float]] = {}
    for row in csv.DictReader(io.StringIO(jobs_csv.decode())):
        if row["warmup"] == "0" and row["status"] in ("completed", "killed"):
            waits.setdefault(int(row["replication"]), []).append(float(row["wait"]))
    return [float(np.mean(waits[r])) for r in sorted(waits)]


def test_metrics_table_shows_the_95_percent_ci_of_a_real_run(alice):
    run = finished_run(alice, replications=4)
    owner = client_for(alice)
    page = owner.get(run_urls(run)["page"]).content.decode()
    row = re.search(r'<tr data-metric="mean_wait" data-mean="([^"]+)"\s+data-ci-low="([^"]+)" '
                    r'data-ci-high="([^"]+)">(.*?)</tr>', page, re.S)
    assert row, "no mean_wait row in the metrics table"
    mean, low, high = (float(row.group(i)) for i in (1, 2, 3))

    # The interval, recomputed from the jobs the run exported: Student t with R-1 degrees of freedom,
    # cut at 0 (a wait is never negative: simengine.statistics).
    per_replication = replication_mean_waits(downloaded(owner.get(run_urls(run)["jobs.csv"])))
    assert len(per_replication) == 4
    expected_mean = float(np.mean(per_replication))
    half = stats.t.ppf(0.975, 3) * np.std(per_replication, ddof=1) / math.sqrt(4)
    assert mean == pytest.approx(expected_mean, rel=1e-9)
    assert low == pytest.approx(max(expected_mean - half, 0.0), rel=1e-9)
    assert high == pytest.approx(expected_mean + half, rel=1e-9)
    assert low < mean < high
    # ... and it is printed for the reader, not only in attributes.
    cells = re.sub(r"<[^>]+>", " ", row.group(4))
    assert "[" in cells and "±" in cells
    assert f"{expected_mean:.4g}" in cells


def test_run_page_shows_scenario_reproducibility_and_links(alice):
    run = finished_run(alice)
    page = client_for(alice).get(run_urls(run)["page"]).content.decode()
    assert run.scenario_hash in page and len(run.scenario_hash) == 64
    assert f"<code>{run.seed}</code>" in page and f"<code>{simengine.__version__}</code>" in page
    assert f"/scenarios/new/?from_run={run.pk}" in page
    for kind in ("jobs.csv", "schedule.swf", "scenario.json", "metrics.json"):
        assert reverse("runs:export", args=[run.pk, kind]) in page
    config = json.loads(re.search(r'<script id="gantt-config" type="application/json">(.*?)</script>', page,
                                  re.S).group(1))
    assert config["finished"] and config["segmentsCount"] == run.segments_count > 0
    assert [c["name"] for c in config["clusters"]] == ["a", "b"]


def test_failed_run_shows_its_error(alice):
    spec = small_spec()
    run = create_run(alice, spec, dispatch_now=False)
    Run.objects.filter(pk=run.pk).update(status=Status.FAILED, error="TraceError: line 7, field 4: not a number")
    page = client_for(alice).get(run_urls(run)["page"]).content.decode()
    assert 'id="run-error"' in page and "line 7, field 4: not a number" in page


def test_segments_json_holds_every_segment_of_the_result(alice):
    run = finished_run(alice)
    payload = client_for(alice).get(run_urls(run)["segments"]).json()
    columns = payload["columns"]
    n = payload["count"]
    assert n == run.segments_count > 0
    for name in ("cluster", "first_processor", "processors", "t0", "t1", "job_id", "kind"):
        values = columns[name]
        assert (len(values) == n) if isinstance(values, list) else ("repeat" in values), name
    t0, t1 = np.array(columns["t0"], float), np.array(columns["t1"], float)
    assert (np.diff(t0) >= 0).all() and (t1 >= t0).all()
    # The segments cover exactly the busy processor-seconds of replication 0's started jobs.
    jobs = list(csv.DictReader(io.StringIO(downloaded(client_for(alice).get(run_urls(run)["jobs.csv"])).decode())))
    started = [j for j in jobs if j["replication"] == "0" and j["start"]]
    end = {j["job_id"]: float(j["end"] or "nan") for j in started}
    busy = sum(int(j["processors"]) * (end[j["job_id"]] - float(j["start"])) for j in started
               if not math.isnan(end[j["job_id"]]))
    processors = np.array(columns["processors"], float)
    assert float(((t1 - t0) * processors).sum()) == pytest.approx(busy, rel=1e-9)


def test_plots_are_built_for_a_done_run(alice):
    run = finished_run(alice)
    plots = client_for(alice).get(run_urls(run)["plots"]).json()["plots"]
    assert set(plots) == {"utilisation", "wait", "slowdown"}
    assert all(item["doc"]["roots"] for item in plots.values())


# --- Exports -------------------------------------------------------------------------------------------


def test_viewers_download_every_export(alice, carol):
    run = finished_run(alice, Visibility.GROUP)
    member = client_for(carol)
    urls = run_urls(run)
    downloads = {kind: member.get(urls[kind]) for kind in ("jobs.csv", "schedule.swf", "scenario.json", "metrics.json")}
    for kind, response in downloads.items():
        assert response.status_code == 200, kind
        assert response["Content-Disposition"] == f'attachment; filename="run-{run.pk}-{kind}"'

    summary = run.summary
    rows = list(csv.DictReader(io.StringIO(downloaded(downloads["jobs.csv"]).decode())))
    assert len(rows) == summary["jobs"]
    swf = tmp_swf(downloaded(downloads["schedule.swf"]))
    assert len(read_swf(swf).jobs) == sum(1 for r in rows if r["replication"] == "0")
    scenario = simengine.load_scenario(json.loads(downloads["scenario.json"].content))
    assert simengine.scenario_hash(scenario) == run.scenario_hash
    metrics = json.loads(downloads["metrics.json"].content)
    assert metrics["metrics"]["mean_wait"]["mean"] == pytest.approx(summary["metrics"]["mean_wait"]["mean"])


def test_schedule_swf_downloads_in_integer_seconds_or_the_precision_asked_for(alice):
    """From the run page and the API alike; a bad precision is a 400 that names the parameter."""
    run = finished_run(alice)
    owner = client_for(alice)
    url = run_urls(run)["schedule.swf"]

    def times(response) -> list[str]:
        assert response.status_code == 200
        return [line.split()[1] for line in downloaded(response).decode().splitlines()
                if line.strip() and not line.startswith(";")]

    assert all("." not in t for t in times(owner.get(url)))
    assert any("." in t for t in times(owner.get(url + "?precision=exact")))
    assert max(len(t.split(".")[1]) for t in times(owner.get(url + "?precision=2")) if "." in t) <= 2
    page = owner.get(url + "?precision=12")
    assert page.status_code == 400 and "precision: must be an integer from 0 to 9" in page.content.decode()
    api = owner.get(f"/api/runs/{run.pk}/schedule.swf?precision=x")
    assert api.status_code == 400
    assert api.json() == {"errors": {"precision": ["must be an integer from 0 to 9 or 'exact'; got 'x'"]}}
    assert all("." not in t for t in times(owner.get(f"/api/runs/{run.pk}/schedule.swf")))


def test_batsim_jobs_download_exact_by_default_or_at_the_precision_asked_for(alice):
    """Batsim writes its times as simulated; whole seconds on request, from the page and the API."""
    import csv
    import io

    run = finished_run(alice)
    owner = client_for(alice)
    url = run_urls(run)["batsim_jobs.csv"]

    def starts(response) -> list[float]:
        assert response.status_code == 200
        return [float(r["starting_time"]) for r in csv.DictReader(io.StringIO(downloaded(response).decode()))
                if r["starting_time"]]

    exact = starts(owner.get(url))
    assert any(t != round(t) for t in exact)
    whole = starts(owner.get(url + "?precision=0"))
    assert whole == [float(round(t)) for t in exact]
    assert starts(owner.get(f"/api/runs/{run.pk}/batsim_jobs.csv?precision=0")) == whole
    api = owner.get(f"/api/runs/{run.pk}/batsim_jobs.csv?precision=x")
    assert api.status_code == 400 and "precision" in api.json()["errors"]


def tmp_swf(content: bytes):
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / "schedule.swf"
    path.write_bytes(content)
    return path


def test_results_of_an_unfinished_run_are_not_exported(alice):
    run = queued_run(alice)
    owner = client_for(alice)
    assert owner.get(reverse("runs:export", args=[run.pk, "jobs.csv"])).status_code == 409
    assert owner.get(reverse("runs:export", args=[run.pk, "scenario.json"])).status_code == 200
    assert owner.get(reverse("runs:export", args=[run.pk, "nothing.txt"])).status_code == 404


# --- Compare ---------------------------------------------------------------------------------------------


def test_compare_lists_exactly_the_scenario_paths_that_differ(alice):
    first = finished_run(alice, processors=16, seed=3)
    second = finished_run(alice, processors=24, seed=9)
    response = client_for(alice).get(reverse("runs:compare") + f"?runs={first.pk},{second.pk}")
    assert response.status_code == 200
    page = downloaded(response).decode()
    paths = re.findall(r'<tr data-path="([^"]+)">', page)
    assert sorted(paths) == ["platform.clusters.0.processors", "run.seed"]
    diff_row = re.search(r'<tr data-path="platform.clusters.0.processors">(.*?)</tr>', page, re.S).group(1)
    assert re.findall(r"<td><code>([^<]*)</code></td>", diff_row) == ["16", "24"]
    # metrics side by side: one cell per run in the mean-wait row
    row = re.search(r'<tr data-metric="mean_wait">(.*?)</tr>', page, re.S).group(1)
    assert row.count('class="mean"') == 2
    for run in (first, second):
        assert f"{run.summary['metrics']['mean_wait']['mean']:.4g}" in row


def test_compare_only_shows_runs_the_user_may_view(alice, bob):
    mine = finished_run(alice)
    theirs = finished_run(bob)
    assert client_for(alice).get(reverse("runs:compare") + f"?runs={mine.pk},{theirs.pk}").status_code == 404
    assert client_for().get(reverse("runs:compare") + f"?runs={mine.pk},{theirs.pk}").status_code == 404
    response = client_for(alice).get(reverse("runs:compare") + "?runs=1,x")
    assert response.status_code == 400 and b"'x' is not a run number" in response.content


def test_failed_and_cancelled_runs_are_not_offered_for_compare_and_are_named_when_asked_for(alice):
    """They have no results: the picker offered them and compare showed empty columns."""
    first = finished_run(alice, seed=3)
    second = finished_run(alice, seed=9)
    waiting = queued_run(alice)  # will have results: still offered
    cancelled = Run.objects.create(owner=alice, name="stopped", spec={"name": "stopped"}, status=Status.CANCELLED)
    failed = Run.objects.create(owner=alice, name="broken", spec={"name": "broken"}, status=Status.FAILED,
                                error="boom")
    client = client_for(alice)
    compare = reverse("runs:compare")

    def picked(page: str) -> list[int]:
        return sorted(int(pk) for pk in re.findall(r'<input type="checkbox" name="runs" value="(\d+)"', page))

    page = client.get(compare).content.decode()
    assert picked(page) == sorted([first.pk, second.pk, waiting.pk])
    assert 'id="compare-without-result"' not in page

    # Asked for by id, with one usable run: the picker, and a message naming the run left out.
    response = client.get(compare + f"?runs={first.pk},{cancelled.pk}")
    assert response.status_code == 200
    page = downloaded(response).decode()
    notice = re.search(r'<p class="notice" id="compare-without-result">(.*?)</p>', page, re.S).group(1)
    assert f"#{cancelled.pk} stopped</a> (cancelled)" in notice and "without results" in notice
    assert picked(page) == sorted([first.pk, second.pk, waiting.pk])
    assert 'id="compare-metrics"' not in page

    # With two usable runs: they are compared, the failed one is named and not a column.
    response = client.get(compare + f"?runs={first.pk},{failed.pk},{second.pk}")
    assert response.status_code == 200
    page = downloaded(response).decode()
    columns = [int(pk) for pk in re.findall(r'<th data-run="(\d+)">', page)]
    assert columns == [first.pk, second.pk]
    notice = re.search(r'<p class="notice" id="compare-without-result">(.*?)</p>', page, re.S).group(1)
    assert f"#{failed.pk} broken</a> (failed)" in notice and "stopped" not in notice

    # Only a cancelled run: a message and the picker, not an error.
    response = client.get(compare + f"?runs={cancelled.pk}")
    assert response.status_code == 200 and 'id="compare-without-result"' in downloaded(response).decode()

    # The gallery's cards of such runs have no compare box either.
    gallery = client.get(reverse("runs:gallery")).content.decode()
    boxes = re.findall(r'<input type="checkbox" name="runs" value="(\d+)" form="compare-form">', gallery)
    assert sorted(set(int(pk) for pk in boxes)) == sorted([first.pk, second.pk, waiting.pk])


# --- Sweeps ---------------------------------------------------------------------------------------------


def test_sweep_pages_list_points_and_plot_the_metric_with_its_ci(alice, bob):
    spec = small_spec(replications=3)
    sweep = create_sweep(alice, spec, {"workload.streams.0.arrival.target_load": [0.5, 0.9]}, name="load sweep")
    runs = list(sweep.runs.order_by("pk"))
    assert len(runs) == 2
    for run in runs:
        assert execute_run(run.pk) == Status.DONE
    sweep.refresh_from_db()
    assert sweep.status == Status.DONE

    owner = client_for(alice)
    listing = owner.get(reverse("runs:sweeps")).content.decode()
    assert "load sweep" in listing and "2 / 2 done" in listing

    page = owner.get(reverse("runs:sweep", args=[sweep.pk])).content.decode()
    assert 'id="plot-aggregate"' in page and "Bokeh" in page
    for run in runs:
        run.refresh_from_db()
        assert f'<tr data-run="{run.pk}">' in page
        mean = run.summary["metrics"]["mean_wait"]["mean"]
        assert f'data-mean="{mean}"' in page
    # higher load, longer waits: the plotted points are the runs' own figures
    waits = [r.summary["metrics"]["mean_wait"]["mean"] for r in runs]
    assert waits[0] < waits[1]

    assert client_for(bob).get(reverse("runs:sweep", args=[sweep.pk])).status_code == 404
    assert "load sweep" not in client_for(bob).get(reverse("runs:sweeps")).content.decode()
    response = owner.get(reverse("runs:sweep", args=[sweep.pk]) + "?metric=nonsense")
    assert response.status_code == 400


def test_a_running_sweep_shows_finished_points_and_queued_ones(alice):
    sweep = create_sweep(alice, small_spec(), {"run.seed": [1, 2, 3]}, name="seeds")
    assert isinstance(sweep, Sweep)
    page = client_for(alice).get(reverse("runs:sweep", args=[sweep.pk])).content.decode()
    assert page.count('class="pending"') == 3 and "queued" in page

    first = sweep.runs.order_by("pk").first()
    assert execute_run(first.pk) == Status.DONE
    first.refresh_from_db()
    page = client_for(alice).get(reverse("runs:sweep", args=[sweep.pk])).content.decode()
    assert page.count('class="pending"') == 2
    assert f'<tr data-run="{first.pk}">' in page
    assert f'data-mean="{first.summary["metrics"]["mean_wait"]["mean"]}"' in page


def test_metrics_between_ten_and_a_hundred_thousand_read_as_numbers_not_exponents(alice):
    """A 95th-percentile wait of 12,034.7 s was printed '1.203e+04' beside a makespan of '86,400'; its
    interval's ends are parted by a dash, as a comma would read as one more thousands separator."""
    metrics = {"p95_wait": {"mean": 12034.7, "ci_low": 10456.2, "ci_high": 13613.2, "half_width": 1578.4,
                            "values": [11000.0, 13069.4]},
               "makespan": {"mean": 86400.0, "ci_low": None, "ci_high": None, "half_width": None,
                            "values": [86400.0, 86400.0]}}
    run = Run.objects.create(owner=alice, name="formats", spec={"name": "formats"}, status=Status.DONE,
                             summary={"replications": 2, "metrics": metrics})
    page = client_for(alice).get(reverse("runs:run", args=[run.pk])).content.decode()
    row = re.search(r'<tr data-metric="p95_wait".*?</tr>', page, re.S).group(0)
    cells = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row))
    assert "12,030" in cells and "[10,460 – 13,610]" in cells and "± 1578" in cells
    assert "e+" not in cells


def test_sweep_and_compare_legends_sit_under_the_plot_and_fit_its_width():
    """Inside the plot the sweep legend hid the top-right point (easy at load 0.7) and a compare
    legend of sweep-point names ran past the figure."""
    from bokeh.models import Legend

    from gridweb.runs.plots import LEGEND_CHARS, LEGEND_ROW, PLOT_HEIGHT, compare_figures, sweep_figure

    points = [{"values": {"platform.clusters.0.scheduler.name": name, "workload.streams.0.arrival.target_load": load},
               "metrics": {"mean_wait": {"mean": 1000 * load, "ci_low": None, "ci_high": None}}}
              for name in ("fcfs", "easy") for load in (0.5, 0.6, 0.7)]
    sweep = sweep_figure(points, "platform.clusters.0.scheduler.name", "mean_wait")
    arrays = {"series_time": np.array([0.0, 10.0]), "series_utilisation": np.array([0.5, 0.7]),
              "jobs_status": np.array([0, 0]), "jobs_warmup": np.array([0, 0]), "jobs_wait": np.array([1.0, 2.0])}
    long_name = "#19 walk sched x load [platform.clusters.0.scheduler.name=fcfs, workload.streams.0.arrival.target_load=0.5]"
    compared = compare_figures([(long_name, arrays), ("#20 short", arrays)])
    for fig, items in ((sweep, 3), (compared["utilisation"], 2), (compared["wait"], 2)):
        assert not [r for r in fig.center if isinstance(r, Legend)]
        (legend,) = [r for r in fig.below if isinstance(r, Legend)]
        assert len(legend.items) == items and fig.height == PLOT_HEIGHT + items * LEGEND_ROW
        assert all(len(item.label.value) <= LEGEND_CHARS for item in legend.items)
    labels = [item.label.value for item in compared["wait"].legend[0].items]
    assert labels == [long_name[:LEGEND_CHARS - 1] + "…", "#20 short"]
    assert [item.label.value for item in sweep.legend[0].items] == [
        f"arrival target load (stream 0) = {load}" for load in (0.5, 0.6, 0.7)]


def test_a_categorical_sweep_parameter_draws_its_series_side_by_side_unjoined():
    """Scheduler names on x: each load's points sat on the same x and the lines between the
    names hid each other; now each series is offset within its category and not joined."""
    from bokeh.models import Line, Scatter

    from gridweb.runs.plots import sweep_figure

    points = [{"values": {"platform.clusters.0.scheduler.name": name, "workload.streams.0.arrival.target_load": load},
               "metrics": {"mean_wait": {"mean": 1000 * load, "ci_low": 900 * load, "ci_high": 1100 * load,
                                         "replications": 5}}}
              for name in ("fcfs", "easy") for load in (0.5, 0.6, 0.7)]
    fig = sweep_figure(points, "platform.clusters.0.scheduler.name", "mean_wait")
    assert not [r for r in fig.renderers if isinstance(r.glyph, Line)]
    offsets = [r.glyph.x.transform.value for r in fig.renderers if isinstance(r.glyph, Scatter)]
    assert len(offsets) == 3 and len(set(offsets)) == 3 and abs(sum(offsets)) < 1e-9
    numeric = sweep_figure(points, "workload.streams.0.arrival.target_load", "mean_wait")
    assert len([r for r in numeric.renderers if isinstance(r.glyph, Line)]) == 2
    assert numeric.xaxis[0].axis_label == "arrival target load (stream 0)"


def test_a_sweep_exports_its_table_and_points_and_links_its_scenario(alice, bob):
    """CSV and JSON of every point: parameters, run, status, each metric's mean, interval,
    replications and shaky flag -- every metric the runs have, percentiles and per-cluster
    utilisation too; the JSON names the base scenario."""
    from gridweb.scenarios.models import Scenario

    spec = small_spec(replications=2)
    scenario = Scenario.objects.create(owner=alice, name="base", spec=spec)
    sweep = create_sweep(alice, spec, {"platform.clusters.0.scheduler.name": ["fcfs", "easy"]}, name="sched",
                         scenario=scenario)
    for run in sweep.runs.all():
        assert execute_run(run.pk) == Status.DONE
    sweep.refresh_from_db()
    owner = client_for(alice)
    page = owner.get(reverse("runs:sweep", args=[sweep.pk])).content.decode()
    assert f'href="/scenarios/{scenario.pk}/"' in page and "scheduler name (cluster 0)" in page

    table = owner.get(reverse("runs:sweep_export", args=[sweep.pk, "sweep.csv"]))
    assert table.status_code == 200 and table["Content-Disposition"] == f'attachment; filename="sweep-{sweep.pk}-sweep.csv"'
    rows = list(csv.DictReader(io.StringIO(table.content.decode())))
    assert [r["platform.clusters.0.scheduler.name"] for r in rows] == ["fcfs", "easy"]
    runs = {r.pk: r for r in sweep.runs.all()}
    for row in rows:
        stored = runs[int(row["run"])].summary["metrics"]
        assert float(row["mean_wait"]) == pytest.approx(stored["mean_wait"]["mean"])
        assert float(row["mean_wait.ci_low"]) == pytest.approx(stored["mean_wait"]["ci_low"])
        assert row["mean_wait.replications"] == "2" and row["mean_wait.shaky"]  # two replications: flagged
        assert {"p95_wait", "utilisation.a", "utilisation.b"} <= {k.split(".ci_")[0] for k in row}

    document = json.loads(owner.get(reverse("runs:sweep_export", args=[sweep.pk, "sweep.json"])).content)
    assert document["sweep"]["scenario"] == scenario.pk
    assert document["sweep"]["scenario_url"].endswith(f"/scenarios/{scenario.pk}/")
    assert document["sweep"]["parameters"] == {"platform.clusters.0.scheduler.name": ["fcfs", "easy"]}
    assert [p["parameters"] for p in document["points"]] == [{"platform.clusters.0.scheduler.name": "fcfs"},
                                                               {"platform.clusters.0.scheduler.name": "easy"}]
    assert all(p["engine_version"] == simengine.__version__ and "p95_wait" in p["metrics"] for p in document["points"])

    assert client_for(bob).get(reverse("runs:sweep_export", args=[sweep.pk, "sweep.csv"])).status_code == 404
    assert owner.get(reverse("runs:sweep_export", args=[sweep.pk, "sweep.xlsx"])).status_code == 404


def test_a_run_cancelled_before_any_segment_does_not_promise_a_gantt(alice):
    """Cancelled in its first replication, a run has no segments yet: the notice said 'the Gantt
    shows what it simulated before' over an empty chart."""
    empty = Run.objects.create(owner=alice, name="early", spec={"name": "early"}, status=Status.CANCELLED)
    partial = Run.objects.create(owner=alice, name="late", spec={"name": "late"}, status=Status.CANCELLED,
                                 segments_count=1200)
    client = client_for(alice)
    page = client.get(reverse("runs:run", args=[empty.pk])).content.decode()
    assert "there is no Gantt to show" in page and "shows what it simulated before" not in page
    page = client.get(reverse("runs:run", args=[partial.pk])).content.decode()
    assert "the Gantt shows what it simulated before" in page and "no Gantt to show" not in page


def test_the_research_group_is_named_only_when_the_run_or_scenario_is_shared_with_it(alice, lab):
    """'Private (only me) (lab)' read as if the lab could see the run."""
    from gridweb.scenarios.models import Scenario

    client = client_for(alice)
    for visibility, shown in ((Visibility.PRIVATE, False), (Visibility.GROUP, True), (Visibility.PUBLIC, False)):
        run = Run.objects.create(owner=alice, name="r", spec={"name": "r"}, status=Status.QUEUED, group=lab,
                                 visibility=visibility)
        header = client.get(reverse("runs:run", args=[run.pk])).content.decode().split('class="run-meta"')[1]
        header = re.sub(r"\s+", " ", header.split("</p>")[0])
        assert (f"{run.get_visibility_display()} (lab)" in header) is shown, header
        assert ("(lab)" in header) is shown
        scenario = Scenario.objects.create(owner=alice, name="s", spec=small_spec(), group=lab, visibility=visibility)
        eyebrow = client.get(reverse("scenarios:detail", args=[scenario.pk])).content.decode()
        eyebrow = eyebrow.split('<p class="eyebrow">')[1].split("</p>")[0]
        assert ("· lab" in eyebrow) is shown, eyebrow


def test_the_owner_shares_a_run_from_its_page_and_others_see_it_then(alice, bob, carol):
    """A run keeps the sharing it started with; its page lets the owner change it (issue: runs could
    only be shared through PATCH /api/runs/{id}/)."""
    run = finished_run(alice, Visibility.PRIVATE)
    url = reverse("runs:run", args=[run.pk])
    assert client_for(bob).get(url).status_code == 404
    page = client_for(alice).get(url).content.decode()
    assert 'id="share-form"' in page and 'id="cite-warning"' in page

    group = alice.groups.first()
    shared = client_for(alice).post(reverse("runs:share", args=[run.pk]),
                                    {"visibility": "group", "group": group.pk, "tags": "paper, fig3"})
    assert shared.status_code == 302
    run.refresh_from_db()
    assert (run.visibility, run.group, run.tags) == ("group", group, ["paper", "fig3"])
    carols = client_for(carol).get(url)  # carol is in alice's group: she sees it, without the owner's form
    assert carols.status_code == 200 and 'id="share-form"' not in carols.content.decode()

    # only the owner; a group the owner is not in is refused with the field named
    assert client_for(carol).post(reverse("runs:share", args=[run.pk]), {"visibility": "public"}).status_code == 403
    other = type(group).objects.create(name="not-alices")
    client_for(alice).post(reverse("runs:share", args=[run.pk]), {"visibility": "group", "group": other.pk})
    run.refresh_from_db()
    assert run.group == group
    client_for(alice).post(reverse("runs:share", args=[run.pk]), {"visibility": "public"})
    run.refresh_from_db()
    assert run.visibility == "public" and client_for(bob).get(url).status_code == 200


def test_a_run_page_gives_a_citation_with_what_reproduces_it(alice):
    from gridweb.runs.citation import citation

    run = finished_run(alice, Visibility.PUBLIC, name="EASY on {DAS-2} & 100% load_")
    page = client_for(alice).get(reverse("runs:run", args=[run.pk])).content.decode()
    cite = citation(run, f"http://testserver/runs/{run.pk}/")
    assert 'id="cite-warning"' not in page  # public: anyone can follow the link
    for fact in (run.scenario_hash, str(run.seed), run.engine_version, f"/runs/{run.pk}/"):
        assert fact in cite["text"] and fact in cite["bibtex"]
    assert r"title = {EASY on \{DAS-2\} \& 100\% load\_}" in cite["bibtex"]
    assert cite["bibtex"].startswith(f"@misc{{gridweb-run-{run.pk},")
    plain = cite["bibtex"].replace(r"\{", "").replace(r"\}", "")
    assert plain.count("{") == plain.count("}")
    import html

    assert html.escape(cite["text"], quote=False) in page.replace("&#x27;", "'")


def test_compare_pairs_runs_that_share_their_seeds_replication_by_replication(alice):
    """Issue: paired comparisons with common random numbers on the compare page. Two schedulers on
    the same seed and workload: the difference of each metric with its 95% CI and what it shows;
    a run with another seed is named as not paired, with the reason."""
    from simengine.statistics import paired_difference

    easy = finished_run(alice, name="easy", replications=5)
    spec = small_spec(replications=5, name="fcfs, fewer processors")
    spec["platform"]["clusters"][0].update(scheduler={"name": "fcfs"}, processors=12)
    fcfs = create_run(alice, spec, visibility=Visibility.PRIVATE, dispatch_now=False)
    assert execute_run(fcfs.pk) == Status.DONE
    other_seed = finished_run(alice, name="seed 4", replications=5, seed=4)
    for run in (easy, fcfs, other_seed):
        run.refresh_from_db()

    page = client_for(alice).get(reverse("runs:compare") + f"?runs={easy.pk}&runs={fcfs.pk}&runs={other_seed.pk}")
    html = page.content.decode()
    assert page.status_code == 200 and 'id="compare-paired-table"' in html
    assert f'data-unpaired="{other_seed.pk}"' in html and "its seed (4) is not" in html
    want = paired_difference(easy.summary["metrics"]["mean_wait"]["values"], fcfs.summary["metrics"]["mean_wait"]["values"])
    row = re.search(r'<table[^>]*id="compare-paired-table".*?<tr data-metric="mean_wait">(.*?)</tr>', html, re.S).group(1)
    assert f'data-verdict="{want["verdict"]}"' in row and want["verdict"] == "higher"  # fewer processors: longer waits
    from gridweb.runs.compare import format_number

    assert format_number(want["mean"]) in row and format_number(want["ci_low"]) in row
    # pairing narrows the interval of the difference (unpaired: the two half-widths combined)
    a, b = easy.summary["metrics"]["mean_wait"], fcfs.summary["metrics"]["mean_wait"]
    assert want["half_width"] < math.hypot(a["half_width"], b["half_width"])


def test_a_breakdown_row_is_labelled_by_its_metric_and_group():
    from gridweb.runs.compare import metrics_table
    rows = metrics_table([{"replications": 2, "metrics": {
        "failure_rate.priority_high": {"mean": 0.2, "ci_low": -0.1, "ci_high": 0.5, "values": [0.1, 0.3]},
        "availability.c1": {"mean": 0.9, "ci_low": 0.8, "ci_high": 1.1, "values": [0.85, 0.95]}}}])
    labels = {r.name: r.label for r in rows}
    assert labels == {"failure_rate.priority_high": "failure rate (priority high)",
                      "availability.c1": "availability of c1"}
    # each keeps its base metric's domain: a rate's interval is cut at 0 and 1
    cells = {r.name: r.cells[0] for r in rows}
    assert cells["failure_rate.priority_high"].ci_low == 0.0 and cells["availability.c1"].ci_high == 1.0


def test_a_download_is_streamed_gzip_compressed_when_taken_and_leaves_no_file_behind(alice):
    """Exports are written once into a folder of their own and sent a chunk at a time (never whole in
    memory), gzip-compressed for a client that accepts it; the folder goes once the response closed."""
    import gzip
    import tempfile
    from pathlib import Path

    run = finished_run(alice)
    owner = client_for(alice)
    url = run_urls(run)["jobs.csv"]
    before = set(Path(tempfile.gettempdir()).glob("gridweb-export-*"))
    plain = owner.get(url)
    assert plain.streaming and int(plain["Content-Length"]) > 0 and "Content-Encoding" not in plain
    text = downloaded(plain)
    assert len(text) == int(plain["Content-Length"])
    packed = owner.get(url, HTTP_ACCEPT_ENCODING="gzip, deflate")
    assert packed["Content-Encoding"] == "gzip" and "Accept-Encoding" in packed["Vary"]
    squeezed = downloaded(packed)
    assert gzip.decompress(squeezed) == text
    assert len(squeezed) < len(text) / 2, (len(squeezed), len(text))
    api = owner.get(f"/api/runs/{run.pk}/jobs.csv", HTTP_ACCEPT_ENCODING="gzip")
    assert gzip.decompress(downloaded(api)) == text
    assert set(Path(tempfile.gettempdir()).glob("gridweb-export-*")) == before


def test_under_asgi_a_download_streams_from_an_asynchronous_iterator(alice):
    """Served by an ASGI server (daphne), a synchronous iterator would be read whole before the first
    byte; the download gives it an asynchronous one, and the bytes are the same."""
    from asgiref.sync import async_to_sync
    from django.test import AsyncClient

    run = finished_run(alice)
    url = run_urls(run)["jobs.csv"]
    expected = downloaded(client_for(alice).get(url))

    async def fetch():
        client = AsyncClient()
        await client.aforce_login(alice)
        response = await client.get(url)
        assert response.streaming and response.is_async
        body = b"".join([chunk async for chunk in response.streaming_content])
        await response.aclose() if hasattr(response, "aclose") else response.close()
        return body

    assert async_to_sync(fetch)() == expected


def test_batsim_jobs_are_made_as_they_are_sent_and_equal_the_engines_file(alice, tmp_path):
    """The Batsim file streams slice by slice as the engine makes it (no file, no length), plain or
    gzip-compressed, with the bytes of the engine's own writer."""
    import gzip

    from gridweb.runs.exports import result_of

    run = finished_run(alice)
    result_of(run).write_batsim_jobs(tmp_path / "engine.csv")
    expected = (tmp_path / "engine.csv").read_bytes()
    owner = client_for(alice)
    plain = owner.get(run_urls(run)["batsim_jobs.csv"])
    assert plain.streaming and "Content-Length" not in plain
    assert downloaded(plain) == expected
    packed = owner.get(run_urls(run)["batsim_jobs.csv"], HTTP_ACCEPT_ENCODING="gzip")
    assert gzip.decompress(downloaded(packed)) == expected
