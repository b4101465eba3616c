"""Executing runs in embedded mode: statuses, stored chunks and results, errors, cancel,
redelivery, recovery after a restart, and sweeps through the embedded worker."""

from __future__ import annotations

import json
import os
import signal
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import psycopg
import pytest
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

import simengine
from gridweb.runs import execution, result_store
from gridweb.runs.models import Run, RunChunk, RunResult, Status, Sweep
from gridweb.runs.services import CannotCancel, cancel_run, create_run, create_sweep
from gridweb.runs.thumbnails import busy_fraction, gantt_thumbnail
from gridweb.scenarios.models import TraceFile
from gridweb.scenarios.validation import SpecInvalid
from tests.conftest import ROOT

pytestmark = pytest.mark.django_db(transaction=True)


def small_spec(seed: int = 7, replications: int = 2, completions: int = 1500) -> dict:
    """One EASY cluster fed by a synthetic stream: a run of a second or two."""
    return {
        "name": "small",
        "platform": {"clusters": [{"name": "main", "processors": 32, "scheduler": {"name": "easy"}}]},
        "workload": {"streams": [{
            "kind": "synthetic", "name": "users", "target": "main",
            "arrival": {"target_load": 0.7},
            "size": {"kind": "uniform", "low": 1, "high": 16, "integer": True},
            "runtime": {"kind": "exponential", "mean": 600},
        }]},
        "run": {"seed": seed, "replications": replications, "stop": {"completions": completions},
                "warmup": {"completions": 100}},
    }


def wait_for(run: Run, statuses: tuple[str, ...], timeout: float = 120) -> Run:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status in statuses:
            return run
        time.sleep(0.05)
    raise AssertionError(f"run {run.pk} still {run.status} after {timeout} s (wanted {statuses})")


