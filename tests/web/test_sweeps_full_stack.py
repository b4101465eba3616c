"""A parameter sweep fanned out over the live full-stack site's two workers, and aggregated."""

from __future__ import annotations

import itertools
import json
import time

import psycopg
import pytest

pytestmark = pytest.mark.slow

BASE_SPEC = {
    "name": "sweep base",
    "platform": {"clusters": [{"name": "main", "processors": 64, "scheduler": {"name": "easy"}}]},
    "workload": {"streams": [{
        "kind": "synthetic", "name": "users", "target": "main", "arrival": {"target_load": 0.6},
        "size": {"kind": "uniform", "low": 1, "high": 32, "integer": True},
        "runtime": {"kind": "exponential", "mean": 600},
        "estimate": {"kind": "factor", "factor": {"kind": "uniform", "low": 1, "high": 3}},
    }]},
    "run": {"seed": 21, "replications": 4, "stop": {"completions": 6000}, "warmup": {"completions": 500}},
}
PARAMETERS = {
    "workload.streams.0.arrival.target_load": [0.5, 0.6, 0.7, 0.8],
    "platform.clusters.0.scheduler.name": ["fcfs", "easy"],
}

CREATE_SWEEP = """
import json
from django.contrib.auth.models import User
from gridweb.runs.services import create_sweep
user, _ = User.objects.get_or_create(username="sweeper")
sweep = create_sweep(user, json.loads({spec!r}), json.loads({parameters!r}), name="loads x schedulers",
                     tags=["sweep-test"])
print(json.dumps(sweep.pk))
"""


def sweep_state(database_url: str, sweep_id: int) -> tuple[str, list, list[tuple]]:
    with psycopg.connect(database_url) as conn:
        status, aggregate = conn.execute("SELECT status, aggregate FROM runs_sweep WHERE id = %s",
                                         [sweep_id]).fetchone()
        runs = conn.execute("SELECT id, status, worker, task_id, sweep_point, summary, error FROM runs_run "
                            "WHERE sweep_id = %s ORDER BY id", [sweep_id]).fetchall()
    return status, aggregate, runs


def test_a_sweep_of_eight_points_spreads_over_both_workers_and_is_aggregated(full_stack_site):
    sweep_id = full_stack_site.python_json(CREATE_SWEEP.format(spec=json.dumps(BASE_SPEC),
                                                               parameters=json.dumps(PARAMETERS)))
    database_url = full_stack_site.env["DATABASE_URL"]

    deadline = time.monotonic() + 300
    while (state := sweep_state(database_url, sweep_id))[0] not in ("done", "failed", "cancelled"):
        assert time.monotonic() < deadline, f"sweep still {state[0]}: {[r[1] for r in state[2]]}"
        time.sleep(0.5)
    status, aggregate, runs = state

    assert status == "done", [r[6] for r in runs]
    assert len(runs) == 8 and all(r[1] == "done" for r in runs)
    assert all(r[3] for r in runs)  # each point was its own Celery task
    workers = {r[2] for r in runs}
    assert {w.split("@")[0] for w in workers} == {"worker1", "worker2"}, workers
    # Every combination of the grid is one point.
    combinations = [dict(zip(PARAMETERS, values)) for values in itertools.product(*PARAMETERS.values())]
    assert sorted(json.dumps(r[4], sort_keys=True) for r in runs) == \
        sorted(json.dumps(c, sort_keys=True) for c in combinations)

    # One aggregate row per point, with the point's values and its metrics' 95% CIs.
    assert [row["run"] for row in aggregate] == [r[0] for r in runs]
    for row, run in zip(aggregate, runs):
        assert row["parameters"] == run[4] and row["status"] == "done"
        for name in ("mean_wait", "mean_response", "utilisation", "throughput"):
            stored = run[5]["metrics"][name]
            ci = row["metrics"][name]
            assert ci == {"mean": stored["mean"], "ci_low": stored["ci_low"], "ci_high": stored["ci_high"],
                          "half_width": stored["half_width"], "shaky": stored["shaky"], "replications": 4}
            assert ci["ci_low"] < ci["mean"] < ci["ci_high"]  # 4 replications: a real interval
    # Offered load shows in the measured utilisation, point by point.
    by_point = {(r["parameters"]["workload.streams.0.arrival.target_load"],
                 r["parameters"]["platform.clusters.0.scheduler.name"]): r for r in aggregate}
    for scheduler in ("fcfs", "easy"):
        utilisations = [by_point[(load, scheduler)]["metrics"]["utilisation"]["mean"] for load in (0.5, 0.8)]
        assert utilisations[0] < utilisations[1]
    # Aggregated once, by the worker that ended the last point (the points go through the fair
    # dispatcher like any run, no chord): after every point ended.
    with psycopg.connect(database_url) as conn:
        aggregated, last_point = conn.execute(
            "SELECT s.finished_at, max(r.finished_at) FROM runs_sweep s JOIN runs_run r ON r.sweep_id = s.id "
            "WHERE s.id = %s GROUP BY s.finished_at", [sweep_id]).fetchone()
    assert aggregated >= last_point
