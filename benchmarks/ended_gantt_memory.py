"""What drawing a big failed or cancelled run's Gantt costs a web process, beside the peer (the same
repository at ``--peer``, default 4e4457f: such a run's rows were rebuilt from its chunks into a
table held by every process that drew it).

    .venv/bin/python benchmarks/ended_gantt_memory.py [--completions 400000] [--peer REV]

One embedded-mode site (a temporary SQLite database and data folder): a 2-cluster EASY run of
``--completions`` jobs is simulated, then marked failed and its stored result removed, so that
its Gantt can only come from the chunks it streamed (as a run the wall-clock budget stopped).
Then, each in a fresh Python process that has loaded Django and drawn one small run first (so the
figures are the big run's own): the full overview tile of the big run is drawn twice and the
process's resident memory (VmRSS) and its peak (VmHWM) are read before and after, with the time of
each tile. Measured: the peer; GridWeb's first process (which reads the chunks once and writes
the files); GridWeb's second process (which maps the files). Prints a table.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SETUP = """
import json, django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.contrib.auth.models import User
from gridweb.runs.services import create_run
from gridweb.runs.execution import execute_run
from gridweb.runs.models import Run, RunResult, Status
user = User.objects.create_user("bench", password="bench-password-1")
spec = json.loads({spec!r})
big = create_run(user, spec, visibility="public", dispatch_now=False)
execute_run(big.pk)
small_spec = dict(spec, run=dict(spec["run"], stop={{"completions": 200}}))
small = create_run(user, small_spec, visibility="public", dispatch_now=False)
execute_run(small.pk)
for run in (big, small):
    RunResult.objects.filter(run=run).delete()
    Run.objects.filter(pk=run.pk).update(status=Status.FAILED, error="stopped for the benchmark")
run = Run.objects.get(pk=big.pk)
print(json.dumps({{"big": big.pk, "small": small.pk, "segments": run.segments_count}}))
"""

DRAW = """
import json, time, django
django.setup()
from gridweb.runs import gantt_tiles
from gridweb.runs.models import Run

def memory():
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024

gantt_tiles.tile(Run.objects.get(pk={small}), None, None, 1200, 400)  # everything loaded once
rss0, _ = memory()
out = {{"tiles_s": []}}
for _ in range(2):
    t0 = time.perf_counter()
    gantt_tiles.tile(Run.objects.get(pk={big}), None, None, 1200, 400)
    out["tiles_s"].append(time.perf_counter() - t0)
rss1, peak = memory()
out.update(rss_growth_mb=rss1 - rss0, peak_growth_mb=peak - rss0)
print(json.dumps(out))
"""


def scenario(completions: int) -> dict:
    return {
        "name": f"ended gantt memory ({completions:,} jobs)",
        "platform": {"clusters": [{"name": "a", "processors": 64, "scheduler": {"name": "easy"}},
                                  {"name": "b", "processors": 64, "scheduler": {"name": "easy"}}]},
        "workload": {"streams": [{
            "kind": "synthetic", "name": "users", "target": "grid", "arrival": {"target_load": 0.9},
            "size": {"kind": "uniform", "low": 1, "high": 32, "integer": True},
            "runtime": {"kind": "exponential", "mean": 300}}]},
        "run": {"seed": 1, "replications": 1, "stop": {"completions": completions}},
    }


def python(code: str, env: dict, cwd: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--completions", type=int, default=400_000)
    ap.add_argument("--peer", default="4e4457f")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ended-gantt-"))
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")}
        env.update(DJANGO_SETTINGS_MODULE="gridweb.settings", GRIDWEB_DATA_DIR=str(tmp / "data"),
                   DATABASE_URL=f"sqlite:///{tmp / 'db.sqlite3'}", PYTHONPATH=str(ROOT))
        runs = python(SETUP.format(spec=json.dumps(scenario(args.completions))), env, ROOT)
        peer = tmp / "peer"
        subprocess.run(["git", "worktree", "add", "--detach", str(peer), args.peer], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            draw = DRAW.format(**runs)
            rows = [(f"peer {args.peer} (rows rebuilt in each process)", python(draw, env | {"PYTHONPATH": str(peer)}, peer)),
                    ("GridWeb, first process (reads the chunks, writes the files)", python(draw, env, ROOT)),
                    ("GridWeb, another process (maps the files)", python(draw, env, ROOT))]
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(peer)], cwd=ROOT, capture_output=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"A failed run of {runs['segments']:,} segments: its full overview tile, drawn twice in a fresh process")
    print("| process | resident memory growth | peak growth | first tile | second tile |")
    print("|---|---|---|---|---|")
    for name, r in rows:
        print(f"| {name} | {r['rss_growth_mb']:,.0f} MB | {r['peak_growth_mb']:,.0f} MB | "
              f"{1000 * r['tiles_s'][0]:,.0f} ms | {1000 * r['tiles_s'][1]:,.0f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
