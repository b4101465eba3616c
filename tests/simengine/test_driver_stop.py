"""A run stops when its progress callback says so, also while replications 1..R-1 run (issue 14:
the server's wall-clock budget and a cancel must bound every replication, not only replication 0).

The callback's ``check()`` is what the driver asks between chunks; here it always raises, and
it is only ever called by the driver (the models call the callback itself), so the run must stop
inside the first replication after replication 0: no progress chunk past 1/R may arrive.
"""
from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import numpy as np
import pytest

import simengine
from simengine import driver
from simengine.scenario import load_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class Stop(Exception):
    pass


class Listener:
    """Records the chunks; ``check()`` stops the run."""

    def __init__(self):
        self.chunks: list[dict] = []
        self.checks = 0

    def __call__(self, chunk: dict) -> None:
        self.chunks.append(chunk)

    def check(self) -> None:
        self.checks += 1
        raise Stop

    def fractions(self) -> list[float]:
        return [c["fraction"] for c in self.chunks if c["kind"] == "progress"]


def scenario(path: str, count: int, replications: int):
    doc = load_scenario(EXAMPLES / path).model_dump(mode="json")
    doc["run"].update(replications=replications, seed=3)
    if doc["run"].get("stop"):
        doc["run"]["stop"] = {"completions": count}
    for stream in doc["workload"]["streams"]:
        if stream.get("count"):
            stream["count"] = count
    return load_scenario(doc, base_dir=EXAMPLES)


@pytest.fixture
def quick_polls(monkeypatch):
    # the driver asks every STEP_REPORT_SECONDS; a short one lets small replications show it
    monkeypatch.setattr(driver, "STEP_REPORT_SECONDS", 0.01)


@pytest.mark.parametrize("path, count, workers", [
    ("reservations-preemption.yaml", 6000, 1),  # event-driven model, replications run here
    ("cao-scojo-rars.yaml", 4000, 1),           # Cao's compiled loop, here
    ("reservations-preemption.yaml", 6000, 2),  # in a process pool
    ("single-cluster-easy.yaml", 200_000, 1),   # the kernel path, here (driven in slices)
])
def test_a_run_stops_inside_a_later_replication(path, count, workers, quick_polls):
    R = 4
    s = scenario(path, count, R)
    listener = Listener()
    with pytest.raises(Stop):
        simengine.run(s, listener, workers=workers)
    assert listener.checks == 1
    # replication 0's Gantt went out, and no replication after it ended (each end is reported)
    assert any(c["kind"] == "segments" for c in listener.chunks)
    assert all(f < 1 / R for f in listener.fractions())
    assert not any(c["kind"] == "metrics" for c in listener.chunks)


def test_a_run_stops_while_its_threads_simulate(quick_polls):
    # the kernel path's replications run in threads beside replication 0; the wait on them asks
    # the callback too, and the run ends without waiting for the threads still simulating
    R = 100  # (the threads would need seconds for them all: far more than replication 0 takes)
    s = scenario("single-cluster-easy.yaml", 60_000, R)
    listener = Listener()
    with pytest.raises(Stop):
        simengine.run(s, listener, workers=2)
    assert listener.checks == 1
    assert len(listener.fractions()) < R - 1  # not every later replication ended


def test_without_a_check_the_run_goes_on():
    # a callback that is only callable (a plain function) is never asked: every replication ends
    s = scenario("reservations-preemption.yaml", 300, 3)
    chunks: list[dict] = []
    result = simengine.run(s, chunks.append, workers=1)
    assert result.metrics and chunks[-1]["kind"] == "metrics"
    assert [c["fraction"] for c in chunks if c["kind"] == "progress"][-1] == pytest.approx(1.0)


def test_slices_asked_for_by_a_listener_do_not_change_the_results():
    # a listener makes the kernel path drive later replications in slices (to be asked between
    # them); the schedule does not depend on the slicing
    s = scenario("single-cluster-easy.yaml", 30_000, 3)
    doc = s.model_dump(mode="json")
    doc["run"]["keep_jobs"] = "all"
    doc["platform"]["clusters"][0]["scheduler"] = {"name": "conservative"}
    s = load_scenario(doc, base_dir=EXAMPLES)
    quiet = simengine.run(s, workers=1)
    listened = simengine.run(s, lambda chunk: None, workers=1)
    for k in quiet.jobs:
        np.testing.assert_array_equal(listened.jobs[k], quiet.jobs[k], err_msg=k)
    assert {k: m.values for k, m in listened.metrics.items()} == {k: m.values for k, m in quiet.metrics.items()}


def test_a_pool_process_that_dies_fails_the_run_instead_of_hanging():
    # a replication's process killed (the machine's out-of-memory killer, say): the run raises at
    # once rather than waiting for a result that never comes
    import os
    import signal
    import threading
    from concurrent.futures.process import BrokenProcessPool

    s = scenario("reservations-preemption.yaml", 20_000, 4)
    outcome: dict = {}

    def run() -> None:
        try:
            simengine.run(s, workers=2)
            outcome["result"] = "finished"
        except BaseException as exc:  # noqa: BLE001 - what the run raised is the test's result
            outcome["result"] = exc

    before = {child.pid for child in multiprocessing.active_children()}  # (none, unless a test left some)
    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 60
    while not (pool := [c.pid for c in multiprocessing.active_children() if c.pid not in before]):
        assert time.monotonic() < deadline and thread.is_alive(), "the pool never started"
        time.sleep(0.01)
    os.kill(pool[0], signal.SIGKILL)
    thread.join(timeout=60)
    assert not thread.is_alive(), "the run hung on a dead process"
    assert isinstance(outcome["result"], BrokenProcessPool), outcome
