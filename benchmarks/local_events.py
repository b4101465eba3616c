"""What the reservation/preemption path costs, and issue 12's event-core targets: the compiled
event core (simengine.local.cluster.ClusterSim) against the compiled kernels and against the plain-Python
event loop it replaced (tests/simengine/reference_cluster.py), side by side on the same jobs.

    .venv/bin/python benchmarks/local_events.py [--jobs N] [--reps 3] [--random] [--no-previous] [--split]
                                                [--cpu-time] [--policies easy,conservative]
                                                [--peer REV [--rounds 3]] [--copies [--rounds 3]]

Input: the DAS2-fs1 trace (gridweb/demo, 64 processors; all of it by default, ``--jobs`` takes the
first N), submit times compressed so the offered load is 0.85 (long queues: a real trace's
estimates are far above its run times). ``--random`` instead: a short-queue synthetic workload on
128 processors (exponential run times of mean 100 s, estimates 1, 1.5 or 3 times the run time,
sizes uniform in 1..128, Poisson arrivals at load 0.85, seed 1); its AR+suspend input is not
short-queued (suspend overheads and jobs waiting for their own processors: about 350 queued jobs
under EASY, 600 under conservative, against 29), so issue 35's ratio there mostly compares queue
lengths (docs/performance.md, "Why the random input misses the ratio"). For FCFS, EASY and
conservative it times

* **kernel**: the numba kernel of simengine/schedulers (start times only; compiled first, outside
  the timing);
* **events**: the event core on the same jobs, no reservations, no preemption -- it must give the
  kernel's start times, and the script checks that before timing counts;
* **AR+suspend**: the same jobs, two priorities (every tenth job high), ten rigid advance
  reservations of a quarter of the machine and suspend/resume preemption with 60 s overhead: the
  general path doing its real work -- by the event core and by the previous (plain-Python) event
  loop, which must give the same schedule (start and end of every job, the same pieces).

``--split`` instead times the event core alone, feature by feature (none, the reservations, the
priorities, priorities with suspend/resume, all three), to show what each costs.

``--peer REV`` instead times the AR+suspend input (EASY and conservative: the targets' rows) by this
checkout and by the repository at REV (a temporary git worktree, run with this virtualenv),
alternately in fresh processes (``--rounds`` each: a process's speed varies, see docs/performance.md),
median of ``--reps`` per process; it prints every process's figure, the medians' ratio and whether
the two gave the same schedules. Each side runs once on a few jobs first, to fill its numba cache.

``--copies`` instead times conservative (the kernel on the plain input, the event core on the
AR+suspend one) in fresh processes that load from numba's cache, alternately with and without
``simengine.jit.load_own_copies`` (without it, the kernel and the core run the copies of
``compress`` and ``replan_queue`` embedded in their own cached objects); best of ``--reps`` per
process, ``--rounds`` processes each. Run the script once before, so the cache is full.

It prints jobs per second (median of ``--reps``), the core's speed-up over the previous loop, and
issue 12's targets for the AR+suspend rows (EASY >= 100,000 jobs/s, conservative >= 20,000 jobs/s;
set for DAS2, printed for ``--random`` too) with PASS/MISS, then issue 35's for EASY and conservative on
the same AR+suspend input (the event core >= 150,000 jobs/s, and its time <= 4x the plain kernel's on
the same jobs) with PASS/MISS. ``--jobs 50000`` is the issue's input; the DAS2-fs1 trace has 39,356
jobs, so on it that is the whole trace (``--random --jobs 50000``: 50,000 synthetic jobs).
``--cpu-time`` times by the process's CPU time instead of the wall clock (a machine shared with other
work slows the wall clock of both sides, but not evenly). Exit status 1 if a cross-check fails.
benchmarks/run_all.py runs the same measurement as its section (e).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

# (--peer's child processes import another revision's engine: GRIDWEB_BENCH_ROOT names its tree)
ROOT = Path(os.environ.get("GRIDWEB_BENCH_ROOT") or Path(__file__).resolve().parents[1])
sys.path.insert(0, str(ROOT))

import simengine  # noqa: E402
from simengine.local import cluster as event_core  # noqa: E402
from simengine.local.cluster import ClusterSim  # noqa: E402
from simengine.preemption import preemption_mode  # noqa: E402
from simengine.registry import LOCAL_SCHEDULERS  # noqa: E402
from simengine.schedulers.base import BackfillParams  # noqa: E402
from simengine.traces import read_trace  # noqa: E402
from tests.simengine import reference_cluster  # noqa: E402  (the previous event loop, the tests' oracle)

TRACE = ROOT / "gridweb" / "demo" / "DAS2-fs1-2003-1.swf.gz"
PROCESSORS = 64
#: issue 12's targets for the event core (jobs/s on DAS2 at load 0.85, reservations and preemption)
TARGETS = {"easy": 100_000, "conservative": 20_000}
#: issue 35's targets for the event core on the AR+suspend input: jobs/s, and its time over the kernel's
ISSUE35_RATE, ISSUE35_RATIO = 150_000, 4.0
#: the clock ``timed`` reads (--cpu-time: time.process_time)
CLOCK = [time.perf_counter]


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
        clock = CLOCK[0]
        t0 = clock()
        out = fn()
        times.append(clock() - t0)
    return statistics.median(times), out


#: the AR+suspend input's features; --split runs them one set at a time (FEATURES)
ALL_FEATURES = ("ars", "prio", "suspend")


def features_kwargs(module, n: int, span: float, processors: int, features=ALL_FEATURES) -> dict:
    """ClusterSim keyword arguments of the AR+suspend input (``module``: the event core's or the
    previous loop's): ten rigid reservations of a quarter of the machine across the span, every
    tenth job of higher priority, suspend/resume with 60 s overhead -- those of ``features``."""
    kw: dict = {}
    if "ars" in features:
        kw["reservations"] = [module.AdvanceReservation(i, processors // 4, span * (i + 0.5) / 10,
                                                        span * (i + 0.5) / 10 + 3600.0, request_time=span * i / 10)
                              for i in range(10)]
    if "prio" in features:
        kw["priority"] = (np.arange(n) % 10 == 0).astype(np.int64)
    if "suspend" in features:
        kw["mode"] = preemption_mode({"name": "suspend", "params": {"overhead": 60.0}})
    return kw


def measure(submit, runtime, estimate, size, processors: int, reps: int, previous: bool = True,
            out=print, policies=("fcfs", "easy", "conservative")) -> list[dict]:
    """Time the kernel, the event core plain and with AR+suspend, and (``previous``) the
    previous event loop on the AR+suspend input, for FCFS, EASY and conservative; one dict per
    policy (jobs/s medians, ``same``: the cross-checks held). ``out`` gets the table's lines."""
    n = len(submit)
    span = submit[-1]
    out(f"{'policy':<13}{'kernel':>12}{'events':>12}{'AR+suspend':>12}{'previous':>12}{'core faster':>12}"
        f"{'target':>12}  (jobs/s)")
    rows = []
    for policy in policies:
        entry = LOCAL_SCHEDULERS.get(policy)
        params = entry.params() if entry.params is not BackfillParams else BackfillParams()
        entry.implementation(submit[:50], runtime[:50], estimate[:50], size[:50], processors, params)  # compile
        ClusterSim(processors, policy, submit[:50], runtime[:50], estimate[:50], size[:50]).run()
        t_k, kernel = timed(lambda: entry.implementation(submit, runtime, estimate, size, processors, params), reps)
        t_e, sim = timed(lambda: ClusterSim(processors, policy, submit, runtime, estimate, size).run(), reps)
        row = {"policy": policy, "jobs": n, "kernel": n / t_k, "events": n / t_e,
               "same": bool(np.array_equal(np.asarray(sim.first_start), kernel.start, equal_nan=True))}
        if not row["same"]:
            out(f"{policy}: the event core's start times differ from the kernel's")

        def general(module):
            """The AR+suspend run by ``module`` (the event core's or the previous loop's)."""
            return module.ClusterSim(processors, policy, submit, runtime, estimate, size,
                                     **features_kwargs(module, n, span, processors)).run()

        t_g, got = timed(lambda: general(event_core), reps)
        row["ar_suspend"] = n / t_g
        line = f"{policy:<13}{n / t_k:>12,.0f}{n / t_e:>12,.0f}{n / t_g:>12,.0f}"
        if previous:
            t_p, want = timed(lambda: general(reference_cluster), 1 if policy == "conservative" else reps)
            same = (np.array_equal(got.first_start, np.array(want.first_start), equal_nan=True)
                    and np.array_equal(got.end, np.array(want.end), equal_nan=True) and got.pieces == want.pieces)
            if not same:
                out(f"{policy}: the event core's schedule differs from the previous event loop's")
            row["same"] = row["same"] and same
            row["previous"] = n / t_p
            line += f"{n / t_p:>12,.0f}{t_p / t_g:>11,.1f}x"
        else:
            line += f"{'':>12}{'':>12}"
        target = TARGETS.get(policy)
        if target:
            row["target"] = target
            line += f"{f'>= {target:,}':>12}  {'PASS' if n / t_g >= target else 'MISS'}"
        out(line)
        rows.append(row)
    issue35(rows, out)
    return rows


def issue35(rows: list[dict], out=print) -> None:
    """Issue 35's lines: the event core on the AR+suspend input, EASY and conservative, against
    ISSUE35_RATE and ISSUE35_RATIO (its time over the plain kernel's on the same jobs)."""
    for row in rows:
        if row["policy"] not in ("easy", "conservative"):
            continue
        rate, ratio = row["ar_suspend"], row["kernel"] / row["ar_suspend"]
        row["issue35"] = rate >= ISSUE35_RATE and ratio <= ISSUE35_RATIO
        out(f"issue 35, {row['policy']:<13}{rate:>10,.0f} jobs/s (>= {ISSUE35_RATE:,}: "
            f"{'PASS' if rate >= ISSUE35_RATE else 'MISS'}), {ratio:.2f}x the kernel's time "
            f"(<= {ISSUE35_RATIO:g}x: {'PASS' if ratio <= ISSUE35_RATIO else 'MISS'}); {row['jobs']:,} jobs")


#: --split's rows: which of the AR+suspend input's features each run has
FEATURES = {"none": (), "reservations": ("ars",), "priorities": ("prio",), "priorities+suspend": ("prio", "suspend"),
            "all three": ALL_FEATURES}


def split(submit, runtime, estimate, size, processors: int, reps: int, out=print) -> dict:
    """The event core's jobs/s for EASY and conservative with each feature set of ``FEATURES``
    (the inputs of ``measure``'s AR+suspend column); {policy: {row: jobs/s}}."""
    n = len(submit)
    span = submit[-1]
    out(f"{'event core':<20}{'easy':>12}{'conservative':>14}  (jobs/s)")
    rates: dict = {"easy": {}, "conservative": {}}
    for row, features in FEATURES.items():
        line = f"{row:<20}"
        for policy in rates:
            def run(sub=submit, rt=runtime, es=estimate, sz=size, m=n):
                return ClusterSim(processors, policy, sub, rt, es, sz,
                                  **features_kwargs(event_core, m, span, processors, features)).run()

            run(submit[:50], runtime[:50], estimate[:50], size[:50], 50)  # compile
            t, _ = timed(run, reps)
            rates[policy][row] = n / t
            line += f"{n / t:>{12 if policy == 'easy' else 14},.0f}"
        out(line)
    return rates


def copies_child(embedded: bool, n: int | None, reps: int) -> None:
    """One process of ``--copies``: conservative's kernel and event core, best of ``reps``, as JSON."""
    from simengine.schedulers import conservative
    if embedded:  # the callers keep their own objects' copies: the call that loads the callees is skipped
        event_core.load_own_copies = conservative.load_own_copies = lambda *dispatchers: []
    submit, runtime, estimate, size = workload(n or 10**9)
    m, span, params = len(submit), submit[-1], BackfillParams()

    def core(k=m):
        return ClusterSim(PROCESSORS, "conservative", submit[:k], runtime[:k], estimate[:k], size[:k],
                          **features_kwargs(event_core, k, span, PROCESSORS)).run()

    def kernel(k=m):
        return conservative.schedule(submit[:k], runtime[:k], estimate[:k], size[:k], PROCESSORS, params)

    out = {}
    for name, fn in (("kernel", kernel), ("core", core)):
        fn(50)  # loads from the cache (or compiles), outside the timing
        out[name] = m / min(timed(fn, 1)[0] for _ in range(reps))
    print(json.dumps(out))


def child_json(cmd: list[str], **run) -> dict:
    """Run a child mode of this script in a fresh process; the JSON its last line prints."""
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True, **run).stdout.strip().splitlines()[-1])


