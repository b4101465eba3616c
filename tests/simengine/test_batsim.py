"""Batsim's ``_jobs.csv`` out of a run (simengine.batsim): the file evalys and Batsim's tools read.
Its rows are the run's finished jobs with the processors its Gantt gave them."""
from __future__ import annotations

import csv

import numpy as np
import pytest
import yaml

import simengine
from simengine.batsim import COLUMNS, interval_set
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
    assert len(rows) == int(finished.sum()) > 100
    assert len({r["job_id"] for r in rows}) == len(rows)  # Batsim's ids are unique
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
                           "--batsim", "--quiet", "--out", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    rows = read(out / "batsim_jobs.csv")
    assert len(rows) > 400 and rows[0]["workload_name"] == "DAS2-fs1-2003-1.swf.gz"
    assert rows[0]["job_id"].startswith("DAS2-fs1-2003-1.swf.gz!")


def test_a_job_stopped_at_its_walltime_has_batsims_final_state(tmp_path):
    # Batsim's case study 1 (tests/data/batsim-v5): job 3 runs 10 s with a walltime of 6; Batsim kills
    # it there (COMPLETED_WALLTIME_REACHED, success 0), the others complete before their walltimes
    path = ROOT / "tests" / "data" / "batsim-v5" / "test_case_study1.json"
    spec = {"platform": {"clusters": [{"name": "c", "processors": 4, "scheduler": {"name": "fcfs"}}]},
            "workload": {"streams": [{"kind": "trace", "name": "w0", "target": "c", "path": str(path)}]},
            "run": {"enforce_walltime": True}}
    simengine.run(spec).write_batsim_jobs(tmp_path / "jobs.csv")
    state = {r["job_id"]: (r["final_state"], r["success"], float(r["execution_time"])) for r in read(tmp_path / "jobs.csv")}
    assert state == {"w0!1": ("COMPLETED_SUCCESSFULLY", "1", 10.0), "w0!2": ("COMPLETED_SUCCESSFULLY", "1", 5.0),
                     "w0!3": ("COMPLETED_WALLTIME_REACHED", "0", 6.0)}
    # without the walltime enforced, job 3 runs its 10 s and completes
    spec["run"]["enforce_walltime"] = False
    simengine.run(spec).write_batsim_jobs(tmp_path / "jobs.csv")
    assert {r["final_state"] for r in read(tmp_path / "jobs.csv")} == {"COMPLETED_SUCCESSFULLY"}
