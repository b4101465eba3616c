"""Many viewers at once, on the full stack: replays of a big run, and many live runs, side by side with a peer.

    .venv/bin/python benchmarks/load.py [--segments 1000000] [--replayers 100] [--runs 50]
                                        [--viewers 100] [--peer REV] [--no-peer]

For GridWeb (this checkout) and the peer (the same repository at ``--peer``, default the commit
before replays read summaries only, checked out into a temporary git worktree and run with this
checkout's virtualenv), each in turn, on this machine: a full-stack site of its own (a fresh
PostgreSQL database on ``GRIDWEB_TEST_DATABASE_URL``'s server, Redis database 12 of
``GRIDWEB_TEST_REDIS_URL``'s, two Celery workers, daphne on a free port), then

1. **replay under load**: a finished run of about ``--segments`` segments (replication 0 of a
   2-cluster EASY scenario, simulated once with ``execute_run``); ``--replayers`` websocket clients
   replay it at once from seq 0 to the status message, ``--rounds`` times (5, a second apart);
   throughout, a prober opens a new websocket
   every 0.2 s (the handshake's time: connect until the first message) and asks ``/healthz``
   every 0.5 s. Reported: handshake median and 95th percentile, /healthz answers that were not
   200 (or took more than 5 s), the replays' completion times, whether every replayer got
   exactly the chunks 0..last_seq once each, and the most connections the site's database had
   (pg_stat_activity, sampled with each /healthz; docs/deploy.md, *Database connections*);
2. **live runs**: ``--runs`` small runs submitted through the REST API at once, each watched by
   ``--viewers / --runs`` clients connected before it starts; every viewer must end with exactly
   the run's chunks 0..last_seq, once each, and its status.

Targets (issue 14): with 100 viewers replaying a 10^6-segment run, handshake p95 < 1 s and
/healthz 200 throughout; 50 runs x 100 viewers with no lost or duplicated chunk. Every number is
measured in this run; results go to ``benchmarks/results/load.json`` (git-ignored).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import (  # noqa: E402 - the repository root must be importable first
    DEFAULT_TEST_DATABASE_URL,
    DEFAULT_TEST_REDIS_URL,
    _free_port,
    _recreate_database,
    project_env,
)

RESULTS = ROOT / "benchmarks" / "results" / "load.json"
DEFAULT_PEER = "c584961"  # the consumer that read every chunk's rows on replay
REDIS_DB = 12
SEGMENTS_PER_COMPLETION = 2.9  # benchmarks/gantt_scale.py's scenario
TARGETS = {"handshake_p95_s": 1.0}


def log(*args) -> None:
    print(*args, file=sys.stderr, flush=True)


def scenario(segments: int, name: str, seed: int = 3) -> dict:
    return {
        "name": name,
        "platform": {"clusters": [{"name": "a", "processors": 256, "scheduler": {"name": "easy"}},
                                  {"name": "b", "processors": 128, "scheduler": {"name": "easy"}}]},
        "workload": {"streams": [{"kind": "synthetic", "name": "jobs", "target": "grid",
                                  "arrival": {"target_load": 0.9},
                                  "size": {"kind": "uniform", "low": 1, "high": 64, "integer": True},
                                  "runtime": {"kind": "exponential", "mean": 600}}]},
        "run": {"seed": seed, "replications": 1,
                "stop": {"completions": max(100, int(segments / SEGMENTS_PER_COMPLETION))}},
    }


class Site:
    """A full-stack GridWeb from ``code`` (this checkout or the peer's worktree)."""

    def __init__(self, name: str, code: Path):
        self.name, self.code = name, code
        admin_url = os.environ.get("GRIDWEB_TEST_DATABASE_URL", DEFAULT_TEST_DATABASE_URL)
        redis_server = os.environ.get("GRIDWEB_TEST_REDIS_URL", DEFAULT_TEST_REDIS_URL)
        database_url = _recreate_database(admin_url, f"gridweb_load_{name}")
        redis_url = redis_server.rsplit("/", 1)[0] + f"/{REDIS_DB}"
        import redis

        redis.Redis.from_url(redis_url).flushdb()
        self.folder = Path(tempfile.mkdtemp(prefix=f"gridweb-load-{name}-"))
        self.env = project_env(DATABASE_URL=database_url, REDIS_URL=redis_url,
                               GRIDWEB_DATA_DIR=str(self.folder / "data"), PYTHONPATH=str(code),
                               GRIDWEB_MAX_ACTIVE_RUNS="1000")
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen] = []

    def python(self, code: str, timeout: float = 1800):
        result = subprocess.run([sys.executable, "-c", "import django; django.setup()\n" + code], cwd=self.code,
                                env=self.env, capture_output=True, text=True, timeout=timeout)
        if result.returncode:
            raise RuntimeError(f"{self.name}: {result.stderr[-3000:]}")
        return json.loads(result.stdout.strip().splitlines()[-1])

    def start(self) -> None:
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=self.code, env=self.env,
                       check=True, capture_output=True, timeout=600)
        self.token = self.python(
            "import json\nfrom django.contrib.auth.models import User\nfrom rest_framework.authtoken.models import Token\n"
            "u, _ = User.objects.get_or_create(username='load')\n"
            "print(json.dumps(Token.objects.get_or_create(user=u)[0].key))\n")
        for i in (1, 2):
            self._spawn(f"worker{i}", [sys.executable, "-m", "celery", "-A", "gridweb", "worker", "--pool=prefork",
                                       "--concurrency=1", f"--hostname=load{i}@%h", "--loglevel=WARNING",
                                       "--without-gossip", "--without-mingle"])
        self._spawn("daphne", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port),
                               "gridweb.asgi:application"])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=5):
                    time.sleep(3)  # the workers come up beside it
                    return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"{self.name}: daphne did not start (logs in {self.folder})")

    def _spawn(self, name: str, argv: list[str]) -> None:
        out = open(self.folder / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
        self.processes.append(subprocess.Popen(argv, cwd=self.code, env=self.env, stdout=out,
                                               stderr=subprocess.STDOUT))

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()

    def finished_run(self, spec: dict) -> dict:
        return self.python(
            "import json\nfrom django.contrib.auth.models import User\n"
            "from gridweb.runs.services import create_run\nfrom gridweb.runs.execution import execute_run\n"
            "from gridweb.runs.models import Run\n"
            f"run = create_run(User.objects.get(username='load'), json.loads({json.dumps(spec)!r}),"
            " visibility='public', dispatch_now=False)\n"
            "execute_run(run.pk)\nrun = Run.objects.get(pk=run.pk)\n"
            "print(json.dumps({'id': run.pk, 'status': run.status, 'segments': run.segments_count,"
            " 'last_seq': run.last_seq, 'error': run.error}))\n")

    def submit(self, spec: dict) -> int:
        request = urllib.request.Request(f"{self.url}/api/runs/", data=json.dumps(
            {"spec": spec, "visibility": "public"}).encode(), method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"Token {self.token}"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())["id"]


def database_connections(site: Site) -> int:
    """Connections to the site's database now, from every process (pg_stat_activity): the budget
    of docs/deploy.md, section 4, *Database connections*."""
    import psycopg

    url = site.env["DATABASE_URL"]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres") as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s",
                            (url.rsplit("/", 1)[1],)).fetchone()[0]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else float("nan")


