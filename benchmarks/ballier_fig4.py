"""The full Figure 4 sweep of Ballier et al. (co-allocation with start deadlines), timed.

5 Wait-X policies (0, 10, 100, 1000, inf) x 10 global arrival rates (0.001 .. 0.010 /s) x
LP/GP x 5 replications = 500 runs of 2,000,000 simulated seconds each on 4 clusters of 32
processors at 30% local load, in a process pool (one worker per core). Prints the wall time
against the 5-minute target and a few of the figure's values (success rates with 95% CIs),
and exits 1 when the target is missed.

    .venv/bin/python benchmarks/ballier_fig4.py [--workers N] [--reps R]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_SECONDS = 300.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--reps", type=int, default=5, help="replications per point (5 in the acceptance)")
    args = ap.parse_args(argv)

    from simengine.grid.model import warm_up
    from simengine.reproductions.ballier import FULL, WAITS, Config, fig4_configs, measure, wait_label

    size = dict(FULL, replications=args.reps)
    configs = fig4_configs(size)
    t = time.perf_counter()
    warm_up()  # compile (or load numba's cache) in this process, outside the timed part
    compile_s = time.perf_counter() - t
    print(f"Figure 4 sweep: {len(configs)} points x {args.reps} replications = {len(configs) * args.reps} runs of "
          f"{FULL['horizon']:,.0f} s, {args.workers} worker process(es); kernel ready in {compile_s:.1f} s")
    t0 = time.perf_counter()
    res = measure(configs, size, args.workers, log=lambda m: print(m, flush=True))
    wall = time.perf_counter() - t0
    print(f"\nwall time {wall:.1f} s for {len(configs) * args.reps} runs "
          f"({wall / (len(configs) * args.reps) * args.workers * 1000:.0f} ms per run per worker); "
          f"target {TARGET_SECONDS:.0f} s: {'PASS' if wall < TARGET_SECONDS else 'MISS'}")
    print("\nglobal success rate (%), mean ± 95% CI half-width:")
    rates = size["rates"]
    shown = (rates[0], rates[len(rates) // 2], rates[-1])
    print(f"{'policy':16s}" + "".join(f"  lambda_g={r:<6g}      " for r in shown))
    for p in ("LP", "GP"):
        for w in WAITS:
            cells = []
            for r in shown:
                m = res[Config(0.3, "rate", r, wait_x=w, priority=p)]["global_success_rate"]
                cells.append(f"  {m.mean * 100:6.2f} ± {m.half_width * 100 if m.half_width else 0:5.2f}     ")
            print(f"{wait_label(w) + ' ' + p:16s}" + "".join(cells))
    return 0 if wall < TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
