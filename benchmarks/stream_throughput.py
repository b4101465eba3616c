"""Segments per second streamed end to end: Celery worker → Redis → websocket → client.

    .venv/bin/python benchmarks/stream_throughput.py [--reps 3]
    .venv/bin/python benchmarks/stream_throughput.py --base-url http://host:8000   # a running site

Target: at least 20,000 segments/s. What it does, all on this machine:

1. A full-stack site like the tests' ``full_stack_site`` fixture (tests/conftest.py): a fresh
   PostgreSQL database ``gridweb_bench_stream`` on ``GRIDWEB_TEST_DATABASE_URL``'s server, Redis
   database 7 of ``GRIDWEB_TEST_REDIS_URL``'s server, one Celery worker process and the ASGI
   server. With ``--base-url`` it uses a running site instead, whose database and Redis are
   ``DATABASE_URL`` and ``REDIS_URL`` in this environment.
2. The DAS2-fs1 trace (gridweb/demo/DAS2-fs1-2003-1.swf.gz, 40,315 jobs) stored as a
   ``TraceFile`` through the ORM, and a run replaying it under EASY on its 64 processors.
3. For each repetition a new run: a websocket client connects to ``/ws/runs/<id>/`` *before* the
   run is dispatched, then the run goes to the worker (``execution.dispatch``, a Celery task) and
   the client receives every chunk live, parsing each message (as a browser does), until the
   status message. Replication 0's segments leave the engine in a burst of 5,000-segment chunks as
   soon as it is simulated; each is stored in PostgreSQL by the worker, announced through Redis,
   read back by the consumer and sent over the websocket, so the rate at which they arrive is the
   pipeline's throughput:

   * **live** = segments after the first chunk / (arrival of the last segments chunk − arrival of
     the first), in segments per second;
   * **replay**, for information: a second client that connects once the run is done and replays
     it from seq 0 (database → websocket → client, a late joiner's path): segments / (handshake →
     status message).

Every figure is measured in this run; only the 20,000 target is fixed. It exits with status 1 if
the median live rate misses the target, and writes every repetition to
``benchmarks/results/stream_throughput.json`` (git-ignored). See docs/performance.md,
"Web: streaming".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import (  # noqa: E402 - the repository root must be importable first
    DEFAULT_TEST_DATABASE_URL,
    DEFAULT_TEST_REDIS_URL,
    FullStackSite,
    _free_port,
    _recreate_database,
    _wait_until,
    project_env,
)

TRACE = ROOT / "gridweb" / "demo" / "DAS2-fs1-2003-1.swf.gz"
RESULTS = ROOT / "benchmarks" / "results" / "stream_throughput.json"
TARGET = 20_000  # segments per second
DATABASE = "gridweb_bench_stream"
REDIS_DB = 7

SETUP = """
import hashlib, json
from pathlib import Path
from django.contrib.auth.models import User
from django.test import Client
from gridweb.scenarios.models import TraceFile
user, _ = User.objects.get_or_create(username="bench")
content = Path({trace!r}).read_bytes()
TraceFile.objects.get_or_create(stored_name="bench-DAS2-fs1-2003-1.swf.gz", defaults=dict(
    owner=user, name="DAS2-fs1-2003-1", original_name="DAS2-fs1-2003-1.swf.gz", format="swf",
    content=content, size=len(content), sha256=hashlib.sha256(content).hexdigest()))
client = Client()
client.force_login(user)
print(json.dumps({{"session": client.cookies["sessionid"].value}}))
"""

SPEC = {
    "name": "DAS-2 fs1 replay (stream benchmark)",
    "platform": {"clusters": [{"name": "fs1", "processors": 64, "scheduler": {"name": "easy"}}]},
    "workload": {"streams": [{"kind": "trace", "name": "das2-fs1", "path": "bench-DAS2-fs1-2003-1.swf.gz",
                              "format": "swf", "target": "fs1"}]},
    "run": {"seed": 1, "enforce_walltime": False},
}

CREATE_RUN = """
import json
from django.contrib.auth.models import User
from gridweb.runs.services import create_run
run = create_run(User.objects.get(username="bench"), json.loads({spec!r}), dispatch_now=False)
print(json.dumps(run.pk))
"""

DISPATCH = """
import json
from gridweb.runs.execution import dispatch
dispatch({run_id})
print(json.dumps(True))
"""

RUN_STATE = """
import json
from gridweb.runs.models import Run
run = Run.objects.get(pk={run_id})
print(json.dumps({{"status": run.status, "segments": run.segments_count, "worker": run.worker,
                  "error": run.error, "engine_seconds": run.summary.get("engine_seconds")}}))
"""


class Site:
    """Runs code against the site's database (``python_json``) and knows its websocket URL."""

    def __init__(self, env: dict[str, str], base_url: str, owned: FullStackSite | None):
        self.env, self.base_url, self.owned = env, base_url.rstrip("/"), owned
        self.helper = owned or FullStackSite(env, self.base_url, Path(tempfile.mkdtemp()))

    def python_json(self, code: str) -> Any:
        return self.helper.python_json(code, timeout=300)

    @property
    def ws_url(self) -> str:
        return self.base_url.replace("http", "ws", 1)