async def watch(url: str, until_status: bool = True, timeout: float = 600) -> dict:
    """Every message of one websocket until the status message: the seqs seen, the time to the
    first message, the time to the end."""
    from websockets.asyncio.client import connect

    t0 = time.monotonic()
    seqs, first, status = [], None, None
    async with connect(url, max_size=None, open_timeout=60) as socket:
        while True:
            try:
                message = await asyncio.wait_for(socket.recv(), max(0.1, timeout - (time.monotonic() - t0)))
            except (asyncio.TimeoutError, TimeoutError):
                break  # no status in time: the viewer's sequence is reported as it is
            except Exception:  # noqa: BLE001 - the server closed the socket
                break
            now = time.monotonic()
            first = first if first is not None else now - t0
            if isinstance(message, bytes):  # a frame: b"GWF1", uint32 header length, the header (frames.py)
                header = json.loads(message[8:8 + int.from_bytes(message[4:8], "little")])
            else:
                header = json.loads(message)
            if header.get("kind") == "status":
                status = header
                if until_status:
                    break
            elif "seq" in header:
                seqs.append(int(header["seq"]))
    return {"seqs": seqs, "first_s": first, "total_s": time.monotonic() - t0, "status": status}


def exact(seqs: list[int], last_seq: int) -> bool:
    return seqs == list(range(last_seq + 1))


