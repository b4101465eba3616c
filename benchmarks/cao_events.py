"""Cao's system (seed 001): the compiled event loop (simengine/cao/core.py) against the plain-Python
loop it replaced (tests/simengine/reference_cao.py), side by side on the reproduction's own runs,
and the whole reproduction against issue 12's target.

    .venv/bin/python benchmarks/cao_events.py [--reps 3] [--no-reproduction]

* **runs**: three of ``python -m simengine reproduce cao``'s 28 configurations at full size (4
  clusters x 20,000 Lublin-Feitelson jobs; no workflows, 40 % and 80 % of the eligible jobs as
  workflows with propagation): each simulated by the compiled loop (median of ``--reps``) and by
  the previous loop (once), which must give the same schedule -- every job row, piece and
  processor (the script checks, exit status 1 if not);
* **reproduction**: the wall time of the reproduction's 28 runs (simengine.reproductions.cao.measure,
  2 worker processes, as ``reproduce cao`` runs them; the figures and files it then writes are
  not timed), against issue 12's target: < 2 min on 2 cores.

benchmarks/run_all.py runs the same measurement as its section (f).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simengine.cao.engine import CaoParams  # noqa: E402
from simengine.cao.simulate import simulate, warm_up  # noqa: E402
from simengine.reproductions import cao as recipe  # noqa: E402
from tests.simengine import reference_cao  # noqa: E402  (the previous loop, the tests' oracle)

#: (seed, fraction of the eligible jobs made workflows, propagation)
RUNS = ((71, 0.0, False), (71, 0.4, True), (71, 0.8, True))
#: issue 12's target for the whole reproduction (seconds, 2 cores)
TARGET_SECONDS = 120.0


def same(a, b) -> bool:
    return (all(np.array_equal(a.jobs[k], b.jobs[k], equal_nan=True) for k in b.jobs)
            and a.pieces == b.pieces and a.procs == b.procs and a.events == b.events)


def measure_runs(reps: int, out=print) -> list[dict]:
    """Each RUNS configuration at full size: the compiled loop (median of ``reps``) and the
    previous loop (once) on the same input; one dict per run (seconds, ``same``)."""
    warm_up()
    out(f"{'seed':>5}{'workflows':>11}{'propagation':>13}{'jobs':>9}{'compiled':>11}{'previous':>11}{'faster':>9}")
    rows = []
    for seed, fraction, propagation in RUNS:
        local, wfs = recipe._workload(seed, fraction, recipe.FULL["jobs"])
        p = CaoParams(propagation=propagation, **recipe.PARAMS)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            got = simulate(local, wfs, p)
            times.append(time.perf_counter() - t0)
        t_new = statistics.median(times)
        t0 = time.perf_counter()
        want = reference_cao.simulate(local, wfs, p)
        t_old = time.perf_counter() - t0
        n = len(got.jobs["job_id"])
        row = {"seed": seed, "fraction": fraction, "propagation": propagation, "jobs": n, "compiled": t_new,
               "previous": t_old, "same": same(got, want)}
        out(f"{seed:>5}{fraction:>10.0%}{str(propagation):>13}{n:>9,}{t_new:>10.2f}s{t_old:>10.2f}s"
            f"{t_old / t_new:>8.1f}x" + ("" if row["same"] else "  SCHEDULES DIFFER"))
        rows.append(row)
    return rows


def measure_reproduction(out=print) -> dict:
    """The reproduction's 28 runs on 2 worker processes: wall and summed simulation seconds."""
    warm_up()
    t0 = time.perf_counter()
    res, busy = recipe.measure(recipe.FULL, 2, lambda line: None)
    wall = time.perf_counter() - t0
    out(f"reproduce cao, {len(res)} runs of 4 x {recipe.FULL['jobs']:,} jobs on 2 workers: {wall:.1f} s wall "
        f"({busy:.1f} s of simulation); target < {TARGET_SECONDS:.0f} s: "
        + ("PASS" if wall < TARGET_SECONDS else "MISS"))
    return {"runs": len(res), "wall": wall, "busy": busy, "target": TARGET_SECONDS}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-reproduction", action="store_true", help="skip timing the whole reproduction")
    args = ap.parse_args()
    rows = measure_runs(args.reps)
    if not args.no_reproduction:
        measure_reproduction()
    return 0 if all(r["same"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
