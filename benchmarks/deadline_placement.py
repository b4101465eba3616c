"""What a placement policy written in Python costs on the deadline path (Ballier's RPP;
docs/policies/deadline-placement.md quotes it).

    .venv/bin/python benchmarks/deadline_placement.py [--reps 5] [--replications 1]

Input: examples/ballier-4x32.yaml's replications (the workload drawn once, before the timing).
For each placement it times the simulation only (``GridRun`` built and advanced to its end):

* ``worst-fit``: compiled into the co-allocation kernel;
* ``python-worst-fit``: the same rule in plain Python (examples/policies), the kernel stopping
  at each placement attempt for it -- checked to give the compiled schedule before timing;
* ``best-fit-deadline``: the worked example (headroom 16).

It prints the best of ``--reps`` seconds, placement attempts, and attempts per second.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import simengine  # noqa: E402
from simengine.grid import kernel as K  # noqa: E402
from simengine.grid.model import GridPolicy, GridRun, LocalJobs  # noqa: E402
from simengine.grid.run import build_workload, policy_of  # noqa: E402

PLACEMENTS = (("worst-fit", None), ("python-worst-fit", None), ("best-fit-deadline", {"headroom": 16}))


def runs(scenario, workloads, name, params):
    base = policy_of(scenario)
    pol = GridPolicy(**{**base.__dict__, "placement": name, "placement_params": params})
    horizon = scenario.run.stop.horizon
    out = []
    for w in workloads:
        keep = ~w.local_rejected
        local = LocalJobs(w.local.submit[keep], w.local.runtime[keep], w.local.size[keep], w.local.cluster[keep])
        run = GridRun(w.processors, local, w.glob, pol, horizon=math.inf if horizon is None else float(horizon),
                      warmup=scenario.run.warmup.time)
        run.advance(math.inf)
        out.append(run.outcome())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--replications", type=int, default=1)
    a = ap.parse_args()
    scenario = simengine.load_scenario(yaml.safe_load((ROOT / "examples" / "ballier-4x32.yaml").read_text()))
    workloads = [build_workload(scenario, r) for r in range(a.replications)]
    n_local = sum(len(w.local) for w in workloads)
    n_global = sum(len(w.glob) for w in workloads)
    reference = None
    print(f"ballier-4x32: {a.replications} replication(s), {n_local} local jobs, {n_global} global jobs")
    for name, params in PLACEMENTS:
        outcomes = runs(scenario, workloads, name, params)  # (warm: compiled kernel loaded)
        if name == "worst-fit":
            reference = outcomes
        elif name == "python-worst-fit":
            for o, ref in zip(outcomes, reference):  # (tests/simengine/test_policy_deadline_placement.py: all of it)
                for field in ("local_start", "local_end", "global_state", "global_hold", "global_tries"):
                    assert np.array_equal(getattr(o, field), getattr(ref, field), equal_nan=True), field
                placed = np.repeat(np.isin(ref.global_state, (K.G_CLAIMED, K.G_RUNNING, K.G_DONE)),
                                   np.diff(ref.component_offset))
                assert np.array_equal(o.component_cluster[placed], ref.component_cluster[placed])
        attempts = sum(int(o.global_tries.sum()) for o in outcomes)
        best = math.inf
        for _ in range(a.reps):
            t0 = time.perf_counter()
            runs(scenario, workloads, name, params)
            best = min(best, time.perf_counter() - t0)
        print(f"{name:20s} {best:8.3f} s  {attempts:6d} attempts  {attempts / best:10,.0f} attempts/s")


if __name__ == "__main__":
    main()