def copies(n: int | None, reps: int, rounds: int, out=print) -> dict:
    """``--copies``: {"own"|"embedded": {"kernel"|"core": [jobs/s of each process]}}."""
    rates: dict = {mode: {"kernel": [], "core": []} for mode in ("own", "embedded")}
    for _ in range(rounds):
        for mode in rates:
            cmd = [sys.executable, __file__, "--copies-child", mode, "--reps", str(reps)]
            if n:
                cmd += ["--jobs", str(n)]
            got = child_json(cmd)
            for k, v in got.items():
                rates[mode][k].append(v)
    out(f"{'conservative':<28}{'own objects':>14}{'embedded copies':>17}{'ratio':>8}  (jobs/s, median of processes)")
    for k, label in (("kernel", "kernel, plain"), ("core", "event core, AR+suspend")):
        own, emb = statistics.median(rates["own"][k]), statistics.median(rates["embedded"][k])
        out(f"{label:<28}{own:>14,.0f}{emb:>17,.0f}{own / emb:>7.2f}x   "
            f"(own {', '.join(f'{v:,.0f}' for v in rates['own'][k])}; "
            f"embedded {', '.join(f'{v:,.0f}' for v in rates['embedded'][k])})")
    return rates


def targets_child(n: int | None, reps: int) -> None:
    """One process of ``--peer``: the AR+suspend input's jobs/s for the targets' policies (median of
    ``reps``), a digest of each schedule and the engine's folder, as JSON."""
    submit, runtime, estimate, size = workload(n or 10**9)
    m, span = len(submit), submit[-1]
    out: dict = {"root": str(Path(simengine.__file__).resolve().parents[1])}
    for policy in TARGETS:
        def run(k=m):
            return ClusterSim(PROCESSORS, policy, submit[:k], runtime[:k], estimate[:k], size[:k],
                              **features_kwargs(event_core, k, span, PROCESSORS)).run()

        run(50)  # loads from the cache (or compiles), outside the timing
        t, sim = timed(run, reps)
        out[policy] = m / t
        out[f"{policy} schedule"] = hashlib.sha256(np.asarray(sim.first_start, float).tobytes()
                                                   + np.asarray(sim.end, float).tobytes()).hexdigest()
    print(json.dumps(out))