async def replay_under_load(site: Site, run: dict, replayers: int, rounds: int) -> dict:
    ws = site.url.replace("http", "ws", 1) + f"/ws/runs/{run['id']}/"
    handshakes, health, connections, stop = [], [], [], asyncio.Event()

    async def probe_handshakes() -> None:
        while not stop.is_set():
            t0 = time.monotonic()
            try:
                from websockets.asyncio.client import connect

                async with connect(ws + "?after=" + str(run["last_seq"]), open_timeout=30) as socket:
                    await asyncio.wait_for(socket.recv(), 30)  # the status message (nothing to replay)
                handshakes.append(time.monotonic() - t0)
            except Exception as exc:  # noqa: BLE001 - a failed handshake is a result
                handshakes.append(float("inf"))
                log(f"  handshake failed: {exc!r}")
            await asyncio.sleep(0.2)

    async def probe_health() -> None:
        while not stop.is_set():
            t0 = time.monotonic()
            try:
                code = await asyncio.to_thread(lambda: urllib.request.urlopen(f"{site.url}/healthz", timeout=5).status)
            except Exception as exc:  # noqa: BLE001 - a failed probe is a result
                code = repr(exc)
            health.append({"code": code, "s": time.monotonic() - t0})
            connections.append(await asyncio.to_thread(database_connections, site))
            await asyncio.sleep(0.5)

    probes = [asyncio.create_task(probe_handshakes()), asyncio.create_task(probe_health())]
    await asyncio.sleep(1.0)  # a baseline before the crowd
    t0 = time.monotonic()
    results = []
    for _ in range(rounds):  # the crowd replays at once, then again after a pause
        results += await asyncio.gather(*(watch(ws) for _ in range(replayers)), return_exceptions=True)
        await asyncio.sleep(1.0)
    replay_s = time.monotonic() - t0
    stop.set()
    await asyncio.gather(*probes)
    done = [r for r in results if isinstance(r, dict)]
    return {
        "replayers": replayers, "segments": run["segments"], "last_seq": run["last_seq"], "replays": len(done),
        "replays_exact": sum(exact(r["seqs"], run["last_seq"]) and r["status"] is not None for r in done),
        "replays_failed": len(results) - len(done), "replay_all_s": replay_s,
        "replay_p95_s": percentile([r["total_s"] for r in done], 0.95),
        "handshakes": len(handshakes), "handshake_median_s": statistics.median(handshakes) if handshakes else None,
        "handshake_p95_s": percentile(handshakes, 0.95),
        "healthz_probes": len(health),
        "healthz_bad": sum(1 for h in health if h["code"] != 200 or h["s"] > 5),
        "healthz_max_s": max((h["s"] for h in health), default=None),
        "db_connections_peak": max(connections, default=None),
    }


