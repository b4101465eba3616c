"""Replaying the real traces (gridweb/demo, PROVENANCE.txt there) with every queue-based scheduler."""
from __future__ import annotations

import heapq
import subprocess
import sys

import numpy as np
import pytest

import simengine
from simengine.traces import read_swf
from simengine.workload import STATUS_NAMES
from tests.conftest import ROOT, TRACE_DIR

TRACES = {  # file -> processors (the trace's MaxProcs)
    "DAS2-fs1-2003-1.swf.gz": 64,
    "NASA-iPSC-1993-3.1-cln.swf.gz": 128,
    "HPC2N-2002-2.2-cln.first3171.swf.gz": 240,
    "LCG-2005-1.swf.gz": 24515,
}


def replay(path, processors, scheduler, **run):
    return simengine.run({
        "name": f"replay {path.name}",
        "platform": {"clusters": [{"name": "c", "processors": processors, "scheduler": {"name": scheduler}}]},
        "workload": {"streams": [{"kind": "trace", "name": "t", "path": str(path), "target": "c"}]},
        "run": run,
    })


@pytest.fixture(scope="module")
def traces():
    return {name: read_swf(TRACE_DIR / name) for name in TRACES}


@pytest.mark.parametrize("scheduler", ["fcfs", "easy", "conservative"])
@pytest.mark.parametrize("name", list(TRACES))
def test_every_trace_replays(traces, name, scheduler):
    trace = traces[name]
    result = replay(TRACE_DIR / name, TRACES[name], scheduler)
    j = result.jobs
    assert len(j["job_id"]) == len(trace.jobs)
    np.testing.assert_array_equal(np.sort(j["job_id"]), np.sort(trace.jobs.job_id))
    assert result.status_counts()["completed"] == len(trace.jobs)
    assert (j["start"] >= j["submit"]).all()
    # the cluster is never over-committed
    t = np.concatenate([j["start"], j["end"]])
    d = np.concatenate([j["processors"], -j["processors"]])
    order = np.lexsort((d, t))  # at equal times, ends (negative) first
    assert np.cumsum(d[order]).max() <= TRACES[name]


def straightforward_fcfs(submit, runtime, size, processors):
    """FCFS written plainly: each job, in order, waits for the head before it and for
    enough processors to be free."""
    running = []  # heap of (end, size)
    free, t, start = processors, 0.0, []
    for s, r, k in zip(submit.tolist(), runtime.tolist(), size.tolist()):
        t = max(t, s)
        while running and running[0][0] <= t:
            free += heapq.heappop(running)[1]
        while free < k:
            end, released = heapq.heappop(running)
            t = max(t, end)
            free += released
            while running and running[0][0] <= t:
                free += heapq.heappop(running)[1]
        start.append(t)
        free -= k
        heapq.heappush(running, (t + r, k))
    return np.array(start)


def test_das2_fcfs_agrees_with_a_straightforward_fcfs(traces):
    trace = traces["DAS2-fs1-2003-1.swf.gz"]
    result = replay(TRACE_DIR / "DAS2-fs1-2003-1.swf.gz", 64, "fcfs")
    expected = straightforward_fcfs(trace.jobs.submit, trace.jobs.runtime, trace.jobs.processors, 64)
    by_id = dict(zip(result.jobs["job_id"].tolist(), result.jobs["start"].tolist()))
    got = np.array([by_id[i] for i in trace.jobs.job_id.tolist()])
    np.testing.assert_array_equal(got, expected)
    assert (np.diff(expected) >= 0).all() and (expected > trace.jobs.submit).any()


SMALL_SWF = """; MaxProcs: 4
1 0 -1 100 2 -1 -1 2 50 -1 1 1 1 -1 1 -1 -1 -1
2 10 -1 30 4 -1 -1 4 60 -1 1 1 1 -1 1 -1 -1 -1
3 20 -1 10 8 -1 -1 8 60 -1 1 1 1 -1 1 -1 -1 -1
"""


