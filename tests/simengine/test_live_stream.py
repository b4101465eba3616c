"""The live Gantt of every model path (simengine.streaming): chunks numbered without gaps, each
covering a contiguous window of simulated time, rows that together are exactly the Result's
segments; every path streams while replication 0 runs, not only at its end."""
from __future__ import annotations

import math

import numpy as np
import pytest

import simengine
from simengine import streaming
from simengine.streaming import ChunkEmitter, LiveGantt, live_rows
from tests.conftest import ROOT
from tests.simengine.live_stream import check_live_stream

#: example -> (streams while it simulates, may name rows late)
EXAMPLES = {
    "single-cluster-easy.yaml": (True, False),
    "multicluster-4x32.yaml": (True, False),
    "das2-replay.yaml": (True, False),
    "mmc-erlang.json": (True, False),
    "reservations-preemption.yaml": (True, False),
    "failures.yaml": (True, False),  # down intervals stream like reservation windows
    "cao-scojo-rars.yaml": (True, True),
    "ballier-4x32.yaml": (True, False),
    "koala-w30.yaml": (True, False),
    "zikos-random.yaml": (True, False),
    "klein-evolving.yaml": (True, False),  # planned offline, streamed as Algorithm 1 maps it
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_model_path_streams_exactly_its_gantt(monkeypatch, name):
    monkeypatch.setattr(streaming, "LIVE_INTERVAL", 0.0)  # a chunk at every slice
    during, late = EXAMPLES[name]
    chunks = []
    result = simengine.run(ROOT / "examples" / name, on_progress=chunks.append)
    seg = check_live_stream(chunks, result, during=during, late_rows=late)
    fractions = [c["fraction"] for c in seg if "fraction" in c]  # (a window cut in pieces: in its last)
    assert fractions == sorted(fractions)  # progress in simulated time never goes back
    sim_times = [c["sim_time"] for c in seg if "sim_time" in c]
    assert sim_times == sorted(sim_times)
    # the simulated time reached never passes the replication's end (a finished simulation's time
    # is its last event, not the slice it was advanced to)
    assert sim_times[-1] <= float(np.max(result.segments["t1"])) + 1e-9


@pytest.mark.parametrize("name", ["single-cluster-easy.yaml", "reservations-preemption.yaml", "koala-w30.yaml"])
def test_a_listener_that_follows_progress_only_gets_no_gantt_and_the_same_result(monkeypatch, name):
    """A callback with ``wants_segments = False`` (the command line's progress bar) gets progress
    but no segments chunk: no Gantt is built for it; the result is the one of a run with no
    listener and of one with a Gantt listener."""
    monkeypatch.setattr(streaming, "LIVE_INTERVAL", 0.0)

    class ProgressOnly(list):
        wants_segments = False

        def __call__(self, chunk):
            self.append(chunk)

    progress_only, everything = ProgressOnly(), []
    followed = simengine.run(ROOT / "examples" / name, on_progress=progress_only)
    drawn = simengine.run(ROOT / "examples" / name, on_progress=everything.append)
    alone = simengine.run(ROOT / "examples" / name)
    assert progress_only and progress_only[-1]["kind"] == "metrics" and progress_only[-1]["fraction"] == 1.0
    assert {c["kind"] for c in everything} - {c["kind"] for c in progress_only} == {"segments"}
    assert [c["seq"] for c in progress_only] == list(range(len(progress_only)))
    for result in (followed, drawn):
        for name_, column in alone.jobs.items():
            np.testing.assert_array_equal(result.jobs[name_], column, err_msg=name_)
        for name_, column in alone.segments.items():
            np.testing.assert_array_equal(result.segments[name_], column, err_msg=name_)


def rows(t0, t1):
    n = len(t0)
    return live_rows({"t0": np.asarray(t0, float), "t1": np.asarray(t1, float), "cluster": np.zeros(n),
                      "first_processor": np.arange(n), "processors": np.ones(n), "kind": np.zeros(n),
                      "job_id": np.arange(n), "stream": np.zeros(n)}, n)


def test_a_chunk_goes_out_at_least_every_interval_while_updates_come():
    """Driven by a clock of its own: updates every 0.125 s of wall time, a chunk at the first update
    and then whenever 0.5 s have passed; the rows held back meanwhile go out with the next chunk."""
    chunks = []
    now = [0.0]
    live = LiveGantt(ChunkEmitter(chunks.append), interval=0.5, clock=lambda: now[0])
    for k in range(20):
        live.update(10.0 * (k + 1), rows([10.0 * k], [10.0 * k + 5]), rows([], []))
        now[0] += 0.125
    t0 = 10.0 * np.arange(20)
    result_rows = rows(t0, t0 + 5)  # the Result's segments: the rows not sent yet go out last
    live.finish({**result_rows, "job": np.arange(20)}, {"job_id": np.arange(20), "stream": np.zeros(20, int)})
    sent_at = [c["sim_time"] for c in chunks]
    assert sent_at == [10.0, 50.0, 90.0, 130.0, 170.0, 200.0]
    assert [len(c["segments"]["t0"]) for c in chunks] == [1, 4, 4, 4, 4, 3]
    assert chunks[-1]["final"] and [c["seq"] for c in chunks] == list(range(6))


def test_big_windows_are_cut_into_chunks_of_at_most_chunk_rows(monkeypatch):
    monkeypatch.setattr(streaming, "CHUNK_ROWS", 10)
    chunks = []
    live = LiveGantt(ChunkEmitter(chunks.append))
    t0 = np.arange(35.0)
    live.update(100.0, rows(t0, t0 + 1), rows([], []))
    assert [len(c["segments"]["t0"]) for c in chunks] == [10, 10, 10, 5]
    windows = [c["window"] for c in chunks]
    assert all(a[1] == b[0] for a, b in zip(windows, windows[1:])) and windows[-1][1] == 100.0
    assert "open" in chunks[-1] and all("open" not in c for c in chunks[:-1])


def test_rows_of_a_repeated_attempt_are_not_sent_twice():
    """runner.until_enough may simulate replication 0 again with more jobs: the rows already sent
    are reported again, and dropped; the new ones go out."""
    chunks = []
    live = LiveGantt(ChunkEmitter(chunks.append), interval=0.0)
    live.update(10.0, rows([0, 2], [1, 3]), rows([], []))
    live.restart()
    live.update(5.0, rows([0], [1]), rows([], []))  # not past what was sent: nothing new
    live.update(20.0, rows([0, 2, 11], [1, 3, 12]), rows([], []))
    live.finish(None)
    sent = sorted(t for c in chunks for t in c["segments"]["t0"].tolist())
    assert sent == [0, 2, 11] and math.isfinite(chunks[-1]["window"][1])


def test_a_late_row_reported_while_the_frontier_stands_still_goes_out():
    """Cao names a task's reservation frame once the task starts, which may be after the frame's
    end and after the window holding it went out; the frontier need not move on then (it waits for
    the next completion). The row is sent with the next chunk, once."""
    chunks = []
    live = LiveGantt(ChunkEmitter(chunks.append), interval=0.0)
    live.update(10.0, rows([0], [5]), rows([], []))
    live.update(10.0, rows([1], [3]), rows([], []))  # late (ends before 10), frontier unchanged
    live.update(20.0, rows([12], [15]), rows([], []))
    live.finish({**rows([0, 1, 12], [5, 3, 15]), "job": np.arange(3)},
                {"job_id": np.arange(3), "stream": np.zeros(3, int)})
    sent = sorted(t for c in chunks for t in c["segments"]["t0"].tolist())
    assert sent == [0, 1, 12]


def test_a_late_row_still_held_back_at_the_end_goes_out_with_the_last_chunk():
    """A late row waiting for the next interval when the replication ends is not in the
    Result's rows after the last window sent: finish sends it too."""
    chunks = []
    now = [0.0]
    live = LiveGantt(ChunkEmitter(chunks.append), interval=10.0, clock=lambda: now[0])
    live.update(10.0, rows([0], [5]), rows([], []))  # first update: sent at once
    live.update(20.0, rows([1, 11], [3, 14]), rows([], []))  # held back: the interval has not passed
    result = rows([0, 1, 11], [5, 3, 14])
    live.finish({**result, "job": np.arange(3)}, {"job_id": np.arange(3), "stream": np.zeros(3, int)})
    sent = sorted(t for c in chunks for t in c["segments"]["t0"].tolist())
    assert sent == [0, 1, 11] and chunks[-1]["final"]


def fixed_slices(count):
    """A run_in_slices of ``count`` equal slices: holds span slices, preemptions come later."""
    def drive(begin, end, advance, report):
        step = (end - begin) / count
        T = begin
        while True:
            T += step
            done = advance(T)
            if report(T) or done:
                advance(math.inf)
                return
    return drive


GRID_VARIANTS = {
    "requeue, earliest first": {"killed_jobs": "requeue", "kill_order": "earliest_started_first"},
    "LP, local queue first": {"priority": "LP", "claims_bypass_local_queue": False},
    "no tries, final attempt only": {"mp": 0},
}


@pytest.mark.parametrize("variant", sorted(GRID_VARIANTS))
def test_the_grid_layer_streams_exactly_its_gantt_under_every_kill_rule(monkeypatch, variant):
    """Kills (dropped or requeued), claims cut by the horizon, simultaneous starts (constant
    runtimes): the live Gantt hands out the processors the Result does."""
    import yaml

    from simengine.grid import holdings

    monkeypatch.setattr(streaming, "LIVE_INTERVAL", 0.0)
    monkeypatch.setattr(holdings, "run_in_slices", fixed_slices(300))  # runs span slices, kills come later
    data = yaml.safe_load((ROOT / "examples" / "ballier-4x32.yaml").read_text())
    data["grid"]["deadline_policy"]["params"].update(GRID_VARIANTS[variant])
    data["run"].update({"replications": 1, "stop": {"horizon": 30000.5}, "warmup": {"time": 0}})
    for stream in data["workload"]["streams"][:2]:  # starts at the same instants
        stream["runtime"] = {"kind": "constant", "value": 60}
    chunks = []
    result = simengine.run(data, on_progress=chunks.append)
    killed = int((np.asarray(result.segments["kind"]) == 4).sum())
    claimed = int((np.asarray(result.segments["kind"]) == 1).sum())
    params = GRID_VARIANTS[variant]
    assert (claimed > 0) == (params.get("mp") != 0) and (killed > 0) == (params.get("priority") != "LP")
    check_live_stream(chunks, result, during=True)


@pytest.mark.parametrize("preemption", ["requeue", "kill"])
def test_koala_streams_exactly_its_gantt_with_preemption_and_transfers(monkeypatch, preemption):
    """Two priorities competing for claims (lower-priority jobs preempted), file transfers, the
    background band: the live Gantt hands out the processors the Result does."""
    import yaml

    from simengine.grid import koala_run

    monkeypatch.setattr(streaming, "LIVE_INTERVAL", 0.0)
    monkeypatch.setattr(koala_run, "run_in_slices", fixed_slices(400))
    data = yaml.safe_load((ROOT / "examples" / "koala-w30.yaml").read_text())
    high = data["workload"]["streams"][0]
    low = {**high, "name": "low", "priority": "low", "arrival": {"target_load": 0.4}}
    low.pop("background")
    data["workload"]["streams"].append(low)
    data["grid"]["deadline_policy"]["params"].update(preemption={"name": preemption}, threshold=0.5)
    chunks = []
    result = simengine.run(data, on_progress=chunks.append)
    kinds = np.asarray(result.segments["kind"])
    assert (kinds == 4).sum() > 0 and (kinds == 6).sum() > 0 and (kinds == 1).sum() > 0
    check_live_stream(chunks, result, during=True)


def test_replication_0_of_an_lwr_grid_streams_through_the_kernels_with_the_same_schedule():
    """Replications of a static LWR grid run in one compiled pass (simengine.grid_lwr.lwr_sites);
    replication 0, streamed, goes through the per-cluster kernels: the two give one schedule."""
    import yaml

    from simengine.kernel_model import replicate, replicate_lwr_grid
    from simengine.scenario import load_scenario

    data = yaml.safe_load((ROOT / "examples" / "zikos-random.yaml").read_text())
    data["run"].update(replications=2, stop={"completions": 20000})
    scenario = load_scenario(data)
    kernels, one_pass = replicate(scenario, 0, True), replicate_lwr_grid(scenario, 0, True)
    for name, values in kernels.jobs.items():
        assert np.array_equal(values, one_pass.jobs[name], equal_nan=values.dtype.kind == "f"), name
    for name, values in kernels.segments.items():
        assert np.array_equal(values, one_pass.segments[name]), name
    assert kernels.metrics.keys() == one_pass.metrics.keys()
    assert all(a == b or (a != a and b != b) for a, b in zip(kernels.metrics.values(), one_pass.metrics.values()))


@pytest.mark.parametrize("policy", ["deferred", "sb_deferred"])
def test_a_stateful_site_allocation_streams_exactly_its_gantt(monkeypatch, policy):
    """Deferred and SB-Deferred (the grid scheduler and LWR sites in one compiled pass that pauses
    at any simulated time): batches held back, jobs queued on processors, the completions stop."""
    import yaml

    from simengine import kernel_feed

    monkeypatch.setattr(streaming, "LIVE_INTERVAL", 0.0)
    monkeypatch.setattr(kernel_feed, "run_in_slices", fixed_slices(300))
    data = yaml.safe_load((ROOT / "examples" / "zikos-random.yaml").read_text())
    data["grid"]["site_allocation"] = {"name": policy, "params": {"allocation_interval": 2.0}}
    data["run"].update(replications=2, stop={"completions": 20000})
    chunks = []
    result = simengine.run(data, on_progress=chunks.append)
    seg = check_live_stream(chunks, result, during=True)
    assert sum(len(c["segments"]["t0"]) for c in seg[:-1]) > len(result.segments["t0"]) / 2


@pytest.mark.parametrize("name", sorted(n for n, (during, _) in EXAMPLES.items() if during and n != "klein-evolving.yaml"))
def test_every_queueing_model_streams_its_queue_lengths(monkeypatch, name):
    # the strip under the live Gantt: jobs waiting in each cluster's queue at each chunk's frontier
    # (evolving applications are all planned at time 0: no queue)
    monkeypatch.setattr(streaming, "LIVE_INTERVAL", 0.0)
    chunks = []
    result = simengine.run(ROOT / "examples" / name, on_progress=chunks.append)
    queued = [c["queued"] for c in chunks if c["kind"] == "segments" and "queued" in c]
    clusters = len(np.unique(result.jobs["cluster"][result.jobs["cluster"] >= 0]))
    assert queued, "no chunk says how many jobs wait"
    assert all(len(q) >= clusters and min(q) >= 0 for q in queued)
    if name not in ("koala-w30.yaml", "das2-replay.yaml"):  # (nobody waits in one; at no frontier in the other)
        assert any(sum(q) > 0 for q in queued), "no job waited at any chunk's frontier"


def test_the_last_chunk_says_the_queues_where_the_gantt_ends_however_the_run_was_sliced(monkeypatch):
    """The final chunk's queue lengths come from the job table at its end, not from the last live
    update (which depends on the wall clock): a repeated run sends the same chunks. (A CI run saw
    [0] once and [7] the other time.)"""
    spec = {"platform": {"clusters": [{"name": "main", "processors": 32, "scheduler": {"name": "easy"}}]},
            "workload": {"streams": [{"kind": "synthetic", "name": "users", "target": "main",
                                      "arrival": {"target_load": 0.95}, "size": {"kind": "uniform", "low": 1, "high": 16},
                                      "runtime": {"kind": "exponential", "mean": 600}}]},
            "run": {"seed": 7, "stop": {"completions": 1500}}}
    finals = []
    for interval in (0.0, 3600.0):  # a chunk at every update; one at the end only
        monkeypatch.setattr(streaming, "LIVE_INTERVAL", interval)
        chunks = []
        result = simengine.run(spec, on_progress=chunks.append)
        finals.append(next(c for c in chunks if c["kind"] == "segments" and c.get("final"))["queued"])
    jobs = result.jobs
    end = float(np.max(result.segments["t1"]))
    waiting = int(np.sum((jobs["submit"] <= end) & ~(jobs["start"] <= end)))
    assert finals[0] == finals[1] == [waiting]
