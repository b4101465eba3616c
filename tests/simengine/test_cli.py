"""python -m simengine: validate, run, replay -- output files and clear errors."""
from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT, TRACE_DIR

DAS2 = TRACE_DIR / "DAS2-fs1-2003-1.swf.gz"


def cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "simengine", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_validate_accepts_an_example():
    out = cli("validate", "examples/single-cluster-easy.yaml")
    assert out.returncode == 0, out.stderr
    assert "valid scenario" in out.stdout


def test_validate_prints_every_error_with_its_field_path(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "platform:\n  clusters:\n    - {name: a, processors: -3, scheduler: {name: fifo}}\n"
        "workload:\n  streams:\n    - {kind: synthetic, name: s, target: a, arrival: {rate: 1},\n"
        "       size: {kind: constant, value: 1}, runtime: {kind: exponential, mean: 1}, colour: red}\n"
        "run: {stop: {completions: 10}}\n")
    out = cli("validate", bad)
    assert out.returncode == 2
    assert "platform.clusters.0.processors" in out.stderr
    assert "platform.clusters.0.scheduler" in out.stderr and "fifo" in out.stderr
    assert "workload.streams.0.colour" in out.stderr


def test_run_writes_results(tmp_path):
    out = cli("run", "examples/mmc-erlang.json", "--out", tmp_path / "mmc", "--replications", "2", "--quiet")
    assert out.returncode == 0, out.stderr
    summary = json.loads((tmp_path / "mmc" / "summary.json").read_text())
    assert summary["replications"] == 2 and summary["seed"] == 7
    assert summary["engine_seconds"] > 0
    assert summary["job_counts"]["completed"] == 400000


def test_replay_writes_jobs_csv_with_swf_job_numbers(tmp_path):
    out = cli("replay", DAS2, "--processors", "64", "--scheduler", "easy", "--out", tmp_path / "das2")
    assert out.returncode == 0, out.stderr
    with open(tmp_path / "das2" / "jobs.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert {"job_id", "submit", "start", "end", "processors", "status"} <= set(rows[0])
    assert rows[0]["job_id"] == "1" and rows[0]["processors"] == "8" and rows[0]["end"] == "1924.0"
    assert len(rows) == 39356
    summary = json.loads((tmp_path / "das2" / "summary.json").read_text())
    assert summary["job_counts"] == {"completed": 39356, "killed": 0, "failed": 0, "rejected": 0,
                                     "unfinished": 0}
    assert 0 < summary["engine_seconds"] < 60
    assert "mean_wait" in summary["metrics"] and "959 jobs skipped" in " ".join(summary["notes"])


def test_replay_target_load_rescales_submit_times(tmp_path):
    out = cli("replay", DAS2, "--processors", "64", "--scheduler", "easy", "--target-load", "0.9",
              "--out", tmp_path / "hot", "--quiet")
    assert out.returncode == 0, out.stderr
    with open(tmp_path / "hot" / "jobs.csv") as fh:
        rows = list(csv.DictReader(fh))
    submit = [float(r["submit"]) for r in rows]
    work = sum(float(r["runtime"]) * int(r["processors"]) for r in rows)
    offered = work / (64 * (max(submit) - min(submit)))
    assert offered == pytest.approx(0.9, rel=1e-9)
    summary = json.loads((tmp_path / "hot" / "summary.json").read_text())
    # the queue saturates (waits of days), so the measured utilisation, which includes the
    # drain after the last submission, stays below the offered load
    assert 0.5 < summary["metrics"]["utilisation"]["mean"] < 0.9


@pytest.mark.parametrize("args,field", [
    (["--scheduler", "sjf"], "--scheduler"),
    (["--processors", "-2"], "--processors"),
    (["--target-load", "3"], "--target-load"),
])
def test_replay_bad_options_name_the_option(tmp_path, args, field):
    out = cli("replay", DAS2, *args, "--out", tmp_path / "x")
    assert out.returncode == 2
    assert field in out.stderr
    assert not (tmp_path / "x").exists(), "nothing is written for bad input"


def test_corrupt_trace_line_names_file_line_and_field(tmp_path):
    bad = tmp_path / "bad.swf"
    bad.write_text("; MaxProcs: 8\n1 0 -1 10 2 -1 -1 2 10 -1 1 1 1 -1 1 -1 -1 -1\n"
                   "2 5 -1 ten 2 -1 -1 2 10 -1 1 1 1 -1 1 -1 -1 -1\n")
    out = cli("replay", bad, "--scheduler", "fcfs", "--out", tmp_path / "o")
    assert out.returncode == 2
    assert "bad.swf" in out.stderr and "line 3" in out.stderr and "run time" in out.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("name,text,where", [
    ("big.swf", "; MaxProcs: 8\n1 0 -1 10 2 -1 -1 2 10 -1 1 1 1 -1 1 -1 -1 -1\n"
                "2 5 -1 10 1000000000000000000 -1 -1 1000000000000000000 10 -1 1 1 1 -1 1 -1 -1 -1\n",
     "big.swf, line 3, field 5 (allocated processors): 1,000,000,000,000,000,000 processors"),
    ("big.json", json.dumps({"nb_res": 8, "jobs": [{"id": 1, "subtime": 0, "res": 10**18, "profile": "p"}],
                             "profiles": {"p": {"type": "delay", "delay": 5}}}),
     "big.json, field jobs[0].res: must be a whole number of processors from 1 to 2,147,483,647"),
])
def test_a_job_of_a_quintillion_processors_is_a_clear_cli_error(tmp_path, name, text, where):
    (tmp_path / name).write_text(text)
    out = cli("replay", tmp_path / name, "--processors", "8", "--out", tmp_path / "o")
    assert out.returncode == 2, out.stderr
    assert where in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "o").exists()


def test_job_larger_than_every_cluster_is_a_clear_cli_error(tmp_path):
    bad = tmp_path / "big.json"
    bad.write_text(json.dumps({
        "platform": {"clusters": [{"name": "a", "processors": 8}]},
        "workload": {"streams": [{"kind": "synthetic", "name": "s", "target": "a", "arrival": {"rate": 1},
                                  "size": {"kind": "constant", "value": 16},
                                  "runtime": {"kind": "exponential", "mean": 1}}]},
        "run": {"stop": {"completions": 10}}}))
    out = cli("run", bad, "--out", tmp_path / "o")
    assert out.returncode == 2
    assert "workload.streams.0.size" in out.stderr and "larger than cluster 'a'" in out.stderr


def test_run_prints_each_interval_and_flags_a_shaky_one(tmp_path):
    out = cli("run", "examples/single-cluster-easy.yaml", "--out", tmp_path / "few", "--replications", "3")
    assert out.returncode == 0, out.stderr
    wait = next(line for line in out.stdout.splitlines() if line.strip().startswith("mean_wait"))
    summary = json.loads((tmp_path / "few" / "summary.json").read_text())["metrics"]["mean_wait"]
    assert f"95% CI [{summary['ci_low']:.4g}, {summary['ci_high']:.4g}]" in wait
    assert summary["ci_low"] >= 0 and "! only 3 replications" in wait and summary["shaky"] in wait
    out = cli("run", "examples/single-cluster-easy.yaml", "--out", tmp_path / "many", "--replications", "8")
    wait = next(line for line in out.stdout.splitlines() if line.strip().startswith("mean_wait"))
    assert "95% CI" in wait and "!" not in wait, wait
