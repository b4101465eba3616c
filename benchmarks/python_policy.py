"""What a scheduler written in plain Python costs (simengine.policy, docs/write-a-policy.md):
the same policies as the built-in compiled kernels, on the same jobs, side by side.

    .venv/bin/python benchmarks/python_policy.py [--reps 3] [--load 0.9] [--cpu-time]

Input: the DAS2-fs1 trace (gridweb/demo, 39,356 jobs on 64 processors) with submit times scaled
so the offered load is ``--load`` (long queues: the hard case for a scheduler that looks at
them). For each pair it times a whole replication (``simengine.run``: trace read, schedule,
stop rule, metrics; the trace and kernels loaded once before the timing) of

* **built-in**: ``fcfs`` / ``easy``, numba kernels (simengine/schedulers);
* **plain Python**: ``python-fcfs`` / ``python-easy`` / ``python-easy-arrays`` of
  examples/policies/gridweb_example_policies/reference.py, written against simengine.policy, run
  on its event loop (``python-easy-arrays`` is EASY again, keeping the waiting jobs' sizes and
  estimates in numpy arrays between calls so its backfill scan is a few array operations). The
  script checks they give the built-in schedules (every start time equal) before the timing counts.

and, alone, ``sjf-backfill`` (the worked package's policy: it sorts the queue at every event).
It prints jobs per second (median of ``--reps``) and the built-in / Python ratio against the
issue's target of 50,000 jobs/s for a plain-Python FCFS or EASY (the simple form).

Then the event API (issue 35): the same trace with ten advance reservations of a quarter of the
machine, a second stream of high-priority jobs (2,000, priority 1) and suspend/resume preemption
(60 s overhead), by the built-in compiled ``easy`` and by ``events-easy``
(simengine/local/twins/queue.py: EASY written against the event API,
reservations, priorities and preemption included) and by ``events-easy-arrays`` (the same EASY
scanning the queue with numpy, cluster.waiting_ids), each checked to give the same job table
first; target >= 30,000 jobs/s. docs/performance.md quotes it.

``--cpu-time`` times by the process's CPU time instead of the wall clock: on a machine shared with
other work (or a virtual one whose neighbours take its cycles) the wall clock of the same run moves
by a third between minutes, the CPU time much less.
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

import simengine  # noqa: E402
import gridweb_example_policies.reference  # noqa: E402,F401  (registers the python-* twins)

TRACE = ROOT / "gridweb" / "demo" / "DAS2-fs1-2003-1.swf.gz"
TARGET = 50_000
EVENTS_TARGET = 30_000
#: (built-in kernel, the plain-Python policy giving its schedules)
TWINS = [("fcfs", "python-fcfs"), ("easy", "python-easy"), ("easy", "python-easy-arrays")]


def scenario(scheduler: str, load: float) -> dict:
    return {"platform": {"clusters": [{"name": "das2", "processors": 64, "scheduler": {"name": scheduler}}]},
            "workload": {"streams": [{"kind": "trace", "name": "das2", "path": str(TRACE), "target": "das2",
                                      "target_load": load}]},
            "run": {"seed": 1}}


def with_reservations(scheduler: str, load: float) -> dict:
    """The trace with ten reservations, a high-priority stream and suspend/resume preemption."""
    spec = scenario(scheduler, load)
    spec["platform"]["clusters"][0]["preemption"] = {"name": "suspend", "params": {"overhead": 60}}
    spec["workload"]["streams"].append(
        {"kind": "synthetic", "name": "urgent", "target": "das2", "count": 2000, "priority": 1,
         "arrival": {"target_load": 0.05}, "size": {"kind": "uniform", "low": 1, "high": 32},
         "runtime": {"kind": "exponential", "mean": 600}})
    spec["reservations"] = [{"name": f"r{i}", "cluster": "das2", "processors": 16, "start": 200_000.0 * (i + 1),
                             "end": 200_000.0 * (i + 1) + 7200} for i in range(10)]
    return spec


#: the clock ``timed`` reads (--cpu-time: time.process_time)
CLOCK = [time.perf_counter]


def timed(name: str, load: float, reps: int, make=scenario):
    spec = make(name, load)
    simengine.run(spec)  # the trace read and the kernels compiled, outside the timing
    times, result = [], None
    clock = CLOCK[0]
    for _ in range(reps):
        t0 = clock()
        result = simengine.run(spec)
        times.append(clock() - t0)
    return statistics.median(times), result


def side_by_side(python_name: str, base: str, builtin, python, target: int, columns) -> bool:
    """Print one row (jobs/s of both, their ratio, the target) once the Python policy's job table
    equals the built-in's in ``columns``; False if it does not."""
    (t_builtin, b), (t_python, p) = builtin, python
    for column in columns:
        if not np.array_equal(b.jobs[column], p.jobs[column], equal_nan=b.jobs[column].dtype.kind == "f"):
            print(f"{python_name}: its {column} column differs from the built-in {base}'s", file=sys.stderr)
            return False
    n = len(b.jobs["start"])
    rate_b, rate_p = n / t_builtin, n / t_python
    status = "PASS" if rate_p >= target else "MISS"
    print(f"{python_name:<20}{rate_b:>12,.0f}/s {rate_p:>12,.0f}/s {rate_b / rate_p:>7.1f}x  >= {target:,}/s {status}")
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--load", type=float, default=0.9)
    ap.add_argument("--cpu-time", action="store_true", help="time by the process's CPU time, not the wall clock")
    args = ap.parse_args()
    if args.cpu_time:
        CLOCK[0] = time.process_time
    print(f"DAS2-fs1 at offered load {args.load}, 64 processors, median of {args.reps} "
          f"({'CPU time' if args.cpu_time else 'wall clock'})")
    print(f"{'plain-Python policy':<20}{'built-in':>14}{'plain Python':>16}{'ratio':>9}  target (Python)")
    builtins = {}
    for base, python_name in TWINS:
        if base not in builtins:
            builtins[base] = timed(base, args.load, args.reps)
        if not side_by_side(python_name, base, builtins[base], timed(python_name, args.load, args.reps), TARGET,
                            ("start",)):
            return 1
    t_sjf, sjf = timed("sjf-backfill", args.load, args.reps)
    print(f"{'sjf-backfill':<20}{'':>14}{len(sjf.jobs['start']) / t_sjf:>14,.0f}/s")

    print("\nEvent API: + ten reservations, a high-priority stream, suspend/resume preemption")
    builtin = timed("easy", args.load, args.reps, with_reservations)
    for twin in ("events-easy", "events-easy-arrays"):
        if not side_by_side(twin, "easy", builtin, timed(twin, args.load, args.reps, with_reservations),
                            EVENTS_TARGET, tuple(builtin[1].jobs)):
            return 1
    print(f"({int(builtin[1].jobs['preemptions'].sum())} preemptions in the replication)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