def start_site() -> Site:
    """A full-stack site of our own: fresh database and Redis, one worker, the ASGI server."""
    import urllib.request

    import redis

    admin_url = os.environ.get("GRIDWEB_TEST_DATABASE_URL", DEFAULT_TEST_DATABASE_URL)
    redis_server = os.environ.get("GRIDWEB_TEST_REDIS_URL", DEFAULT_TEST_REDIS_URL)
    database_url = _recreate_database(admin_url, DATABASE)
    redis_url = redis_server.rsplit("/", 1)[0] + f"/{REDIS_DB}"
    redis.Redis.from_url(redis_url).flushdb()
    data_dir, logs = Path(tempfile.mkdtemp(prefix="gridweb-bench-data-")), Path(tempfile.mkdtemp())
    env = project_env(DATABASE_URL=database_url, REDIS_URL=redis_url, GRIDWEB_DATA_DIR=str(data_dir))
    port = _free_port()
    site = FullStackSite(env, f"http://127.0.0.1:{port}", logs)
    site.manage("migrate", "--noinput", timeout=300)
    site.start("worker", [sys.executable, "-m", "celery", "-A", "gridweb", "worker", "--pool=prefork",
                          "--concurrency=1", "--hostname=bench@%h", "--loglevel=INFO", "--without-gossip",
                          "--without-mingle"])
    site.start("server", [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"])

    def healthy() -> bool:
        with urllib.request.urlopen(f"{site.base_url}/healthz", timeout=5) as response:
            return response.status == 200

    _wait_until(healthy, 120, "the server's /healthz", site)
    _wait_until(lambda: "ready." in site.log("worker"), 120, "the Celery worker", site)
    print(f"site: {site.base_url} (logs in {logs})", flush=True)
    return Site(env, site.base_url, site)


async def receive(url: str, session: str, ready: asyncio.Event | None = None) -> list[tuple[float, dict]]:
    """Every message until the status message, each with its arrival time (perf_counter)."""
    from websockets.asyncio.client import connect

    arrivals: list[tuple[float, dict]] = []
    async with connect(url, additional_headers={"Cookie": f"sessionid={session}"}, max_size=None,
                       open_timeout=30) as socket:
        arrivals.append((time.perf_counter(), {"kind": "open"}))
        if ready is not None:
            ready.set()
        while True:
            text = await asyncio.wait_for(socket.recv(), timeout=600)
            message = json.loads(text)
            arrivals.append((time.perf_counter(), message))
            if message["kind"] == "status":
                return arrivals


def segments_in(message: dict) -> int:
    return len(message["segments"]["t0"]) if message["kind"] == "segments" else 0


async def one_repetition(site: Site, session: str) -> dict[str, Any]:
    run_id = site.python_json(CREATE_RUN.format(spec=json.dumps(SPEC)))
    url = f"{site.ws_url}/ws/runs/{run_id}/"
    ready = asyncio.Event()
    live_task = asyncio.create_task(receive(url, session, ready))
    await asyncio.wait_for(ready.wait(), 60)
    await asyncio.to_thread(site.python_json, DISPATCH.format(run_id=run_id))
    live = await live_task
    state = site.python_json(RUN_STATE.format(run_id=run_id))
    if live[-1][1].get("status") != "done":
        raise SystemExit(f"run {run_id} ended {live[-1][1]}: {state['error']}")

    chunks = [(t, m) for t, m in live if m["kind"] == "segments"]
    total = sum(segments_in(m) for _, m in chunks)
    window = chunks[-1][0] - chunks[0][0]
    live_rate = (total - segments_in(chunks[0][1])) / window if window > 0 else float("inf")

    replay = await receive(url, session)
    replay_seconds = replay[-1][0] - replay[0][0]
    replayed = sum(segments_in(m) for _, m in replay)
    return {
        "run": run_id, "worker": state["worker"], "segments": total, "stored_segments": state["segments"],
        "chunks": len(chunks), "live_window_s": window, "live_segments_per_s": live_rate,
        "replay_s": replay_seconds, "replay_segments_per_s": replayed / replay_seconds,
        "first_chunk_to_status_s": live[-1][0] - chunks[0][0], "engine_seconds": state["engine_seconds"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3, help="runs streamed (each a new run)")
    parser.add_argument("--base-url", help="a running full-stack site (DATABASE_URL, REDIS_URL set here)")
    args = parser.parse_args()
    if not TRACE.is_file():
        raise SystemExit(f"{TRACE} is missing")

    if args.base_url:
        env = project_env(DATABASE_URL=os.environ["DATABASE_URL"], REDIS_URL=os.environ["REDIS_URL"])
        site = Site(env, args.base_url, None)
    else:
        site = start_site()
    try:
        session = site.python_json(SETUP.format(trace=str(TRACE)))["session"]
        results = []
        for rep in range(1, args.reps + 1):
            result = asyncio.run(one_repetition(site, session))
            results.append(result)
            print(f"rep {rep}: {result['segments']:,} segments in {result['chunks']} chunks; "
                  f"live {result['live_segments_per_s']:,.0f} segments/s "
                  f"({result['live_window_s'] * 1000:.0f} ms first→last chunk); "
                  f"replay {result['replay_segments_per_s']:,.0f} segments/s "
                  f"({result['replay_s'] * 1000:.0f} ms); engine {result['engine_seconds']:.2f} s", flush=True)
    finally:
        if site.owned is not None:
            site.owned.stop()

    median = statistics.median(r["live_segments_per_s"] for r in results)
    replay = statistics.median(r["replay_segments_per_s"] for r in results)
    verdict = "PASS" if median >= TARGET else "FAIL"
    print(f"\nlive stream, worker → Redis → websocket → client: median {median:,.0f} segments/s "
          f"(target {TARGET:,}): {verdict}")
    print(f"replay of the finished run from seq 0: median {replay:,.0f} segments/s")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"target": TARGET, "median_live": median, "median_replay": replay,
                                   "load_average": os.getloadavg(), "repetitions": results}, indent=2) + "\n")
    return 0 if median >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
