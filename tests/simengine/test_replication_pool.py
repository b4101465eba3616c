"""Replications of the event-by-event models (reservations, Cao, evolving) in a process pool give
the Result they give in one process: each replication draws from its own SeedSequence child."""
from pathlib import Path

import numpy as np
import pytest

import simengine
from simengine.driver import POOL_MIN_SECONDS, _pool_size, _processes_pay
from simengine.scenario import load_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _with(path: str, **run):
    s = load_scenario(EXAMPLES / path)
    doc = s.model_dump(mode="json")
    doc["run"].update(run)
    return load_scenario(doc, base_dir=EXAMPLES)


@pytest.mark.parametrize("path", ["reservations-preemption.yaml", "cao-scojo-rars.yaml", "klein-evolving.yaml"])
def test_pool_gives_the_in_process_result(path):
    s = _with(path, replications=3, keep_jobs="all")
    here = simengine.run(s, workers=1)
    chunks = []
    pooled = simengine.run(s, workers=2, on_progress=chunks.append)
    assert set(np.unique(here.jobs["replication"])) == {0, 1, 2}
    for k in here.jobs:
        np.testing.assert_array_equal(pooled.jobs[k], here.jobs[k], err_msg=k)
    for k in here.segments:
        np.testing.assert_array_equal(pooled.segments[k], here.segments[k], err_msg=k)
    assert {k: m.values for k, m in pooled.metrics.items()} == {k: m.values for k, m in here.metrics.items()}
    # progress still reaches 1 in order, and the metrics come last
    fractions = [c["fraction"] for c in chunks if c["kind"] == "progress"]
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0)
    assert chunks[-1]["kind"] == "metrics"


def test_when_the_process_pool_is_used():
    assert not _processes_pay(1, 9, 100.0)               # asked for one process
    assert _processes_pay(2, 3, 0.0)                     # asked for more
    assert _pool_size(8, 3) == 3                         # never more workers than replications left
    assert not _processes_pay(4, 1, 100.0)               # one replication left: nothing to overlap
    assert not _processes_pay(None, 4, POOL_MIN_SECONDS / 8)   # quick replications stay here
    assert _processes_pay(None, 4, POOL_MIN_SECONDS) or (__import__("os").cpu_count() or 1) == 1


@pytest.mark.parametrize("path, loop", [("cao-scojo-rars.yaml", "simengine.cao.engine"),
                                        ("reservations-preemption.yaml", "simengine.local.cluster")])
def test_a_long_replication_reports_progress_on_the_way(monkeypatch, path, loop):
    # The event loops report every STEP_EVENTS events, the live Gantt every slice of simulated
    # time; with the throttles off every report goes out: fractions rise inside replication 0
    # (below 1/R) before its last segments are sent.
    import importlib

    import simengine.driver as driver
    from simengine import streaming

    monkeypatch.setattr(importlib.import_module(loop), "STEP_EVENTS", 50)
    monkeypatch.setattr(driver, "STEP_REPORT_SECONDS", 0.0)
    monkeypatch.setattr(streaming, "LIVE_INTERVAL", 0.0)
    s = _with(path, replications=2)
    chunks = []
    simengine.run(s, workers=1, on_progress=chunks.append)
    last_of_first = next(i for i, c in enumerate(chunks) if c["kind"] == "segments" and c["final"])
    inside = [c for c in chunks[:last_of_first] if c["kind"] in ("progress", "segments")]
    assert len(inside) >= 3
    fractions = [c["fraction"] for c in inside]
    assert fractions == sorted(fractions) and len(set(fractions)) >= 3 and 0 < fractions[-1] < 0.5
    times = [c["sim_time"] for c in inside]
    assert times == sorted(times) and times[-1] > 0
    every = [c["fraction"] for c in chunks if c["kind"] == "progress" or "fraction" in c]
    assert every == sorted(every) and every[-1] == pytest.approx(1.0)


def test_a_scenario_whose_trace_path_climbs_out_of_its_folder_runs_in_a_pool(tmp_path):
    # examples/das2-replay.yaml names its trace ../gridweb/demo/...: a worker process reloads the
    # scenario against the folder it was resolved from (it used to be the trace's own folder, where
    # that path names another file, and every pooled replication failed)
    s = load_scenario(EXAMPLES / "das2-replay.yaml")
    doc = s.model_dump(mode="json")
    doc["run"].update(replications=3, stop={"completions": 300})
    pooled = simengine.run(load_scenario(doc, base_dir=EXAMPLES), workers=2)
    values = pooled.metrics["mean_wait"].values
    assert len(values) == 3 and all(v == v and v >= 0 for v in values)
