"""Parameter sweeps: grid expansion, validation of every point, results equal single runs."""
from __future__ import annotations

import csv
import subprocess
import sys

import pytest

import simengine
from simengine.errors import ScenarioError
from tests.conftest import ROOT

BASE = {
    "name": "sweep base",
    "platform": {"clusters": [{"name": "c", "processors": 16, "scheduler": {"name": "easy"}}]},
    "workload": {"streams": [{"kind": "synthetic", "name": "s", "target": "c", "arrival": {"target_load": 0.6},
                              "size": {"kind": "rsd", "low": 1, "high": 16, "q": 0.9},
                              "runtime": {"kind": "exponential", "mean": 60},
                              "estimate": {"kind": "factor", "factor": {"kind": "uniform", "low": 1, "high": 2}}}]},
    "run": {"seed": 5, "replications": 2, "stop": {"completions": 1500}, "warmup": {"completions": 100}},
}
GRID = {"platform.clusters.0.scheduler.name": ["fcfs", "easy"],
        "workload.streams.0.arrival.target_load": [0.5, 0.8]}


def test_grid_expands_in_order_and_resets_policy_params():
    points = simengine.expand_sweep(BASE, GRID)
    assert [p for p, _ in points] == [
        {"platform.clusters.0.scheduler.name": a, "workload.streams.0.arrival.target_load": b}
        for a in ("fcfs", "easy") for b in (0.5, 0.8)]
    fcfs = points[0][1].platform.clusters[0].scheduler
    easy = points[2][1].platform.clusters[0].scheduler
    assert fcfs.name == "fcfs" and fcfs.params == {}
    assert easy.name == "easy" and easy.params == {"overrun_step": 60.0}
    assert points[1][1].workload.streams[0].arrival.target_load == 0.8
    assert len({simengine.scenario_hash(s) for _, s in points}) == 4


def test_every_bad_point_is_reported_with_its_values():
    with pytest.raises(ScenarioError) as e:
        simengine.expand_sweep(BASE, {"platform.clusters.0.processors": [0, 16, -1]})
    paths = [err.path for err in e.value.errors]
    assert paths == ["[platform.clusters.0.processors=0] platform.clusters.0.processors",
                     "[platform.clusters.0.processors=-1] platform.clusters.0.processors"]
    with pytest.raises(ScenarioError) as e:
        simengine.expand_sweep(BASE, {"platform.clusters.3.processors": [8]})
    assert e.value.errors[0].path == "sweep.platform.clusters.3.processors"
    with pytest.raises(ScenarioError, match="non-empty list"):
        simengine.expand_sweep(BASE, {"run.seed": []})


def test_sweep_points_equal_single_runs_in_a_pool_or_not():
    pooled = simengine.sweep(BASE, GRID, workers=2)
    alone = simengine.sweep(BASE, GRID, workers=1)
    assert [p.summary["metrics"] for p in pooled.points] == [p.summary["metrics"] for p in alone.points]
    for point, (params, scenario) in zip(pooled.points, simengine.expand_sweep(BASE, GRID)):
        single = simengine.run(scenario)
        assert point.summary["metrics"]["mean_wait"]["values"] == single.metrics["mean_wait"].values
        assert point.scenario_hash == simengine.scenario_hash(scenario)
    table = pooled.table()
    # backfilling never makes the mean wait worse here, and load makes everything wait longer
    by = {(r["platform.clusters.0.scheduler.name"], r["workload.streams.0.arrival.target_load"]): r for r in table}
    assert by[("easy", 0.8)]["mean_wait"] < by[("fcfs", 0.8)]["mean_wait"]
    assert by[("fcfs", 0.5)]["mean_wait"] < by[("fcfs", 0.8)]["mean_wait"]
    assert all(r["mean_wait_ci_low"] <= r["mean_wait"] <= r["mean_wait_ci_high"] for r in table)


def test_cli_sweep_writes_the_table(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "simengine", "sweep", "examples/single-cluster-easy.yaml",
         "--param", "platform.clusters.0.scheduler.name=fcfs,conservative", "--param", "run.stop.completions=2000",
         "--param", "run.warmup.completions=100", "--out", tmp_path / "s", "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    with open(tmp_path / "s" / "sweep.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["platform.clusters.0.scheduler.name"] for r in rows] == ["fcfs", "conservative"]
    assert (tmp_path / "s" / "points" / "1" / "summary.json").exists()
    bad = subprocess.run([sys.executable, "-m", "simengine", "sweep", "examples/single-cluster-easy.yaml",
                          "--param", "run.seed", "--out", tmp_path / "b"], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and "--param" in bad.stderr
