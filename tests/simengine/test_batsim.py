"""Batsim's ``_jobs.csv`` out of a run (simengine.batsim): the file evalys and Batsim's tools read.
Its rows are the run's finished jobs with the processors its Gantt gave them."""
from __future__ import annotations

import csv

import numpy as np
import pytest
import yaml

import simengine
from simengine.batsim import COLUMNS, interval_set, interval_sets
from simengine.traces import read_trace
from simengine.workload import STATUS_REJECTED
from tests.conftest import ROOT


def read(path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def resources(text: str) -> list[int]:
    out = []
    for part in text.split():
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def test_interval_sets_are_written_as_batsim_writes_them():
    assert interval_set(np.array([3, 0, 1, 2, 8])) == "0-3 8"
    assert interval_set(np.array([5])) == "5" and interval_set(np.array([], int)) == ""


def test_the_interval_sets_of_many_jobs_at_once_are_each_jobs_own():
    # random ranges of 300 owners (overlapping, touching, apart, none), against one set per owner
    rng = np.random.default_rng(3)
    owner = rng.integers(0, 300, 2000)
    first = rng.integers(0, 500, 2000)
    count = rng.integers(1, 6, 2000)
    got = interval_sets(owner, first, count, 310)
    for k in range(310):
        mine = owner == k
        held = np.concatenate([np.arange(a, a + c) for a, c in zip(first[mine], count[mine])] or [np.zeros(0, int)])
        want = " ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in _runs(sorted(set(held.tolist()))))
        assert got[k] == want, k


def _runs(ids: list[int]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for i in ids:
        if out and i == out[-1][1] + 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return [tuple(r) for r in out]


def test_names_with_commas_and_quotes_are_quoted_as_the_csv_module_does(tmp_path):
    path = tmp_path / "w.json"
    path.write_text('{"nb_res": 2, "jobs": [{"id": "a,b", "subtime": 0, "res": 1, "profile": "say \\"hi\\""},'
                    ' {"id": 7, "subtime": 1, "res": 1, "profile": "plain"}],'
                    ' "profiles": {"say \\"hi\\"": {"type": "delay", "delay": 3}, "plain": {"type": "delay", "delay": 2}}}')
    result = simengine.run({"platform": {"clusters": [{"name": "c", "processors": 2}]},
                            "workload": {"streams": [{"kind": "trace", "name": "w", "target": "c", "path": str(path)}]}})
    result.write_batsim_jobs(tmp_path / "jobs.csv")
    rows = read(tmp_path / "jobs.csv")
    assert [(r["job_id"], r["profile"]) for r in rows] == [("a,b", 'say "hi"'), ("7", "plain")]


@pytest.mark.parametrize("example", ["multicluster-4x32.yaml", "ballier-4x32.yaml"])
def test_the_batsim_jobs_file_is_the_runs_finished_jobs_on_the_processors_drawn(tmp_path, example):
    data = yaml.safe_load((ROOT / "examples" / example).read_text())
    data["run"]["replications"] = 1
    if "horizon" in (data["run"].get("stop") or {}):
        data["run"]["stop"]["horizon"] = 30000
        data["run"]["warmup"] = {"time": 0}
    result = simengine.run(data)
    result.write_batsim_jobs(tmp_path / "batsim_jobs.csv")
    rows = read(tmp_path / "batsim_jobs.csv")
    assert list(rows[0]) == list(COLUMNS)
    jobs = result.jobs
    finished = (jobs["replication"] == 0) & ~np.isnan(jobs["end"]) & ~np.isnan(jobs["start"])
    rejected = (jobs["replication"] == 0) & (jobs["status"] == STATUS_REJECTED)
    assert len(rows) == int(finished.sum() + rejected.sum()) > 100
    assert len({(r["workload_name"], r["job_id"]) for r in rows}) == len(rows)  # unique within a workload
    rows = [r for r in rows if r["final_state"] != "REJECTED"]
    total = sum(result.cluster_processors)
    busy = []  # (resource, start, finish)
    for r in rows:
        held = resources(r["allocated_resources"])
        assert len(held) == int(r["requested_number_of_resources"]) and all(0 <= p < total for p in held)
        start, finish = float(r["starting_time"]), float(r["finish_time"])
        assert float(r["execution_time"]) == pytest.approx(finish - start)
        assert float(r["waiting_time"]) == pytest.approx(start - float(r["submission_time"]))
        assert r["final_state"] in ("COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED", "COMPLETED_KILLED")
        assert r["success"] == ("1" if r["final_state"] == "COMPLETED_SUCCESSFULLY" else "0")
        busy += [(p, start, finish) for p in held]
    busy.sort()
    for (p, _, f), (q, s, _) in zip(busy, busy[1:]):  # no resource held by two jobs at once
        assert p != q or s >= f - 1e-9


def test_the_cli_writes_it_on_request(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "simengine", "replay", str(ROOT / "gridweb" / "demo" /
                           "DAS2-fs1-2003-1.swf.gz"), "--processors", "64", "--limit", "500", "--scheduler", "easy",
                           "--batsim", "--batsim-precision", "0", "--quiet", "--out", str(out)],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    rows = read(out / "batsim_jobs.csv")
    assert len(rows) > 400 and rows[0]["workload_name"] == "DAS2-fs1-2003-1.swf.gz"
    # the trace's job numbers, as Batsim names a workload's jobs (the workload in its own column)
    swf = read_trace(ROOT / "gridweb" / "demo" / "DAS2-fs1-2003-1.swf.gz", limit=500).jobs
    assert [r["job_id"] for r in rows[:50]] == [str(i) for i in swf.job_id[:50]] and rows[0]["profile"] == ""
    assert all(float(r["starting_time"]) % 1 == 0 for r in rows if r["starting_time"])  # --batsim-precision 0


def test_a_batsim_workload_is_killed_at_its_walltime_unless_its_stream_says_otherwise(tmp_path):
    # Batsim's case study 1 (tests/data/batsim-v5): job 3 runs 10 s with a walltime of 6; Batsim kills
    # it there (COMPLETED_WALLTIME_REACHED, success 0), the others complete before their walltimes
    path = ROOT / "tests" / "data" / "batsim-v5" / "test_case_study1.json"
    spec = {"platform": {"clusters": [{"name": "c", "processors": 4, "scheduler": {"name": "fcfs"}}]},
            "workload": {"streams": [{"kind": "trace", "name": "w0", "target": "c", "path": str(path)}]}}
    simengine.run(spec).write_batsim_jobs(tmp_path / "jobs.csv")
    rows = read(tmp_path / "jobs.csv")
    state = {r["job_id"]: (r["final_state"], r["success"], float(r["execution_time"])) for r in rows}
    assert state == {"1": ("COMPLETED_SUCCESSFULLY", "1", 10.0), "2": ("COMPLETED_SUCCESSFULLY", "1", 5.0),
                     "3": ("COMPLETED_WALLTIME_REACHED", "0", 6.0)}
    assert [(r["workload_name"], r["profile"]) for r in rows] == [("w0", "delay10"), ("w0", "delay5"),
                                                                   ("w0", "delay10")]
    # the stream's enforce_walltime: false runs job 3 its 10 s; so does an SWF trace's job by default
    spec["workload"]["streams"][0]["enforce_walltime"] = False
    simengine.run(spec).write_batsim_jobs(tmp_path / "jobs.csv")
    assert {r["final_state"] for r in read(tmp_path / "jobs.csv")} == {"COMPLETED_SUCCESSFULLY"}
    # ... and run.enforce_walltime does not override a Batsim workload's own default
    spec["workload"]["streams"][0].pop("enforce_walltime")
    spec["run"] = {"enforce_walltime": False}
    assert simengine.run(spec).status_counts()["killed"] == 1


def test_an_swf_trace_runs_past_its_estimates_unless_told():
    trace = ROOT / "gridweb" / "demo" / "DAS2-fs1-2003-1.swf.gz"
    spec = {"platform": {"clusters": [{"name": "c", "processors": 64}]},
            "workload": {"streams": [{"kind": "trace", "name": "das", "target": "c", "path": str(trace), "limit": 2000}]}}
    jobs = read_trace(trace, limit=2000).jobs
    over = int((jobs.runtime > jobs.estimate).sum())
    assert over > 0  # (the trace has jobs that ran past their request)
    assert simengine.run(spec).status_counts()["killed"] == 0
    spec["workload"]["streams"][0]["enforce_walltime"] = True
    assert simengine.run(spec).status_counts()["killed"] == over


def test_rejected_jobs_are_listed_as_batsim_lists_them(tmp_path):
    # a job larger than its cluster is rejected: Batsim writes it REJECTED with empty times
    path = ROOT / "tests" / "data" / "batsim-v5" / "test_case_study1.json"
    spec = {"platform": {"clusters": [{"name": "c", "processors": 3}]},
            "workload": {"streams": [{"kind": "trace", "name": "w0", "target": "c", "path": str(path)}]}}
    result = simengine.run(spec)
    result.write_batsim_jobs(tmp_path / "jobs.csv")
    rows = read(tmp_path / "jobs.csv")
    jobs = read_trace(path).jobs
    assert [r["job_id"] for r in rows] == [i.decode() for i in jobs.extra["batsim_id"]]  # every job, in order
    big = jobs.processors > 3
    assert big.any() and (~big).any()
    for r, large in zip(rows, big):
        if large:
            assert (r["final_state"], r["success"], r["starting_time"], r["allocated_resources"]) == \
                ("REJECTED", "0", "", "")
        else:
            assert r["final_state"] != "REJECTED" and r["starting_time"] != "" and r["allocated_resources"] != ""


def test_whole_seconds_keep_every_processor_to_one_job_at_a_time(tmp_path):
    # rounding the instants keeps their order, so the jobs a processor ran one after another stay
    # apart, spans are differences of whole seconds, and processors in use never exceed the platform
    data = yaml.safe_load((ROOT / "examples" / "multicluster-4x32.yaml").read_text())
    data["run"]["replications"] = 1
    result = simengine.run(data)
    result.write_batsim_jobs(tmp_path / "exact.csv")
    result.write_batsim_jobs(tmp_path / "whole.csv", precision=0)
    exact, whole = read(tmp_path / "exact.csv"), read(tmp_path / "whole.csv")
    assert [r["job_id"] for r in exact] == [r["job_id"] for r in whole]
    assert any(float(r["starting_time"]) % 1 for r in exact)  # (the run has fractional times)
    busy, events = [], []
    for r in whole:
        start, execution, finish = (float(r[k]) for k in ("starting_time", "execution_time", "finish_time"))
        assert start == round(start) and finish == round(finish) and start + execution == finish
        assert float(r["waiting_time"]) == start - float(r["submission_time"])
        busy += [(p, start, finish) for p in resources(r["allocated_resources"])]
        events += [(start, 1, int(r["requested_number_of_resources"])), (finish, 0, -int(r["requested_number_of_resources"]))]
    busy.sort()
    for (p, _, f), (q, s, _) in zip(busy, busy[1:]):  # strictly: no tolerance needed
        assert p != q or s >= f
    in_use = np.cumsum([d for _, _, d in sorted(events)])  # (ends before starts at an instant)
    assert in_use.max() <= sum(result.cluster_processors)
    with pytest.raises(ValueError, match="precision"):
        result.write_batsim_jobs(tmp_path / "bad.csv", precision=12)


def test_gridwebs_utilisation_and_evalys_measure_the_same_busy_time_over_their_own_windows(tmp_path):
    # docs/output.md: utilisation x processors x last end = evalys's mean utilisation (processors in
    # use from the first start to the last end, recomputed from the file as evalys does) x its window
    trace = ROOT / "gridweb" / "demo" / "DAS2-fs1-2003-1.swf.gz"
    spec = {"platform": {"clusters": [{"name": "c", "processors": 64, "scheduler": {"name": "easy"}}]},
            "workload": {"streams": [{"kind": "trace", "name": "das", "target": "c", "path": str(trace),
                                      "limit": 3000, "enforce_walltime": True}]}}
    result = simengine.run(spec)
    assert result.status_counts()["killed"] > 0  # (killed runs count in both)
    result.write_batsim_jobs(tmp_path / "jobs.csv")
    rows = [r for r in read(tmp_path / "jobs.csv") if r["final_state"] != "REJECTED"]
    start = [float(r["submission_time"]) + float(r["waiting_time"]) for r in rows]  # as evalys recomputes
    end = [s + float(r["execution_time"]) for s, r in zip(start, rows)]
    area = sum(int(r["requested_number_of_resources"]) * float(r["execution_time"]) for r in rows)
    evalys_mean = area / (max(end) - min(start))
    utilisation = result.metrics["utilisation"].mean
    assert utilisation * 64 * max(end) == pytest.approx(area, rel=1e-9)
    assert evalys_mean * (max(end) - min(start)) == pytest.approx(utilisation * 64 * max(end), rel=1e-9)
    assert evalys_mean / 64 >= utilisation  # (its window starts no earlier)