def peer(rev: str, n: int | None, reps: int, rounds: int, out=print) -> dict:
    """``--peer``: {"now"|"peer": [each process's JSON]} for this checkout and ``rev``."""
    import tempfile

    from worktree import checkout  # (benchmarks/: this script's folder)

    def child(root: Path, jobs: int | None, k: int) -> dict:
        cmd = [sys.executable, __file__, "--targets-child", "--reps", str(k)] + (["--jobs", str(jobs)] if jobs else [])
        got = child_json(cmd, env={**os.environ, "GRIDWEB_BENCH_ROOT": str(root)}, cwd=root)
        if Path(got["root"]) != root.resolve():
            raise RuntimeError(f"a child meant to run {root} imported the engine from {got['root']}")
        return got

    runs: dict = {"now": [], "peer": []}
    with tempfile.TemporaryDirectory() as tmp, checkout(rev, Path(tmp) / "peer") as peer_root:
        roots = {"now": Path(__file__).resolve().parents[1], "peer": peer_root}
        for root in roots.values():
            child(root, 200, 1)  # numba's cache of that tree filled (the peer's is new: it compiles)
        for _ in range(rounds):
            for side, root in roots.items():
                runs[side].append(child(root, n, reps))
    out(f"{'AR+suspend':<14}{'now':>10}{rev:>12}{'now/peer':>10}{'target':>12}        processes now | peer (jobs/s)")
    for policy, target in TARGETS.items():
        now = [r[policy] for r in runs["now"]]
        then = [r[policy] for r in runs["peer"]]
        a, b = statistics.median(now), statistics.median(then)
        status = "PASS" if a >= target else "MISS"
        out(f"{policy:<14}{a:>10,.0f}{b:>12,.0f}{a / b:>9.2f}x{f'>= {target:,}':>12}  {status}  "
            f"{', '.join(f'{v:,.0f}' for v in now)} | {', '.join(f'{v:,.0f}' for v in then)}")
    same = {p: runs["now"][0][f"{p} schedule"] == runs["peer"][0][f"{p} schedule"] for p in TARGETS}
    out("same schedules as the peer: " + ", ".join(f"{p} {'yes' if v else 'NO'}" for p, v in same.items()))
    return runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=None, help="the first N jobs (default: the whole trace)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--random", action="store_true", help="the short-queue synthetic workload, 128 processors")
    ap.add_argument("--no-previous", action="store_true", help="skip the previous (plain-Python) event loop")
    ap.add_argument("--split", action="store_true", help="the event core alone, feature by feature")
    ap.add_argument("--copies", action="store_true",
                    help="conservative with and without simengine.jit.load_own_copies, fresh processes")
    ap.add_argument("--rounds", type=int, default=3, help="--copies, --peer: processes per side")
    ap.add_argument("--copies-child", choices=("own", "embedded"), help=argparse.SUPPRESS)
    ap.add_argument("--peer", metavar="REV", help="the AR+suspend targets beside this git revision's, e.g. HEAD~3")
    ap.add_argument("--targets-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cpu-time", action="store_true", help="time by the process's CPU time, not the wall clock")
    ap.add_argument("--policies", default="fcfs,easy,conservative", help="the table's policies (comma-separated)")
    args = ap.parse_args()
    if args.cpu_time:
        CLOCK[0] = time.process_time
    if args.targets_child:
        targets_child(args.jobs, args.reps)
        return 0
    if args.peer:
        print(f"DAS2-fs1, offered load 0.85, AR+suspend, median of {args.reps} per process, "
              f"{args.rounds} processes each, alternately")
        peer(args.peer, args.jobs, args.reps, args.rounds)
        return 0
    if args.copies_child:
        copies_child(args.copies_child == "embedded", args.jobs, args.reps)
        return 0
    if args.copies:
        print(f"DAS2-fs1, offered load 0.85, best of {args.reps} per process, {args.rounds} processes each")
        copies(args.jobs, args.reps, args.rounds)
        return 0
    if args.random:
        processors = 128
        submit, runtime, estimate, size = random_workload(args.jobs or 10_000, processors)
    else:
        processors = PROCESSORS
        submit, runtime, estimate, size = workload(args.jobs or 10**9)
    source = "random workload" if args.random else "DAS2-fs1"
    clock = "CPU time" if args.cpu_time else "wall clock"
    print(f"{source}, {len(submit)} jobs, {processors} processors, offered load 0.85, median of {args.reps} ({clock})")
    if args.split:
        split(submit, runtime, estimate, size, processors, args.reps)
        return 0
    rows = measure(submit, runtime, estimate, size, processors, args.reps, previous=not args.no_previous,
                   policies=tuple(args.policies.split(",")))
    return 0 if all(r["same"] for r in rows) else 1

if __name__ == "__main__":
    raise SystemExit(main())
