"""How long a researcher waits for one command-line replay, from a cold process to its files,
beside SimPy doing the same replay in a process of its own.

    .venv/bin/python benchmarks/cli_startup.py [--reps 5] [--peer REV]

Each measurement starts a fresh Python process (what a script running hundreds of replays pays
each time), so it counts imports, loading the compiled kernels from numba's cache, reading the
trace, simulating and writing the outputs:

* **GridWeb**: ``python -m simengine replay gridweb/demo/DAS2-fs1-2003-1.swf.gz --scheduler fcfs
  --processors 128 --out DIR --quiet`` (jobs.csv, segments.csv, summary.json, scenario.json,
  result.npz, schedule.swf);
* **SimPy**: a fresh process that reads the same SWF file (benchmarks/peers.read_swf_jobs) and
  runs benchmarks/peers.simpy_fcfs on it -- no output files, so the comparison favours SimPy.

Python's bytecode cache is on for every process measured (``PYTHONDONTWRITEBYTECODE`` is taken
out of their environment), as on a researcher's machine: otherwise each process would compile
the project's modules from source again.

It prints the median wall time of ``--reps`` runs of each and their ratio, and GridWeb's own
breakdown in one process (imports, kernels, simulation, output); also ``python -m simengine
--help``. With ``--peer REV`` the same two commands of this repository at REV (a temporary git
worktree, run with this checkout's interpreter) are measured beside, in the same run. Targets
(issue 15): the replay < 1.0 s, ``--help`` < 0.3 s. Numbers go to
docs/performance.md ("Command-line cold start"); there is no target in the issue beyond "a
researcher scripting hundreds of replays feels it".
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from worktree import checkout  # (benchmarks/: this script's folder)

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "gridweb" / "demo" / "DAS2-fs1-2003-1.swf.gz"

SIMPY = f"""
import sys
sys.path.insert(0, {str(ROOT / "benchmarks")!r})
from peers import read_swf_jobs, simpy_fcfs
jobs = read_swf_jobs({str(TRACE)!r})
keep = [i for i in range(len(jobs.submit)) if 0 < jobs.size[i] <= 128]
simpy_fcfs([jobs.submit[i] for i in keep], [jobs.runtime[i] for i in keep], [jobs.size[i] for i in keep], 128)
"""

BREAKDOWN = f"""
import sys
import time
t0 = time.perf_counter()
import simengine
from simengine.cli import main
t1 = time.perf_counter()
from simengine import kernel_model
try:
    kernel_model.warm_up_kernels(["fcfs"])
except TypeError:  # (an engine before run-specific kernel loading: every kernel)
    kernel_model.warm_up_kernels()
t2 = time.perf_counter()
import simengine.results as results
written = {{}}
original = results.Result.write
def timed_write(self, *a, **k):
    s = time.perf_counter(); out = original(self, *a, **k); written["s"] = time.perf_counter() - s; return out
results.Result.write = timed_write
main(["replay", {str(TRACE)!r}, "--scheduler", "fcfs", "--processors", "128", "--out", sys.argv[1], "--quiet"])
t3 = time.perf_counter()
print(f"{{t1 - t0:.2f}} {{t2 - t1:.2f}} {{t3 - t2 - written['s']:.2f}} {{written['s']:.2f}}")
"""


#: every process measured writes and reads Python's bytecode cache (the default)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def wall(cmd: list[str], reps: int, cwd: Path = ROOT) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, cwd=cwd, capture_output=True, env=ENV)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--peer", help="also measure this git revision's CLI, e.g. HEAD~1")
    args = ap.parse_args()
    help_cmd = [sys.executable, "-m", "simengine", "--help"]
    if args.peer:
        with tempfile.TemporaryDirectory() as tmp, checkout(args.peer, Path(tmp) / "peer") as peer:
            replay = [sys.executable, "-m", "simengine", "replay", str(TRACE), "--scheduler", "fcfs",
                      "--processors", "128", "--out", str(Path(tmp) / "out"), "--quiet"]
            subprocess.run(replay, check=True, cwd=peer, capture_output=True, env=ENV)
            peer_times = (wall(help_cmd, args.reps, peer), wall(replay, args.reps, peer))
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "out")
        replay = [sys.executable, "-m", "simengine", "replay", str(TRACE), "--scheduler", "fcfs", "--processors",
                  "128", "--out", out, "--quiet"]
        subprocess.run(replay, check=True, cwd=ROOT, capture_output=True, env=ENV)  # numba's cache filled once
        gridweb = wall(replay, args.reps)
        helped = wall(help_cmd, args.reps)
        simpy = wall([sys.executable, "-c", SIMPY], args.reps)
        parts = subprocess.run([sys.executable, "-c", BREAKDOWN, out + "2"], check=True, cwd=ROOT,
                               capture_output=True, text=True, env=ENV).stdout.split()
    print(f"DAS2-fs1 replay (39,356 jobs, FCFS, 128 processors), fresh process each, median of {args.reps}")
    print(f"  GridWeb CLI (simulation and six output files): {gridweb:.2f} s")
    print(f"  SimPy (simulation only, no files):            {simpy:.2f} s")
    print(f"  ratio GridWeb / SimPy: {gridweb / simpy:.2f}")
    print(f"  GridWeb in one process: imports {parts[0]} s, kernels {parts[1]} s, read + simulate {parts[2]} s, "
          f"outputs {parts[3]} s")
    print(f"  python -m simengine --help: {helped:.2f} s (target < 0.3 s: {'PASS' if helped < 0.3 else 'MISS'}); "
          f"replay target < 1.0 s: {'PASS' if gridweb < 1.0 else 'MISS'}")
    if args.peer:
        print(f"  peer {args.peer}: --help {peer_times[0]:.2f} s, replay {peer_times[1]:.2f} s "
              f"(ratios peer / now: {peer_times[0] / helped:.1f}x, {peer_times[1] / gridweb:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
