"""The compiled conservative-backfilling kernel, this checkout against an older commit (main's by
default), side by side on the same inputs: jobs/s per trace and a check that every start time is equal.

    .venv/bin/python benchmarks/conservative_classes.py [--old REF] [--reps 3] [--traces das2,lcg,hpc2n,nasa]

The old code is ``git archive REF`` unpacked into a directory of /tmp (kept, so numba's cache
survives the next run); each repetition runs one worker process per version, in alternating
order, and each worker times one run of every trace after compiling on 50 jobs. The printed
rate is the best of the repetitions (median in brackets); the speed-up is new over old.

Inputs (from gridweb/demo; submit times scaled so the offered load is 0.85, estimates never
below the run time, jobs wider than the cluster dropped):

* das2: DAS2-fs1-2003-1, all of it, 64 processors (benchmarks/local_events.py's input);
* lcg: the first 15,000 jobs of LCG-2005-1 (all one-processor jobs) on 64 processors;
* hpc2n: HPC2N-2002-2 (the first 3,170 jobs), 240 processors;
* nasa: NASA-iPSC-1993-3.1, 128 processors (no requested times: estimates are the run times).

``--ratio R`` runs the new side with classes of ratio R (``CLASS_RATIO`` otherwise).
Exit status 1 if any start time differs.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "gridweb" / "demo"
#: name -> (trace, processors, first N jobs or None for all)
TRACES = {
    "das2": ("DAS2-fs1-2003-1.swf.gz", 64, None),
    "lcg": ("LCG-2005-1.swf.gz", 64, 15_000),
    "hpc2n": ("HPC2N-2002-2.2-cln.first3171.swf.gz", 240, None),
    "nasa": ("NASA-iPSC-1993-3.1-cln.swf.gz", 128, None),
}


def workload(name: str, load: float = 0.85):
    from simengine.traces import read_trace

    path, processors, limit = TRACES[name]
    jobs = read_trace(DEMO / path, limit=limit).jobs
    keep = (jobs.processors <= processors) & (jobs.runtime >= 0)
    submit = jobs.submit[keep] - jobs.submit[keep][0]
    runtime, size = jobs.runtime[keep], jobs.processors[keep]
    estimate = np.maximum(jobs.estimate[keep], runtime)
    offered = float((runtime * size).sum()) / (processors * submit[-1])
    return submit * offered / load, runtime, estimate, size, processors


def worker(args) -> None:
    """Run in a checkout (``--root``): time every trace once, save the start times."""
    sys.path.insert(0, args.root)
    import simengine
    from simengine.registry import LOCAL_SCHEDULERS
    from simengine.schedulers import conservative
    from simengine.schedulers.base import BackfillParams

    assert Path(simengine.__file__).resolve().is_relative_to(Path(args.root).resolve()), simengine.__file__
    if args.ratio:
        conservative.job_classes.__defaults__ = (args.ratio,)  # the default the kernel and event core use
    entry = LOCAL_SCHEDULERS.get("conservative")
    result = {}
    for name in args.traces.split(","):
        submit, runtime, estimate, size, processors = workload(name)
        entry.implementation(submit[:50], runtime[:50], estimate[:50], size[:50], processors, BackfillParams())
        t0 = time.perf_counter()
        out = entry.implementation(submit, runtime, estimate, size, processors, BackfillParams())
        result[name] = (time.perf_counter() - t0, len(submit))
        np.save(Path(args.out) / f"{name}.npy", np.asarray(out.start))
    print(json.dumps(result))


def checkout(ref: str) -> Path:
    sha = subprocess.run(["git", "rev-parse", ref], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.strip()
    where = Path(tempfile.gettempdir()) / f"gridweb-kernel-{sha[:12]}"
    if not (where / "simengine").is_dir():
        where.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", sha, "simengine"], cwd=ROOT, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    return where


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", default="main", help="git ref of the old code (default: main)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--traces", default="das2,lcg,hpc2n,nasa")
    ap.add_argument("--ratio", type=float, default=0.0, help="class ratio of the new side")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    roots = {"old": checkout(args.old), "new": ROOT}
    times = {v: {t: [] for t in args.traces.split(",")} for v in roots}
    jobs, same = {}, True
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            order = ["old", "new"] if rep % 2 == 0 else ["new", "old"]
            for version in order:
                out = Path(tmp) / version
                out.mkdir(exist_ok=True)
                cmd = [sys.executable, __file__, "--worker", "--root", str(roots[version]), "--out", str(out),
                       "--traces", args.traces]
                if version == "new" and args.ratio:
                    cmd += ["--ratio", str(args.ratio)]
                res = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True,
                                                cwd=roots[version]).stdout.splitlines()[-1])
                for name, (seconds, n) in res.items():
                    times[version][name].append(seconds)
                    jobs[name] = n
            for name in times["new"]:
                a, b = np.load(Path(tmp) / "old" / f"{name}.npy"), np.load(Path(tmp) / "new" / f"{name}.npy")
                if not np.array_equal(a, b, equal_nan=True):
                    same = False
                    print(f"{name}: {int((a != b).sum())} start times differ", flush=True)
    print(f"conservative kernel, old = {args.old}, new = this checkout; {args.reps} repetitions side by side")
    for name, (path, processors, _) in TRACES.items():
        if name not in times["new"]:
            continue
        n = jobs[name]
        rate = {v: (n / min(times[v][name]), n / statistics.median(times[v][name])) for v in roots}
        print(f"{name:6} {n:6d} jobs, {processors:3d} processors: old {rate['old'][0]:>9,.0f} jobs/s "
              f"(med {rate['old'][1]:>9,.0f})  new {rate['new'][0]:>9,.0f} jobs/s (med {rate['new'][1]:>9,.0f})  "
              f"x{rate['new'][0] / rate['old'][0]:.2f} (med x{rate['new'][1] / rate['old'][1]:.2f})")
    print("start times identical" if same else "START TIMES DIFFER")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
