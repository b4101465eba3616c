"""What a reservation admission written in plain Python costs in Cao's system (simengine.cao.admission,
docs/policies/reservation-admission.md): examples/cao-scojo-rars.yaml run with the compiled
``earliest-lft`` (the default) and with ``earliest-lft-python`` (the same rule through the public
API, examples/policies), side by side.

    .venv/bin/python benchmarks/cao_admission.py [--reps 3] [--count 400]

``--count`` jobs per stream (the example's 400), both replications. The script checks the two give
the same job rows before the timing counts (one run of each first: numba's cache loaded). Prints the
median wall time of ``--reps`` whole runs (``simengine.run``) of each, the workflows and tasks
admitted, and the Python path's cost per admitted task.
"""
from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import simengine  # noqa: E402


def scenario(count: int, admission: str | None) -> dict:
    data = yaml.safe_load((ROOT / "examples" / "cao-scojo-rars.yaml").read_text())
    for s in data["workload"]["streams"]:
        s["count"] = count
    if admission:
        data["grid"]["workflow_scheduling"]["params"]["admission"] = {"name": admission}
    return data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--count", type=int, default=400)
    a = ap.parse_args()
    runs = {name: scenario(a.count, adm) for name, adm in (("compiled earliest-lft", None),
                                                            ("earliest-lft-python", "earliest-lft-python"))}
    first = {name: simengine.run(copy.deepcopy(s)) for name, s in runs.items()}
    (ra, rb) = first.values()
    for k, v in ra.jobs.items():
        assert np.array_equal(v, rb.jobs[k], equal_nan=v.dtype.kind == "f"), f"the two differ in jobs.{k}"
    tasks = int((ra.jobs["workflow"] >= 0).sum())
    times = {}
    for name, s in runs.items():
        t = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            simengine.run(copy.deepcopy(s))
            t.append(time.perf_counter() - t0)
        times[name] = statistics.median(t)
    print(f"examples/cao-scojo-rars.yaml, {a.count} jobs per stream, 2 replications: {len(ra.jobs['job_id'])} job "
          f"rows, {tasks} tasks admitted (identical results)")
    for name, t in times.items():
        print(f"  {name:24s} {t:7.3f} s")
    (tc, tp) = times.values()
    print(f"  Python path: x{tp / tc:.2f} the compiled run, {1e6 * (tp - tc) / max(tasks, 1):.0f} us more per task")


if __name__ == "__main__":
    main()