async def live_runs(site: Site, runs: int, viewers: int) -> dict:
    spec = scenario(20_000, "load: a small live run")
    ids = [site.python("import json\nfrom django.contrib.auth.models import User\n"
                       "from gridweb.runs.services import create_run\n"
                       f"ids = [create_run(User.objects.get(username='load'), json.loads({json.dumps(spec)!r}),"
                       f" visibility='public', dispatch_now=False).pk for _ in range({runs})]\n"
                       "print(json.dumps(ids))\n")][0]
    per_run = max(1, viewers // runs)
    base = site.url.replace("http", "ws", 1)
    watchers = [asyncio.create_task(watch(f"{base}/ws/runs/{run}/", timeout=300)) for run in ids for _ in range(per_run)]
    await asyncio.sleep(2.0)  # every viewer connected before its run starts
    t0 = time.monotonic()
    await asyncio.to_thread(site.python, "import json\nfrom gridweb.runs.execution import dispatch\n"
                            f"[dispatch(r) for r in {ids!r}]\nprint(json.dumps(True))\n")
    results = await asyncio.gather(*watchers, return_exceptions=True)
    elapsed = time.monotonic() - t0
    finals = site.python("import json\nfrom gridweb.runs.models import Run\n"
                         f"print(json.dumps({{r.pk: [r.status, r.last_seq] for r in Run.objects.filter(pk__in={ids!r})}}))\n")
    good, wrong = 0, []
    for k, result in enumerate(results):
        status, last_seq = finals[str(ids[k // per_run])]
        if isinstance(result, dict) and result["status"] is not None and exact(result["seqs"], last_seq):
            good += 1
        else:
            wrong.append({"run": ids[k // per_run], "status": status, "last_seq": last_seq,
                          "got": repr(result) if not isinstance(result, dict) else
                          {"seqs": result["seqs"][-5:], "n": len(result["seqs"]), "status": result["status"]}})
    return {"runs": runs, "viewers": len(watchers), "viewers_exact": good, "runs_done": sum(
        1 for s, _ in finals.values() if s == "done"), "all_done_s": elapsed, "wrong": wrong[:10]}


def measure(name: str, code: Path, args) -> dict:
    site = Site(name, code)
    try:
        log(f"{name}: starting the full stack ({site.folder})")
        site.start()
        run = site.finished_run(scenario(args.segments, f"load: {args.segments:,} segments"))
        log(f"{name}: replaying run {run['id']} ({run['segments']:,} segments, {run['last_seq'] + 1} chunks)"
            f" to {args.replayers} viewers")
        out = {"replay": asyncio.run(replay_under_load(site, run, args.replayers, args.rounds))}
        log(f"{name}: {json.dumps(out['replay'])}")
        if args.runs:
            log(f"{name}: {args.runs} live runs x {args.viewers} viewers")
            out["live"] = asyncio.run(live_runs(site, args.runs, args.viewers))
            log(f"{name}: {json.dumps(out['live'])}")
        return out
    finally:
        site.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--segments", type=int, default=1_000_000)
    parser.add_argument("--replayers", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5, help="times the crowd replays at once (1 s apart)")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--viewers", type=int, default=100)
    parser.add_argument("--peer", default=DEFAULT_PEER)
    parser.add_argument("--no-peer", action="store_true")
    args = parser.parse_args()
    results = {"gridweb": measure("gridweb", ROOT, args)}
    if not args.no_peer:
        worktree = Path(tempfile.mkdtemp(prefix="gridweb-load-peer-")) / "peer"
        subprocess.run(["git", "worktree", "add", "--detach", str(worktree), args.peer], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            results["peer"] = measure("peer", worktree, argparse.Namespace(**{**vars(args), "runs": 0}))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, capture_output=True)
            shutil.rmtree(worktree.parent, ignore_errors=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    g = results["gridweb"]["replay"]
    print(f"replay of {g['segments']:,} segments to {g['replayers']} viewers: handshake median "
          f"{g['handshake_median_s']:.3f} s, p95 {g['handshake_p95_s']:.3f} s (target < "
          f"{TARGETS['handshake_p95_s']} s); /healthz not 200 or > 5 s: {g['healthz_bad']} of "
          f"{g['healthz_probes']}; exact replays {g['replays_exact']}/{g['replays']}; database connections "
          f"at most {g['db_connections_peak']}")
    if "peer" in results:
        p = results["peer"]["replay"]
        print(f"peer ({args.peer}): handshake median {p['handshake_median_s']:.3f} s, p95 {p['handshake_p95_s']:.3f} s;"
              f" /healthz bad {p['healthz_bad']} of {p['healthz_probes']}; exact replays "
              f"{p['replays_exact']}/{p['replays']}; handshake p95 ratio peer/GridWeb "
              f"{p['handshake_p95_s'] / g['handshake_p95_s']:.1f}x")
    if "live" in results["gridweb"]:
        live = results["gridweb"]["live"]
        print(f"{live['runs']} live runs x {live['viewers']} viewers: {live['viewers_exact']} viewers with exactly "
              f"their run's chunks, {live['runs_done']} runs done in {live['all_done_s']:.0f} s")
    ok = (g["handshake_p95_s"] < TARGETS["handshake_p95_s"] and g["healthz_bad"] == 0
          and g["replays_exact"] == g["replays"]
          and ("live" not in results["gridweb"] or results["gridweb"]["live"]["viewers_exact"]
               == results["gridweb"]["live"]["viewers"]))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
