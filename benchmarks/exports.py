"""How long a run's big downloads take to write, beside the same writers of another revision.

    .venv/bin/python benchmarks/exports.py [--jobs 200000,1000000] [--peer REV]

For each size, a one-cluster EASY run of that many synthetic jobs (uniform sizes 1-16 on 128
processors, so most jobs hold scattered processors: interval sets of several ranges) is simulated
once per process, then the script times, in that process, what the site does before the first byte
of a download leaves (gridweb.runs.exports: the engine's writer into a file):

* ``batsim_jobs.csv`` (``Result.write_batsim_jobs``), the file issue 38 found taking 23-27 s to its
  first byte at 111 MB;
* ``jobs.csv`` (``Result.write_jobs_csv``) for scale;
* ``first bytes``: the time until the site can send the first rows of ``batsim_jobs.csv`` (made a
  slice at a time and streamed, ``simengine.batsim.batsim_csv``; a revision without it writes the
  whole file first).

With ``--peer REV`` (default 10d1bca, the commit before the Batsim writer worked on whole columns)
the same is measured with that revision's code (a temporary git worktree, this checkout's
interpreter), in the same run, and the ratios printed. There is no target in the issue beyond the
first byte not keeping the researcher waiting; every number is measured here.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from worktree import checkout  # (benchmarks/: this script's folder)

ROOT = Path(__file__).resolve().parents[1]

MEASURE = """
import json, sys, tempfile, time
from pathlib import Path
import simengine
jobs = int(sys.argv[1])
spec = {"platform": {"clusters": [{"name": "c", "processors": 128, "scheduler": {"name": "easy"}}]},
        "workload": {"streams": [{"kind": "synthetic", "name": "s", "target": "c", "count": jobs,
                                  "arrival": {"target_load": 0.8},
                                  "size": {"kind": "uniform", "low": 1, "high": 16, "integer": True},
                                  "runtime": {"kind": "exponential", "mean": 600}}]}}
result = simengine.run(spec)
out = {}
with tempfile.TemporaryDirectory() as tmp:
    for name, write in (("batsim_jobs.csv", result.write_batsim_jobs), ("jobs.csv", result.write_jobs_csv)):
        t = time.perf_counter()
        write(Path(tmp) / name)
        out[name] = [time.perf_counter() - t, (Path(tmp) / name).stat().st_size]
# the site's first bytes of batsim_jobs.csv: made as sent where the engine has batsim_csv, else written whole
try:
    from simengine.batsim import batsim_csv
except ImportError:
    out["first bytes"] = [out["batsim_jobs.csv"][0], 0]
else:
    t = time.perf_counter()
    parts = batsim_csv(result)
    first = next(parts) + next(parts)
    out["first bytes"] = [time.perf_counter() - t, len(first)]
print(json.dumps(out))
"""


def measure(where: Path, jobs: int) -> dict:
    done = subprocess.run([sys.executable, "-c", MEASURE, str(jobs)], cwd=where, capture_output=True, text=True,
                          env={"PYTHONPATH": str(where), "PATH": "/usr/bin:/bin"}, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", default="200000,1000000", help="comma-separated job counts")
    ap.add_argument("--peer", default="10d1bca", help="the revision to measure beside (default: %(default)s)")
    ap.add_argument("--no-peer", action="store_true")
    args = ap.parse_args()
    sizes = [int(x) for x in args.jobs.split(",")]
    now = {n: measure(ROOT, n) for n in sizes}
    peer = {}
    if not args.no_peer:
        with tempfile.TemporaryDirectory() as tmp, checkout(args.peer, Path(tmp) / "peer") as where:
            peer = {n: measure(where, n) for n in sizes}
    for n in sizes:
        for name, (seconds, size) in now[n].items():
            line = f"{n:>9,} jobs  {name:<16} {size / 1e6:7.1f} MB  {seconds:6.2f} s"
            if n in peer:
                before = peer[n][name][0]
                line += f"   peer {args.peer}: {before:6.2f} s   ratio peer / now {before / seconds:5.1f}x"
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
