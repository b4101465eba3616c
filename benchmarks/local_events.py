"""What the reservation/preemption path costs: the event-driven cluster simulator
(simengine/local, docs/reservations.md) against the compiled kernels on the same jobs.

    .venv/bin/python benchmarks/local_events.py [--jobs 10000] [--reps 3] [--random]

Input: the first ``--jobs`` jobs of the DAS2-fs1 trace (gridweb/demo, 64 processors),
submit times compressed so the offered load is 0.85 (long queues: a real trace's estimates are
far above its run times). ``--random`` instead: a short-queue synthetic workload on 128
processors (exponential run times of mean 100 s, estimates 1, 1.5 or 3 times the run time,
sizes uniform in 1..128, Poisson arrivals at load 0.85, seed 1). For FCFS, EASY and
conservative it times

* **kernel**: the numba kernel of simengine/schedulers (start times only; compiled first, outside
  the timing);
* **events**: simengine.local.ClusterSim on the same jobs, no reservations, no preemption — it
  must give the kernel's start times, and the script checks that before timing counts;
* **events + AR + suspend**: the same jobs, two priorities (every tenth job high), ten rigid
  advance reservations of a quarter of the machine and suspend/resume preemption with 60 s
  overhead: the general path doing its real work.

It prints jobs per second (median of ``--reps``) and how many times faster the kernel is. There is no target
(issue 4 sets none); the figures are measured here, side by side, on the same machine and input.
docs/reservations.md quotes them.
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

from simengine.local.cluster import AdvanceReservation, ClusterSim  # noqa: E402
from simengine.preemption import preemption_mode  # noqa: E402
from simengine.registry import LOCAL_SCHEDULERS  # noqa: E402
from simengine.schedulers.base import BackfillParams  # noqa: E402
from simengine.traces import read_trace  # noqa: E402

TRACE = ROOT / "gridweb" / "demo" / "DAS2-fs1-2003-1.swf.gz"
PROCESSORS = 64


def workload(n: int):
    jobs = read_trace(TRACE, limit=n).jobs
    keep = (jobs.processors <= PROCESSORS) & (jobs.runtime >= 0)
    submit = jobs.submit[keep] - jobs.submit[keep][0]
    runtime, size = jobs.runtime[keep], jobs.processors[keep]
    estimate = np.maximum(jobs.estimate[keep], runtime)  # the trace's requests, never below the run
    load = float((runtime * size).sum()) / (PROCESSORS * submit[-1])
    return submit * load / 0.85, runtime, estimate, size


def random_workload(n: int, processors: int = 128):
    rng = np.random.default_rng(1)
    runtime = rng.exponential(100.0, n)
    estimate = runtime * rng.choice([1.0, 1.5, 3.0], n)
    size = rng.integers(1, processors + 1, n)
    submit = np.cumsum(rng.exponential(1.0, n))
    load = float((runtime * size).sum()) / (processors * submit[-1])
    return submit * load / 0.85, runtime, estimate, size


def timed(fn, reps: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--random", action="store_true", help="the short-queue synthetic workload, 128 processors")
    args = ap.parse_args()
    if args.random:
        processors = 128
        submit, runtime, estimate, size = random_workload(args.jobs, processors)
    else:
        processors = PROCESSORS
        submit, runtime, estimate, size = workload(args.jobs)
    n = len(submit)
    priority = (np.arange(n) % 10 == 0).astype(np.int64)
    span = submit[-1]
    suspend = preemption_mode({"name": "suspend", "params": {"overhead": 60.0}})
    source = "random workload" if args.random else "DAS2-fs1"
    print(f"{source}, first {n} jobs, {processors} processors, offered load 0.85, median of {args.reps}")
    print(f"{'policy':<13}{'kernel jobs/s':>15}{'events jobs/s':>15}{'kernel faster':>15}"
          f"{'AR+suspend jobs/s':>19}{'kernel faster':>15}")
    for policy in ("fcfs", "easy", "conservative"):
        entry = LOCAL_SCHEDULERS.get(policy)
        params = entry.params() if entry.params is not BackfillParams else BackfillParams()
        entry.implementation(submit[:50], runtime[:50], estimate[:50], size[:50], processors, params)  # compile
        t_k, kernel = timed(lambda: entry.implementation(submit, runtime, estimate, size, processors, params), args.reps)
        t_e, sim = timed(lambda: ClusterSim(processors, policy, submit, runtime, estimate, size).run(), args.reps)
        same = np.array_equal(np.asarray(sim.first_start), kernel.start, equal_nan=True)
        if not same:
            print(f"{policy}: the event-driven path's start times differ from the kernel's", file=sys.stderr)
            return 1

        def general():
            ars = [AdvanceReservation(i, processors // 4, span * (i + 0.5) / 10, span * (i + 0.5) / 10 + 3600.0,
                                      request_time=span * i / 10) for i in range(10)]
            return ClusterSim(processors, policy, submit, runtime, estimate, size, priority=priority,
                              reservations=ars, mode=suspend).run()

        t_g, _ = timed(general, args.reps)
        print(f"{policy:<13}{n / t_k:>15,.0f}{n / t_e:>15,.0f}{t_e / t_k:>14,.0f}x{n / t_g:>19,.0f}{t_g / t_k:>14,.0f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