def test_walltime_enforcement_and_rejection(tmp_path):
    path = tmp_path / "small.swf"
    path.write_text(SMALL_SWF)
    free_run = replay(path, 4, "easy")
    killed_run = replay(path, 4, "easy", enforce_walltime=True)
    status = np.asarray(STATUS_NAMES)
    # job 1 asks for 50 s but runs 100: replayed as is by default, killed at 50 s when enforced
    assert list(status[free_run.jobs["status"]]) == ["completed", "completed", "rejected"]
    assert list(status[killed_run.jobs["status"]]) == ["killed", "completed", "rejected"]
    np.testing.assert_array_equal(free_run.jobs["start"][:2], [0.0, 100.0])
    np.testing.assert_array_equal(killed_run.jobs["start"][:2], [0.0, 50.0])
    np.testing.assert_array_equal(killed_run.jobs["end"][:2], [50.0, 80.0])
    assert np.isnan(killed_run.jobs["start"][2])
    assert any("rejected" in n for n in killed_run.notes)


def test_lcg_replay_stays_under_two_gigabytes(tmp_path):
    """Peak memory of a whole CLI replay of the 188,041-job LCG trace, in its own process."""
    # compile the kernels into numba's cache first: compiling is a one-off, not the replay
    warm = subprocess.run([sys.executable, "-c", "from simengine.kernel_model import warm_up_kernels; warm_up_kernels()"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert warm.returncode == 0, warm.stderr
    # VmHWM (peak RSS of this address space); ru_maxrss would carry over pytest's own peak
    # across fork + exec
    code = (
        "import re, sys; from simengine.cli import main; "
        f"rc = main(['replay', {str(TRACE_DIR / 'LCG-2005-1.swf.gz')!r}, '--scheduler', 'easy', "
        f"'--out', {str(tmp_path / 'lcg')!r}, '--quiet']); "
        "print(re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1)); sys.exit(rc)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    peak_kib = int(out.stdout.strip().splitlines()[-1])
    assert peak_kib < 2 * 1024 * 1024, f"peak RSS {peak_kib / 1024:.0f} MiB"
    rows = (tmp_path / "lcg" / "jobs.csv").read_text().count("\n") - 1
    assert rows == 188041


def test_gwf_sites_map_to_clusters():
    result = simengine.run({
        "platform": {"clusters": [{"name": "leiden", "processors": 32, "scheduler": {"name": "easy"}},
                                  {"name": "delft", "processors": 32, "scheduler": {"name": "fcfs"}}]},
        "workload": {"streams": [{"kind": "trace", "name": "tiny", "path": str(ROOT / "examples/traces/tiny.gwf"),
                                  "target": "grid", "site_map": {"fs0": "leiden", "fs1": "delft"}}]},
    })
    from simengine.traces import read_gwf
    trace = read_gwf(ROOT / "examples/traces/tiny.gwf")
    sites = np.asarray(trace.sites)[trace.jobs.cluster]
    names = np.asarray(result.cluster_names)[result.jobs["cluster"]]
    np.testing.assert_array_equal(names, np.where(sites == "fs0", "leiden", "delft"))
    assert result.status_counts()["completed"] == len(trace.jobs)


@pytest.mark.parametrize("path", [None, "reservations"])
def test_a_replay_cut_short_by_its_stop_rule_says_so(path):
    # issue 15: a 10,000-completion stop simulated 10,000 of DAS2-fs1's jobs without a word
    doc = {"name": "cut", "platform": {"clusters": [{"name": "fs1", "processors": 64, "scheduler": {"name": "easy"}}]},
           "workload": {"streams": [{"kind": "trace", "name": "das2", "target": "fs1",
                                     "path": str(TRACE_DIR / "DAS2-fs1-2003-1.swf.gz")}]},
           "run": {"seed": 1, "stop": {"completions": 10000}}}
    if path == "reservations":  # the event-driven path says it as well
        doc["reservations"] = [{"name": "late", "cluster": "fs1", "processors": 1, "start": 1e9, "end": 1e9 + 10,
                                "request_time": 0}]
    cut = simengine.run(doc)
    whole = len(read_swf(TRACE_DIR / "DAS2-fs1-2003-1.swf.gz").jobs)
    note = next(n for n in cut.notes if n.startswith("run.stop.completions (10,000) ended the run when"))
    assert f"of the workload's {whole:,} jobs had arrived" in note
    kept = int(note.split(" when ")[1].split(" of ")[0].replace(",", ""))
    assert 10000 <= kept < whole
    del doc["run"]["stop"]
    assert not any("ended the run" in n for n in simengine.run(doc).notes)  # the whole trace: nothing to say
    doc["run"]["stop"] = {"horizon": float(np.median(read_swf(TRACE_DIR / "DAS2-fs1-2003-1.swf.gz").jobs.submit))}
    horizon_note = next(n for n in simengine.run(doc).notes if "arrive before run.stop.horizon" in n)
    assert horizon_note.startswith("das2: ") and f"of the trace's {whole:,} jobs" in horizon_note


# ---- SWF cancellations (issue 37: SWF status 5) --------------------------------------------------------

def test_cancelled_swf_jobs_are_counted_and_those_that_never_ran_can_be_dropped(tmp_path):
    # job 1 completed; job 2 cancelled after running 5 s; jobs 3 and 4 cancelled before they ran
    lines = ["; MaxProcs: 4",
             "1 0 0 10 2 -1 -1 2 20 -1 1 1 1 1 1 1 -1 -1",
             "2 1 0 5 1 -1 -1 1 20 -1 5 1 1 1 1 1 -1 -1",
             "3 2 30 -1 4 -1 -1 4 20 -1 5 1 1 1 1 1 -1 -1",
             "4 3 30 0 4 -1 -1 4 20 -1 5 1 1 1 1 1 -1 -1"]
    (tmp_path / "c.swf").write_text("\n".join(lines) + "\n")

    def run(**stream):
        return simengine.run({"platform": {"clusters": [{"name": "c", "processors": 4}]},
                              "workload": {"streams": [{"kind": "trace", "name": "t", "target": "c",
                                                        "path": str(tmp_path / "c.swf"), **stream}]}})

    kept = run()
    assert kept.jobs["job_id"].tolist() == [1, 2, 3, 4] and kept.jobs["runtime"].tolist() == [10, 5, 0, 0]
    assert any("t: 3 jobs the trace marks cancelled (status 5): 1 ran before their cancellation and are replayed "
               "with the time they ran; 2 never ran and are replayed as jobs of run time 0" in n for n in kept.notes)
    dropped = run(cancelled="drop")
    assert dropped.jobs["job_id"].tolist() == [1, 2] and dropped.jobs["runtime"].tolist() == [10, 5]
    assert any("2 never ran and are dropped (cancelled: drop)" in n for n in dropped.notes)
    from simengine.errors import ScenarioError
    with pytest.raises(ScenarioError) as bad:
        run(cancelled="sometimes")
    assert any(e.path == "workload.streams.0.cancelled" for e in bad.value.errors)
    # withdraw (tests/simengine/test_cancellations.py): the schedule starts job 3 at 10, before its
    # cancellation (32): it runs its requested 20 s; job 4 starts at 30 and is killed at 33
    withdrawn = run(cancelled="withdraw")
    assert withdrawn.jobs["job_id"].tolist() == [1, 2, 3, 4]
    assert withdrawn.jobs["start"].tolist()[2:] == [10, 30] and withdrawn.jobs["end"].tolist()[2:] == [30, 33]
    assert withdrawn.metrics["jobs_withdrawn"].mean == 0 and withdrawn.metrics["jobs_cancelled_running"].mean == 1