def chunk_seqs(run: Run) -> list[int]:
    return list(RunChunk.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", password="pw-alice-123")


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user("bob", password="pw-bob-123")


@pytest.fixture(autouse=True)
def idle_worker():
    """Each test starts and ends with the embedded worker idle (it outlives tests: one per process)."""
    assert execution.embedded_worker().wait_idle(120)
    yield
    assert execution.embedded_worker().wait_idle(120), "the embedded worker did not finish its queue"


def test_run_goes_queued_running_done_with_its_chunks_and_result(alice, monkeypatch):
    seen_when_engine_starts: dict = {}
    real_run = simengine.run

    def observed_run(scenario, on_progress, **options):
        seen_when_engine_starts.update(Run.objects.filter(name="watched").values(
            "status", "started_at", "worker").get())
        return real_run(scenario, on_progress, **options)

    monkeypatch.setattr(execution.simengine, "run", observed_run)

    run = create_run(alice, small_spec(), name="watched")
    assert run.status == Status.QUEUED
    run = wait_for(run, (Status.DONE, Status.FAILED))

    assert run.status == Status.DONE, run.error
    assert seen_when_engine_starts["status"] == Status.RUNNING
    assert seen_when_engine_starts["started_at"] is not None
    assert seen_when_engine_starts["worker"] == f"embedded@{os.uname().nodename}:{os.getpid()}"
    assert run.finished_at >= run.started_at

    seqs = chunk_seqs(run)
    assert seqs == list(range(run.last_seq + 1)) and len(seqs) >= 3
    kinds = list(RunChunk.objects.filter(run=run).order_by("seq").values_list("kind", flat=True))
    assert kinds[-1] == "metrics" and "segments" in kinds
    streamed = sum(c.rows for c in RunChunk.objects.filter(run=run, kind="segments"))

    with result_store.open_npz(RunResult.objects.get(run=run)) as arrays:
        jobs = len(arrays["jobs_job_id"])
        segments = len(arrays["segments_t0"])
    assert jobs == run.summary["jobs"] > 1500
    assert segments == run.segments_count == streamed > 0
    assert run.progress == 1.0 and run.sim_time > 0
    assert run.thumbnail.startswith("<svg") and len(run.thumbnail) < 8000


def test_an_evolving_run_shows_progress_while_it_plans_before_its_gantt(alice, monkeypatch):
    """Algorithm 2 plans every application before any Gantt row exists (docs/evolving.md): the
    run's progress must still move, stored as chunks ahead of the first Gantt chunk."""
    from simengine import driver
    from simengine.evolving.run import plan_share

    monkeypatch.setattr(driver, "STEP_REPORT_SECONDS", 0.1)  # (the embedded worker is a thread here)
    spec = {"name": "evolving plan", "run": {"seed": 3},
            "platform": {"clusters": [{"name": "c", "processors": 100, "scheduler": {
                "name": "evolving", "params": {"algorithm": "mic+c"}}}]},
            "workload": {"streams": [{"kind": "evolving", "name": "apps", "target": "c", "generate": {
                "applications": [5000, 5000], "stages": [10, 10]}}]}}  # a plan of a second or two
    run = wait_for(create_run(alice, spec), (Status.DONE, Status.FAILED))
    assert run.status == Status.DONE, run.error
    chunks = list(RunChunk.objects.filter(run=run).order_by("seq").values_list("kind", "payload"))
    first_gantt = next(i for i, (kind, _) in enumerate(chunks) if kind == "segments")
    planning = [payload["fraction"] for kind, payload in chunks[:first_gantt]]
    assert planning and all(kind == "progress" for kind, _ in chunks[:first_gantt])
    # (the plan's last report may come at its very end: exactly its share)
    assert planning == sorted(planning) and 0 < planning[0] and planning[-1] <= plan_share(50_000)
    assert run.progress == 1.0


def test_same_spec_and_seed_give_the_same_hash_and_metrics(alice):
    first = create_run(alice, small_spec(seed=11))
    second = create_run(alice, small_spec(seed=11))
    other = create_run(alice, small_spec(seed=12))
    for run in (first, second, other):
        wait_for(run, (Status.DONE,))

    assert first.scenario_hash == second.scenario_hash != other.scenario_hash
    assert first.summary["metrics"] == second.summary["metrics"]
    assert first.summary["metrics"]["mean_wait"] != other.summary["metrics"]["mean_wait"]


CORRUPT_SWF = (
    "; Version: 2.2\n"
    "1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
    "2 10 0 abc 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
)


def test_run_of_a_corrupt_trace_fails_naming_the_line_and_keeps_no_result(alice, settings):
    # Stored through the ORM: an upload would have been refused (gridweb.scenarios.traces).
    TraceFile.objects.create(owner=alice, name="broken", stored_name="broken.swf", original_name="broken.swf",
                             format="swf", content=CORRUPT_SWF.encode(), size=len(CORRUPT_SWF), sha256="x")
    spec = small_spec()
    spec["workload"]["streams"] = [{"kind": "trace", "name": "t", "path": "broken.swf", "target": "main"}]
    spec["run"] = {"seed": 1}
    # The server's job limit reads the trace to count its jobs: the run is refused at submit ...
    with pytest.raises(SpecInvalid) as refused:
        create_run(alice, spec)
    assert list(refused.value.errors) == ["workload.streams.0.path"]
    message = refused.value.errors["workload.streams.0.path"][0]
    assert "broken.swf, line 3" in message and "abc" in message and str(execution.trace_dir()) not in message
    assert not Run.objects.exists()
    # ... and without job limits it is taken, and fails in the worker naming the line.
    settings.GRIDWEB_LIMITS = {**settings.GRIDWEB_LIMITS, "jobs": None, "stored_rows": None}
    run = wait_for(create_run(alice, spec), (Status.DONE, Status.FAILED))

    assert run.status == Status.FAILED
    assert "broken.swf, line 3" in run.error and "abc" in run.error
    assert str(execution.trace_dir()) not in run.error  # no server paths in what users see
    assert not RunResult.objects.filter(run=run).exists()


def test_a_run_whose_python_policy_raises_fails_naming_the_policy_and_its_line(alice, monkeypatch):
    """A researcher's scheduler (installed on the server) with a bug: the run page shows which
    policy raised what, when and where -- not a bare ``ZeroDivisionError``."""
    from simengine.policy import register
    from simengine.registry import LOCAL_SCHEDULERS
    from tests.simengine.test_policy import Crashing

    monkeypatch.setattr(LOCAL_SCHEDULERS, "_entries", dict(LOCAL_SCHEDULERS._entries))  # (registered for this test)
    register(Crashing)
    spec = small_spec(replications=1)
    spec["platform"]["clusters"][0]["scheduler"] = {"name": "test-crashing"}
    run = wait_for(create_run(alice, spec), (Status.DONE, Status.FAILED))
    assert run.status == Status.FAILED
    assert run.error.startswith("test-crashing: schedule() at t=") and "raised ZeroDivisionError: division by zero (" \
        in run.error and "(simengine/test_policy.py, line" in run.error and str(ROOT) not in run.error
    assert not RunResult.objects.filter(run=run).exists()


def test_cancel_of_a_queued_run_ends_it_at_once_and_it_never_runs(alice, bob):
    run = create_run(alice, small_spec(), dispatch_now=False)

    with pytest.raises(PermissionDenied):
        cancel_run(run, bob)
    run.refresh_from_db()
    assert run.status == Status.QUEUED and not run.cancel_requested

    cancelled = cancel_run(run, alice)
    assert cancelled.status == Status.CANCELLED and cancelled.finished_at is not None

    # A delivery that arrives anyway (the message was already on its way) does nothing.
    assert execution.execute_run(run.pk) == execution.SKIPPED
    run.refresh_from_db()
    assert run.status == Status.CANCELLED
    assert chunk_seqs(run) == []
    assert cancel_run(run, alice).status == Status.CANCELLED  # twice is fine


def test_cancel_of_a_running_run_stops_it_before_the_end(alice):
    # Replication 0's Gantt is streamed first; then 150 more replications keep the run going
    # (several seconds even on a fast machine, so the cancel lands mid-run).
    run = create_run(alice, small_spec(replications=150, completions=8000))
    deadline = time.monotonic() + 60
    while not RunChunk.objects.filter(run=run).exists():
        assert time.monotonic() < deadline, "no chunk arrived"
        time.sleep(0.02)

    cancel_run(Run.objects.get(pk=run.pk), run.owner)
    run = wait_for(run, (Status.DONE, Status.FAILED, Status.CANCELLED), timeout=60)

    assert run.status == Status.CANCELLED, run.error
    assert run.cancel_requested and run.finished_at is not None
    assert not RunResult.objects.filter(run=run).exists()
    kinds = set(RunChunk.objects.filter(run=run).values_list("kind", flat=True))
    assert "segments" in kinds and "metrics" not in kinds  # stopped before the last replication
    with pytest.raises(CannotCancel):
        done = create_run(run.owner, small_spec(replications=1), dispatch_now=False)
        execution.execute_run(done.pk)
        cancel_run(done, run.owner)


def test_a_second_delivery_does_not_duplicate_chunks(alice):
    run = create_run(alice, small_spec(), dispatch_now=False)
    assert execution.execute_run(run.pk) == execution.DONE
    first = list(RunChunk.objects.filter(run=run).order_by("seq").values_list("seq", "payload"))

    assert execution.execute_run(run.pk) == execution.SKIPPED

    assert list(RunChunk.objects.filter(run=run).order_by("seq").values_list("seq", "payload")) == first
    assert Run.objects.get(pk=run.pk).attempt == 1


def test_a_delivery_after_its_worker_died_restarts_the_run_cleanly(alice):
    run = create_run(alice, small_spec(), dispatch_now=False)
    assert execution.execute_run(run.pk) == execution.DONE
    complete = list(RunChunk.objects.filter(run=run).order_by("seq").values_list("seq", "payload"))
    # As if a worker had died half-way: running, some chunks, no heartbeat for minutes.
    RunResult.objects.filter(run=run).delete()
    RunChunk.objects.filter(run=run, seq__gte=2).delete()
    stale = timezone.now() - execution.HEARTBEAT_STALE - timedelta(seconds=1)
    Run.objects.filter(pk=run.pk).update(status=Status.RUNNING, heartbeat=stale, finished_at=None)

    assert execution.execute_run(run.pk) == execution.DONE

    run.refresh_from_db()
    assert run.attempt == 2
    assert list(RunChunk.objects.filter(run=run).order_by("seq").values_list("seq", "payload")) == complete


def test_a_delivery_while_another_execution_is_alive_waits(alice):
    run = create_run(alice, small_spec(), dispatch_now=False)
    Run.objects.filter(pk=run.pk).update(status=Status.RUNNING, attempt=1, heartbeat=timezone.now(),
                                         worker="worker9@elsewhere")

    assert execution.execute_run(run.pk) == execution.BUSY

    run.refresh_from_db()
    assert (run.status, run.attempt, run.worker) == (Status.RUNNING, 1, "worker9@elsewhere")
    assert chunk_seqs(run) == []


def test_a_cancelled_run_whose_execution_died_is_ended_cancelled_not_restarted(alice):
    # as when a cancel terminates the process: the recovery sweep may deliver it again before the
    # worker's main process has marked it cancelled
    run = create_run(alice, small_spec(), dispatch_now=False)
    assert execution.execute_run(run.pk) == execution.DONE
    RunResult.objects.filter(run=run).delete()
    RunChunk.objects.filter(run=run, seq__gte=2).delete()
    stale = timezone.now() - execution.HEARTBEAT_STALE - timedelta(seconds=1)
    Run.objects.filter(pk=run.pk).update(status=Status.RUNNING, heartbeat=stale, finished_at=None,
                                         cancel_requested=True, worker="worker1@gone", last_seq=40)

    assert execution.execute_run(run.pk) == execution.SKIPPED

    run.refresh_from_db()
    assert (run.status, run.attempt) == (Status.CANCELLED, 1)
    assert chunk_seqs(run) == [0, 1] and run.last_seq == 1  # the chunks it kept, and a count that agrees


def test_a_run_that_keeps_killing_its_worker_fails_instead_of_looping(alice):
    run = create_run(alice, small_spec(), dispatch_now=False)
    stale = timezone.now() - execution.HEARTBEAT_STALE - timedelta(seconds=1)
    Run.objects.filter(pk=run.pk).update(status=Status.RUNNING, attempt=execution.MAX_ATTEMPTS, heartbeat=stale,
                                         worker="worker1@gone")

    assert execution.execute_run(run.pk) == execution.SKIPPED

    run.refresh_from_db()
    assert run.status == Status.FAILED
    assert f"interrupted {execution.MAX_ATTEMPTS} times" in run.error and "worker1@gone" in run.error


def dead_pid() -> int:
    """The id of a process of this machine that is gone (a child that has exited)."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def test_the_recovery_sweep_hands_lost_runs_over_once_and_again_only_when_that_went_stale(alice, monkeypatch):
    delivered = []
    monkeypatch.setattr(execution, "embedded", lambda: False)  # as in full-stack mode: Celery tasks
    monkeypatch.setattr(execution, "send_task", lambda name, args, task_id: delivered.append((name, args[0])))
    now = timezone.now()
    long_ago = now - execution.HEARTBEAT_STALE - timedelta(seconds=1)
    here = os.uname().nodename

    def running(worker: str, heartbeat) -> Run:
        run = create_run(alice, small_spec(), dispatch_now=False)
        Run.objects.filter(pk=run.pk).update(status=Status.RUNNING, attempt=1, worker=worker, heartbeat=heartbeat,
                                             started_at=long_ago, dispatched_at=long_ago)
        return run

    silent_elsewhere = running("worker7@gone-machine:4242", long_ago)
    dead_here = running(f"worker1@{here}:{dead_pid()}", now)  # killed whole a moment ago
    alive_elsewhere = running("worker8@other-machine:77", now)
    alive_here = running(f"worker2@{here}:{os.getpid()}", long_ago)  # a process that exists ...
    execution._active_runs.add(alive_here.pk)  # ... and runs it (this one)
    try:
        assert execution.recover_lost_runs() == [silent_elsewhere.pk, dead_here.pk]
        assert delivered == [(execution.EXECUTE_RUN, silent_elsewhere.pk), (execution.EXECUTE_RUN, dead_here.pk)]
        # the deliveries wait in the queue: the next sweeps leave them be ...
        assert execution.recover_lost_runs() == []
        # ... until that hand-over is stale too (its message was lost as well)
        Run.objects.filter(pk=dead_here.pk).update(dispatched_at=long_ago + timedelta(seconds=0.5))
        assert execution.recover_lost_runs() == [dead_here.pk]
    finally:
        execution._active_runs.discard(alive_here.pk)
    assert alive_elsewhere.pk not in delivered and alive_here.pk not in delivered
    assert Run.objects.get(pk=dead_here.pk).status == Status.RUNNING  # the delivery decides, not the sweep


def test_the_dispatcher_hands_runs_over_round_robin_with_a_share_per_user(alice, bob, django_user_model,
                                                                         monkeypatch, settings):
    carol = django_user_model.objects.create_user("carol")
    settings.GRIDWEB_USER_RUNS_IN_FLIGHT = 2
    sent = []
    monkeypatch.setattr(execution, "embedded", lambda: False)  # as in full-stack mode: Celery tasks
    monkeypatch.setattr(execution, "send_task", lambda name, args, task_id: sent.append(args[0]))
    with transaction.atomic():  # one dispatch pass when it commits
        a = [create_run(alice, small_spec(seed=i)).pk for i in range(4)]
        b = [create_run(bob, small_spec(seed=i)).pk for i in range(2)]
        c = [create_run(carol, small_spec(seed=0)).pk]

    # each user's first run, then each user's second: alice's other two wait in the database
    assert sent == [a[0], b[0], c[0], a[1], b[1]]
    assert set(Run.objects.filter(dispatched_at=None).values_list("pk", flat=True)) == {a[2], a[3]}
    assert execution.dispatch_waiting() == []  # her share is taken

    Run.objects.filter(pk=a[0]).update(status=Status.DONE)  # one of hers ends: the next goes
    assert execution.dispatch_waiting() == [a[2]]

    def broker_down(name, args, task_id):
        raise OSError("Connection refused")

    monkeypatch.setattr(execution, "send_task", broker_down)
    Run.objects.filter(pk=a[1]).update(status=Status.DONE)
    assert execution.dispatch_waiting() == []  # the send failed: the run is not marked handed over
    assert Run.objects.get(pk=a[3]).dispatched_at is None and Run.objects.get(pk=a[3]).task_id == ""


def test_a_restarted_embedded_worker_fails_interrupted_runs_and_requeues_queued_ones(alice):
    pid = dead_pid()
    interrupted = create_run(alice, small_spec(), dispatch_now=False)
    Run.objects.filter(pk=interrupted.pk).update(status=Status.RUNNING, attempt=1, heartbeat=timezone.now(),
                                                 worker=f"embedded@{os.uname().nodename}:{pid}")
    waiting = create_run(alice, small_spec(), dispatch_now=False)

    fresh = execution.EmbeddedWorker()  # what a restarted web process creates
    fresh.start()
    assert fresh.wait_idle(120)

    interrupted.refresh_from_db()
    assert interrupted.status == Status.FAILED and "interrupted" in interrupted.error
    assert wait_for(waiting, (Status.DONE,)).status == Status.DONE


# --- Thumbnails -----------------------------------------------------------------------------------


def test_thumbnail_busy_fraction_integrates_the_segments_exactly():
    # 4 processors over [0, 100): 2 held for [0, 50), 2 for [0, 100) → slices of 25 s: 1, 1, 0.5, 0.5
    segments = {"cluster": [0, 0, 1], "t0": [0.0, 0.0, 0.0], "t1": [50.0, 100.0, 100.0],
                "processors": [2, 2, 8]}

    assert busy_fraction(segments, 0, 4, 100.0, 4).tolist() == [1.0, 1.0, 0.5, 0.5]
    assert busy_fraction(segments, 1, 16, 100.0, 2).tolist() == [0.5, 0.5]


@pytest.mark.parametrize("clusters", [1, 16])
def test_thumbnail_of_forty_thousand_jobs_is_a_few_kilobytes(clusters):
    rng = np.random.default_rng(3)
    n = 40_000
    t0 = np.sort(rng.uniform(0, 3e7, n))
    segments = {"cluster": rng.integers(0, clusters, n), "t0": t0, "t1": t0 + rng.exponential(2e4, n),
                "processors": rng.integers(1, 8, n)}

    svg = gantt_thumbnail(segments, [f"c{i}" for i in range(clusters)], [64] * clusters)

    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert svg.count("<path") == clusters
    assert len(svg.encode()) < 6_000


# --- Sweeps in embedded mode ---------------------------------------------------------------------


def test_sweep_runs_every_point_and_aggregates_with_confidence_intervals(alice):
    sweep = create_sweep(alice, small_spec(replications=3, completions=800),
                         {"workload.streams.0.arrival.target_load": [0.5, 0.8],
                          "platform.clusters.0.scheduler.name": ["fcfs", "easy"]}, name="loads")

    runs = list(Run.objects.filter(sweep=sweep).order_by("pk"))
    assert len(runs) == 4
    assert [r.sweep_point for r in runs][0] == {"workload.streams.0.arrival.target_load": 0.5,
                                                "platform.clusters.0.scheduler.name": "fcfs"}
    deadline = time.monotonic() + 120
    while Sweep.objects.get(pk=sweep.pk).status not in (Status.DONE, Status.FAILED):
        assert time.monotonic() < deadline
        time.sleep(0.1)

    sweep.refresh_from_db()
    assert sweep.status == Status.DONE and sweep.finished_at is not None
    assert [row["run"] for row in sweep.aggregate] == [r.pk for r in runs]
    for row, run in zip(sweep.aggregate, runs):
        run.refresh_from_db()
        wait = run.summary["metrics"]["mean_wait"]
        assert row["parameters"] == run.sweep_point
        assert row["metrics"]["mean_wait"] == {"mean": wait["mean"], "ci_low": wait["ci_low"],
                                               "ci_high": wait["ci_high"], "half_width": wait["half_width"],
                                               "shaky": wait["shaky"], "replications": len(wait["values"])}
        assert row["metrics"]["mean_wait"]["ci_low"] <= row["metrics"]["mean_wait"]["mean"] \
            <= row["metrics"]["mean_wait"]["ci_high"]
    # Higher load, longer waits (same scheduler): the points really differ.
    assert sweep.aggregate[2]["metrics"]["mean_wait"]["mean"] > sweep.aggregate[0]["metrics"]["mean_wait"]["mean"]


def test_a_failed_point_fails_the_sweep_but_keeps_the_others(alice, monkeypatch):
    from gridweb.runs import services

    spec = small_spec(replications=1, completions=500)
    monkeypatch.setattr(services, "_dispatch_sweep", lambda sweep_id: None)  # (dispatched below)
    sweep = create_sweep(alice, spec, {"run.seed": [1, 2]})
    first, second = Run.objects.filter(sweep=sweep).order_by("pk")
    # The second point's snapshot breaks after validation (as a trace deleted meanwhile would),
    # before any worker can have read it
    Run.objects.filter(pk=second.pk).update(spec={"platform": "nonsense"})
    execution.dispatch_sweep(sweep.pk)
    deadline = time.monotonic() + 120
    while Sweep.objects.get(pk=sweep.pk).status not in (Status.DONE, Status.FAILED):
        assert time.monotonic() < deadline
        time.sleep(0.1)

    sweep.refresh_from_db()
    assert sweep.status == Status.FAILED
    assert [row["status"] for row in sweep.aggregate] == [Status.DONE, Status.FAILED]
    assert sweep.aggregate[0]["metrics"]["mean_wait"]["mean"] is not None
    assert sweep.aggregate[1]["metrics"] == {}
    assert "platform" in Run.objects.get(pk=second.pk).error


def test_a_sweep_with_a_bad_point_says_which_and_creates_nothing(alice):
    with pytest.raises(SpecInvalid) as caught:
        create_sweep(alice, small_spec(), {"platform.clusters.0.processors": [16, 0]})

    errors = caught.value.errors
    assert list(errors) == ["parameters.platform.clusters.0.processors"]
    assert "platform.clusters.0.processors=0" in errors["parameters.platform.clusters.0.processors"][0]
    assert not Sweep.objects.exists() and not Run.objects.exists()


@pytest.mark.parametrize(("parameters", "field"), [
    ({}, "parameters"),
    ({"run.seed": []}, "parameters.run.seed"),
    ({"run.seed": list(range(300))}, "parameters"),
    ({"platform.clusters.5.processors": [1, 2]}, "parameters.platform.clusters.5.processors"),
])
def test_a_bad_sweep_grid_is_refused_by_field(alice, parameters, field):
    with pytest.raises(SpecInvalid) as caught:
        create_sweep(alice, small_spec(), parameters)

    assert field in caught.value.errors
    assert not Sweep.objects.exists() and not Run.objects.exists()


def test_a_sweep_with_a_bad_base_scenario_names_its_field(alice):
    spec = small_spec()
    spec["platform"]["clusters"][0]["processors"] = -3

    with pytest.raises(SpecInvalid) as caught:
        create_sweep(alice, spec, {"run.seed": [1, 2]}, visibility="everyone")

    assert "visibility" in caught.value.errors
    with pytest.raises(SpecInvalid) as caught:
        create_sweep(alice, spec, {"run.seed": [1, 2]})
    assert "platform.clusters.0.processors" in caught.value.errors
    assert not Sweep.objects.exists() and not Run.objects.exists()


# --- Full stack: cancel and worker loss on the live site's Celery workers -----------------------

# One replication of a minute or more, and no progress callback until it ends: only terminating
# its process can stop it quickly.
LONG_REPLICATION = {
    "name": "one long replication",
    "platform": {"clusters": [{"name": "main", "processors": 128, "scheduler": {"name": "conservative"}}]},
    "workload": {"streams": [{
        "kind": "synthetic", "name": "users", "target": "main", "arrival": {"target_load": 0.95},
        "size": {"kind": "uniform", "low": 1, "high": 64, "integer": True},
        "runtime": {"kind": "exponential", "mean": 600},
        "estimate": {"kind": "factor", "factor": {"kind": "uniform", "low": 1, "high": 5}},
    }]},
    "run": {"seed": 3, "replications": 1, "stop": {"completions": 90000}},
}

# Several seconds of replications after replication 0's segments are streamed.
SEVERAL_REPLICATIONS = small_spec(seed=9, replications=13, completions=15000)
SEVERAL_REPLICATIONS["platform"]["clusters"][0] = {"name": "main", "processors": 128,
                                                   "scheduler": {"name": "conservative"}}
SEVERAL_REPLICATIONS["workload"]["streams"][0]["arrival"]["target_load"] = 0.9
SEVERAL_REPLICATIONS["workload"]["streams"][0]["size"]["high"] = 64

START_RUN = """
import json
from django.contrib.auth.models import User
from gridweb.runs.services import create_run
user, _ = User.objects.get_or_create(username="canceller")
print(json.dumps(create_run(user, json.loads({spec!r})).pk))
"""

CANCEL_RUN = """
import json
from gridweb.runs.models import Run
from gridweb.runs.services import cancel_run
run = Run.objects.get(pk={run_id})
print(json.dumps(cancel_run(run, run.owner).status))
"""


def site_run(database_url: str, run_id: int) -> dict:
    with psycopg.connect(database_url) as conn:
        row = conn.execute("SELECT status, worker, attempt, error, task_id, cancel_requested, last_seq, "
                           "segments_count FROM runs_run WHERE id = %s", [run_id]).fetchone()
        seqs = [r[0] for r in conn.execute("SELECT seq FROM runs_runchunk WHERE run_id = %s ORDER BY seq",
                                           [run_id]).fetchall()]
        results = conn.execute("SELECT count(*) FROM runs_runresult WHERE run_id = %s", [run_id]).fetchone()[0]
    return dict(zip(("status", "worker", "attempt", "error", "task_id", "cancel_requested", "last_seq",
                     "segments_count"), row),
                seqs=seqs, results=results)


def wait_on_site(database_url: str, run_id: int, done, timeout: float, what: str) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        state = site_run(database_url, run_id)
        if done(state):
            return state
        assert time.monotonic() < deadline, f"run {run_id}: {what} within {timeout} s; it is {state}"
        time.sleep(0.2)


@pytest.mark.slow
def test_full_stack_cancel_terminates_a_running_replication(full_stack_site):
    database_url = full_stack_site.env["DATABASE_URL"]
    run_id = full_stack_site.python_json(START_RUN.format(spec=json.dumps(LONG_REPLICATION)))
    running = wait_on_site(database_url, run_id, lambda s: s["status"] == "running", 60, "start")
    assert running["task_id"] and running["worker"].startswith("worker")

    assert full_stack_site.python_json(CANCEL_RUN.format(run_id=run_id)) == "running"  # cancel requested
    began = time.monotonic()
    ended = wait_on_site(database_url, run_id, lambda s: s["status"] != "running", 30, "stop")

    assert ended["status"] == "cancelled" and ended["cancel_requested"] and ended["error"] == ""
    assert time.monotonic() - began < 30  # the replication alone takes minutes
    # the chunks it streamed while it simulated stay (the Gantt of what it simulated), numbered
    # without a gap; there is no result
    assert ended["seqs"] == list(range(len(ended["seqs"]))) and ended["results"] == 0
    assert ended["last_seq"] == len(ended["seqs"]) - 1  # the run agrees with its chunks, however it ended
    logs = full_stack_site.log("worker1") + full_stack_site.log("worker2")
    if "Terminating" in logs and running["task_id"] in logs:
        # Celery killed the process running it: gone at once, not when its replication would have ended
        pid = int(running["worker"].rpartition(":")[2])
        while process_exists(pid):
            assert time.monotonic() - began < 30, f"worker process {pid} still runs the cancelled replication"
            time.sleep(0.2)
    else:
        # the replication streams its Gantt while it simulates, so the engine's next report (at
        # most half a second of wall time later) saw the cancel and the task returned
        assert f"[{running['task_id']}] succeeded" in logs and "'cancelled'" in logs


def process_exists(pid: int) -> bool:
    """A process that exists and is not a zombie waiting for its parent."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


def start_streaming(site) -> tuple[str, int, dict]:
    """(database URL, run id, its state) for a run of several replications that has begun to stream."""
    database_url = site.env["DATABASE_URL"]
    run_id = site.python_json(START_RUN.format(spec=json.dumps(SEVERAL_REPLICATIONS)))
    first = wait_on_site(database_url, run_id, lambda s: s["status"] != "queued" and s["seqs"], 120,
                         "stream a chunk")
    assert first["status"] == "running", first
    return database_url, run_id, first


@pytest.mark.slow
def test_full_stack_run_whose_worker_process_dies_is_delivered_again_and_finishes(full_stack_site):
    database_url, run_id, first = start_streaming(full_stack_site)
    pid = int(first["worker"].rpartition(":")[2])

    os.kill(pid, signal.SIGKILL)  # as the kernel's out-of-memory killer would
    ended = wait_on_site(database_url, run_id, lambda s: s["status"] in ("done", "failed", "cancelled"), 180,
                         "finish after the redelivery")

    assert ended["status"] == "done", ended["error"]
    assert ended["attempt"] == 2 and int(ended["worker"].rpartition(":")[2]) != pid
    assert ended["seqs"] == list(range(len(ended["seqs"]))) and ended["results"] == 1


@pytest.mark.slow
def test_full_stack_a_worker_killed_whole_has_its_run_recovered_by_another_worker(full_stack_site):
    database_url, run_id, first = start_streaming(full_stack_site)
    worker, _, pid = first["worker"].rpartition(":")
    name = worker.partition("@")[0]  # "worker1" or "worker2": the fixture's process of that name
    main = full_stack_site.processes[name]

    # the whole worker at once, as when its machine loses power: its message stays unacknowledged
    # in Redis for hours, so only the other worker's recovery sweep can bring the run back
    os.kill(int(pid), signal.SIGKILL)
    os.kill(main.pid, signal.SIGKILL)
    main.wait(timeout=30)
    try:
        ended = wait_on_site(database_url, run_id, lambda s: s["status"] in ("done", "failed", "cancelled"), 180,
                             "be recovered by the other worker and finish")
        assert ended["status"] == "done", ended["error"]
        assert ended["attempt"] == 2 and not ended["worker"].startswith(f"{name}@")
        assert ended["seqs"] == list(range(len(ended["seqs"]))) and ended["results"] == 1
    finally:
        full_stack_site.restart_worker(name)


LOSE_TWO_RUNS = """
import json
from datetime import timedelta
from django.contrib.auth.models import User
from django.utils import timezone
from gridweb.runs.models import Run
from gridweb.runs.services import create_run
user, _ = User.objects.get_or_create(username="unlucky")
spec = json.loads({spec!r})
never_sent = create_run(user, spec, dispatch_now=False)  # its message was lost with Redis
interrupted = create_run(user, spec, dispatch_now=False)  # its worker machine lost power
Run.objects.filter(pk=interrupted.pk).update(status="running", attempt=1, worker="worker7@gone-machine:4242",
                                             heartbeat=timezone.now() - timedelta(minutes=10))
print(json.dumps([never_sent.pk, interrupted.pk]))
"""


@pytest.mark.slow
def test_gridweb_requeue_hands_lost_runs_to_the_workers_again(full_stack_site):
    database_url = full_stack_site.env["DATABASE_URL"]
    never_sent, interrupted = full_stack_site.python_json(LOSE_TWO_RUNS.format(spec=json.dumps(small_spec())))

    output = full_stack_site.manage("gridweb_requeue")

    # the interrupted run: by the command, unless a worker's recovery sweep took it over first
    swept = f"run {interrupted}: its execution on worker7@gone-machine:4242 is gone"
    assert f"run {never_sent} (queued)" in output
    assert (f"run {interrupted} (running, was on worker7@" in output
            or any(swept in full_stack_site.log(f"worker{i}") for i in (1, 2))), output
    for run_id, attempts in ((never_sent, 1), (interrupted, 2)):
        state = wait_on_site(database_url, run_id, lambda s: s["status"] in ("done", "failed"), 120, "finish")
        assert state["status"] == "done", state["error"]
        assert state["attempt"] == attempts and state["worker"].startswith("worker")
        assert state["seqs"] == list(range(len(state["seqs"]))) and state["results"] == 1


# --- Embedded server restart: the worker starts with the first request ---------------------------

LEFT_BEHIND = """
import json, os
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0, interactive=False)
from django.contrib.auth.models import User
from django.utils import timezone
from gridweb.runs.models import Run
from gridweb.runs.services import create_run
user = User.objects.create_user("left")
spec = json.loads({spec!r})
queued = create_run(user, spec, dispatch_now=False)
interrupted = create_run(user, spec, dispatch_now=False)
# As the stopped server left it: running in a process that no longer exists.
Run.objects.filter(pk=interrupted.pk).update(status="running", attempt=1, heartbeat=timezone.now(),
                                             worker=f"embedded@{{os.uname().nodename}}:{dead_pid}")
print(json.dumps([queued.pk, interrupted.pk]))
"""

STATUSES = """
import json
import django
django.setup()
from gridweb.runs.models import Run
print(json.dumps({r.pk: [r.status, r.error] for r in Run.objects.all()}))
"""


@pytest.mark.slow
def test_a_restarted_embedded_server_picks_up_what_the_stopped_one_left(tmp_path):
    import subprocess
    import sys
    import urllib.request

    from tests.conftest import ROOT, _free_port, project_env, run_python_json

    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    env = project_env(DATABASE_URL=f"sqlite:///{tmp_path / 'site.sqlite3'}", GRIDWEB_DATA_DIR=str(tmp_path / "data"))
    queued, interrupted = run_python_json(LEFT_BEHIND.format(spec=json.dumps(small_spec()), dead_pid=pid), env=env)
    port = _free_port()
    with open(tmp_path / "server.log", "w") as log:
        server = subprocess.Popen([sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
                                  cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:  # the first request the new server serves starts its worker
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5):
                    break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, (tmp_path / "server.log").read_text()
                time.sleep(0.3)
        while (statuses := run_python_json(STATUSES, env=env))[str(queued)][0] in ("queued", "running"):
            assert time.monotonic() < deadline + 60, statuses
            time.sleep(0.5)
    finally:
        server.terminate()
        server.wait(20)

    assert statuses[str(queued)] == ["done", ""]
    assert statuses[str(interrupted)][0] == "failed" and "interrupted" in statuses[str(interrupted)][1]


@pytest.mark.slow
def test_full_stack_workers_replace_a_process_grown_past_the_memory_limit(test_database_url, test_redis_url,
                                                                          tmp_path_factory):
    # Every process of these workers is past a 1 MB limit after any run: each is replaced by a
    # fresh one after its task (GRIDWEB_WORKER_MAX_MEMORY_MB, Celery's worker_max_memory_per_child).
    # Two workers of one process each and three runs one after another: without the limit two
    # processes run them all, so a third process id shows each run had a fresh one.
    from tests.conftest import E2E_REDIS_DB, full_stack

    redis_url = test_redis_url.rsplit("/", 1)[0] + f"/{E2E_REDIS_DB + 1}"
    with full_stack(test_database_url, redis_url, tmp_path_factory, name="gridweb_memory",
                    GRIDWEB_WORKER_MAX_MEMORY_MB="1") as site:
        database_url = site.env["DATABASE_URL"]
        pids = []
        for seed in (1, 2, 3):
            run_id = site.python_json(START_RUN.format(spec=json.dumps(small_spec(seed=seed, replications=1))))
            done = wait_on_site(database_url, run_id, lambda s: s["status"] not in ("queued", "running"), 120, "end")
            assert done["status"] == "done", done
            pids.append(int(done["worker"].rpartition(":")[2]))
        assert len(set(pids)) == 3, pids


def test_the_time_left_is_estimated_from_the_pace_of_the_progress_once_it_has_settled():
    """The worker's one estimate (Run.eta, the API's eta_seconds, the page's ETA). The seconds before
    the first progress (reading a trace, loading kernels) are no part of the pace: a run that sat at
    0 % for 50 s and then went 0.01 -> 0.51 in 10 s has about 10 s left, not 58 s."""
    from gridweb.runs.execution import ETA_SETTLE_SECONDS, EtaEstimate

    eta = EtaEstimate()
    assert eta.seconds_left(0.0, 10.0) is None  # no progress yet
    assert eta.seconds_left(0.01, 50.0) is None  # the first progress: a start, not a pace
    assert eta.seconds_left(0.02, 50.0 + ETA_SETTLE_SECONDS / 2) is None  # too soon, too little
    assert eta.seconds_left(0.51, 60.0) == pytest.approx(10.0 * 0.49 / 0.50)
    assert eta.seconds_left(1.0, 61.0) is None  # done: nothing to estimate
    naive = 60.0 * (1 - 0.51) / 0.51  # what the page used to say, from the run's start
    assert naive > 4 * eta.seconds_left(0.51, 60.0)
