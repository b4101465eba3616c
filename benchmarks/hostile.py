"""The hostile input battery of issue 34, against a running full-stack site.

    .venv/bin/python benchmarks/hostile.py [--as-limit-mb 2048] [--only TEXT] [--peer REV]

Starts a full-stack site of its own (``tests.conftest.full_stack``: a fresh PostgreSQL database on
``GRIDWEB_TEST_DATABASE_URL``'s server, Redis database 13 of ``GRIDWEB_TEST_REDIS_URL``'s, two
Celery workers, daphne on a free port), limits the web server's address space (``prlimit --as``,
2 GB by default, as the issue's acceptance asks), then sends each item of :data:`BATTERY` in turn,
logged in (an API token, or a browser session for the builder) or not, and prints each item's
status, time and the server's memory: its resident size after the item and the growth of its peak
(VmHWM) over the battery so far. Results go to ``benchmarks/results/hostile.json`` (git-ignored).

The acceptance (issue 34): every answer is a refusal -- 4xx; the builder's validate and preview
answer a document's errors with 200 and the errors listed, which counts as a refusal -- within 2 s,
never a 5xx or a dropped connection, and the server is alive at the end.
``tests/web/test_hostile_battery.py`` asserts exactly that over the same table.
"""

from __future__ import annotations

import argparse
import copy
import functools
import http.client
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "benchmarks" / "results" / "hostile.json"
REDIS_DB = 13
SECONDS = 2.0  # each answer within this (the acceptance)
AS_LIMIT = 2 * 1024**3  # the web server's address space under test: prlimit --as=2G

# A cluster as large as GRIDWEB_MAX_CLUSTER_PROCESSORS allows: a size past it must still be refused
# before anything of its size is computed.
BASE_SPEC = {
    "name": "hostile",
    "platform": {"clusters": [{"name": "main", "processors": 1_000_000, "scheduler": {"name": "easy"}}]},
    "workload": {"streams": [{
        "kind": "synthetic", "name": "users", "target": "main",
        "arrival": {"target_load": 0.7},
        "size": {"kind": "uniform", "low": 1, "high": 16, "integer": True},
        "runtime": {"kind": "exponential", "mean": 600},
    }]},
    "run": {"seed": 1, "replications": 1, "stop": {"completions": 1000}},
}

# Job-size distributions of issue 34, item 1 (each cost gigabytes: arrays of `high` elements)
HOSTILE_SIZES = {
    "uniform high 1e9": {"kind": "uniform", "low": 1, "high": 1_000_000_000},
    "exponential mean 1e9": {"kind": "exponential", "mean": 1e9},
    "bounded_pareto high 2e9": {"kind": "bounded_pareto", "alpha": 1.1, "low": 1, "high": 2e9},
    "rsd high 1e9": {"kind": "rsd", "low": 1, "high": 1_000_000_000, "q": 0.9},
    "uniform high 1e8": {"kind": "uniform", "low": 1, "high": 100_000_000},
}


def spec_with_size(size: dict) -> dict:
    spec = copy.deepcopy(BASE_SPEC)
    spec["workload"]["streams"][0]["size"] = size
    return spec


def spec_json_with(path: tuple[str | int, ...], raw: str) -> bytes:
    """``{"spec": BASE_SPEC}`` with the value at ``path`` replaced by the raw JSON text ``raw``
    (an integer literal Python's json would refuse to write or read)."""
    spec = copy.deepcopy(BASE_SPEC)
    node = spec
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = "@@RAW@@"
    return json.dumps({"spec": spec}).replace('"@@RAW@@"', raw).encode()


def many_keys(n: int = 100_000) -> bytes:
    return json.dumps({"spec": {f"k{i}": i for i in range(n)}}).encode()


def many_streams(n: int = 100_000) -> bytes:
    spec = copy.deepcopy(BASE_SPEC)
    spec["workload"]["streams"] = [{"kind": "synthetic", "target": "main"}] * n
    return json.dumps({"spec": spec}).encode()


def big_string(key: str = "spec", n: int = 5_000_000) -> bytes:
    return b'{"' + key.encode() + b'": "' + b"a" * n + b'"}'


def chunked_form(total: int = 300 * 1024**2, chunk: int = 1024**2) -> Iterator[bytes]:
    yield b"username=" + b"a" * (chunk - 9)
    for _ in range(total // chunk - 1):
        yield b"a" * chunk


@dataclass(frozen=True)
class Item:
    """One hostile request: ``body`` makes the bytes (or chunks, sent chunked) when it is sent."""

    name: str
    method: str
    path: str
    auth: str  # "token" (API), "session" (the builder, with its CSRF token) or "none"
    body: Callable[[], bytes | Iterator[bytes]] | None = None
    content_type: str = "application/json"
    # the builder's validate and preview answer a document's errors with 200 and the errors listed
    errors_in_200: bool = False
    tags: tuple[str, ...] = field(default=())


def _scenario_items() -> list[Item]:
    items = []
    for label, size in HOSTILE_SIZES.items():
        body = functools.partial(lambda size: json.dumps({"spec": spec_with_size(size)}).encode(), size)
        items += [
            Item(f"size {label}: API validate", "POST", "/api/scenarios/validate/", "token", body),
            Item(f"size {label}: API run", "POST", "/api/runs/", "token", body),
            Item(f"size {label}: builder validate", "POST", "/scenarios/validate/", "session", body,
                 errors_in_200=True),
            Item(f"size {label}: builder preview", "POST", "/scenarios/preview/", "session", body,
                 errors_in_200=True),
            Item(f"size {label}: builder save", "POST", "/scenarios/new/", "session", body),
        ]
    return items


TEN_TO_400 = "1" + "0" * 400
DIGITS_5000 = "1" * 5000

# The battery: one table (docs/deploy.md, "Hostile input battery", quotes it).
BATTERY: list[Item] = [
    *_scenario_items(),
    Item("5 MB string: token", "POST", "/api/token/", "none", lambda: big_string("username")),
    Item("5 MB string: API run", "POST", "/api/runs/", "token", big_string),
    Item("5 MB string: builder save", "POST", "/scenarios/new/", "session", big_string),
    Item("100k keys: token", "POST", "/api/token/", "none", many_keys),
    Item("100k keys: API run", "POST", "/api/runs/", "token", many_keys),
    Item("100k keys: builder validate", "POST", "/scenarios/validate/", "session", many_keys, errors_in_200=True),
    Item("100k streams: API validate", "POST", "/api/scenarios/validate/", "token", many_streams),
    Item("100k streams: builder validate", "POST", "/scenarios/validate/", "session", many_streams,
         errors_in_200=True),
    Item("100k streams: builder preview", "POST", "/scenarios/preview/", "session", many_streams,
         errors_in_200=True),
    Item("300 MB chunked form: login", "POST", "/accounts/login/", "none", chunked_form,
         content_type="application/x-www-form-urlencoded"),
    Item("10^400 integer: API validate (runtime mean)", "POST", "/api/scenarios/validate/", "token",
         lambda: spec_json_with(("workload", "streams", 0, "runtime", "mean"), TEN_TO_400)),
    Item("10^400 integer: API run (completions)", "POST", "/api/runs/", "token",
         lambda: spec_json_with(("run", "stop", "completions"), TEN_TO_400)),
    Item("10^400 integer: builder validate (processors)", "POST", "/scenarios/validate/", "session",
         lambda: spec_json_with(("platform", "clusters", 0, "processors"), TEN_TO_400), errors_in_200=True),
    Item("5,000-digit integer: API run (seed)", "POST", "/api/runs/", "token",
         lambda: spec_json_with(("run", "seed"), DIGITS_5000)),
    Item("5,000-digit integer: builder validate (seed)", "POST", "/scenarios/validate/", "session",
         lambda: spec_json_with(("run", "seed"), DIGITS_5000), errors_in_200=True),
    Item("5,000-digit integer: token", "POST", "/api/token/", "none",
         lambda: ('{"username": ' + DIGITS_5000 + ', "password": "x"}').encode()),
    Item("?limit=1e20: runs", "GET", "/api/runs/?limit=1e20", "token"),
    Item("?limit=1e20: sweeps", "GET", "/api/sweeps/?limit=1e20", "token"),
]


@dataclass
class Credentials:
    token: str
    session: str
    csrf: str


CREDENTIALS = """
import json, secrets
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
from rest_framework.authtoken.models import Token
user, _ = User.objects.get_or_create(username="hostile")
session = SessionStore()
session[SESSION_KEY] = str(user.pk)
session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.create()
print(json.dumps({"token": Token.objects.get_or_create(user=user)[0].key, "session": session.session_key,
                  "csrf": secrets.token_hex(16)}))
"""


def credentials(site) -> Credentials:
    """A user with an API token and a logged-in session (made in the site's database)."""
    return Credentials(**site.python_json(CREDENTIALS))


def server_memory(pid: int) -> dict[str, int]:
    """The process's resident size, its peak, and its address space, in MB (from /proc)."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "VmSize", "VmPeak"):
            found[key] = int(value.split()[0]) // 1024
    return found


def send(base_url: str, item: Item, creds: Credentials | None, timeout: float = 60) -> dict:
    """Send one item; return its status (None: no answer -- a dropped connection or a timeout), the
    seconds until the answer, and the answer's start (or the error)."""
    parts = urlsplit(base_url)
    headers = {"Host": parts.netloc}
    if item.auth == "token" and creds:
        headers["Authorization"] = f"Token {creds.token}"
    if item.auth == "session" and creds:
        headers["Cookie"] = f"sessionid={creds.session}; csrftoken={creds.csrf}"
        headers["X-CSRFToken"] = creds.csrf
    body = item.body() if item.body else None
    if body is not None:
        headers["Content-Type"] = item.content_type
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    began = time.monotonic()
    result: dict = {"name": item.name, "status": None}
    try:
        if isinstance(body, bytes | None):
            connection.request(item.method, item.path, body=body, headers=headers)
        else:
            connection.putrequest(item.method, item.path, skip_host=True)
            for key, value in headers.items():
                connection.putheader(key, value)
            connection.putheader("Transfer-Encoding", "chunked")
            connection.endheaders()
            try:
                for chunk in body:
                    connection.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                connection.send(b"0\r\n\r\n")
            except OSError:
                pass  # the server answered and closed before the whole body: read its answer
        response = connection.getresponse()
        text = response.read(4096).decode(errors="replace")
        result.update(status=response.status, seconds=time.monotonic() - began, answer=text[:300])
        if item.errors_in_200 and response.status == 200:
            try:
                document = json.loads(text) if len(text) < 4096 else None
            except ValueError:
                document = None
            # a long answer is an error list the 4 KB read cut short
            result["errors_listed"] = document is None or bool(document.get("errors"))
    except (OSError, http.client.HTTPException) as exc:
        result.update(seconds=time.monotonic() - began, answer=f"{type(exc).__name__}: {exc}")
    finally:
        connection.close()
    return result


def refused(item: Item, result: dict) -> bool:
    """The acceptance of one answer: a refusal (4xx, or the builder's 200 listing the errors)."""
    status = result["status"]
    if status is None:
        return False
    return 400 <= status < 500 or (item.errors_in_200 and status == 200 and result.get("errors_listed", False))


def run_battery(base_url: str, pid: int, creds: Credentials | None, items: list[Item] | None = None,
                report: Callable[[dict], None] | None = None) -> list[dict]:
    """Send every item in turn; each result also holds the server's memory after it."""
    results = []
    for item in items if items is not None else BATTERY:
        alive_before = _alive(pid)
        result = send(base_url, item, creds)
        result["refused"] = refused(item, result)
        result["fast"] = result["seconds"] < SECONDS
        result["server_alive"] = alive_before and _alive(pid)
        if result["server_alive"]:
            result["memory_mb"] = server_memory(pid)
        results.append(result)
        if report:
            report(result)
    return results


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def answers(base_url: str) -> bool:
    """Whether the server answers /healthz (any status: it is up and serving)."""
    parts = urlsplit(base_url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        connection.request("GET", "/healthz")
        return connection.getresponse().status in (200, 503)
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def limit_address_space(pid: int, limit: int = AS_LIMIT) -> None:
    """prlimit --as on a running process (both the soft and the hard limit)."""
    subprocess.run(["prlimit", f"--pid={pid}", f"--as={limit}:{limit}"], check=True)


def _print(result: dict) -> None:
    memory = result.get("memory_mb", {})
    verdict = "ok" if result["refused"] and result["fast"] else "FAIL"
    print(f"{verdict:4} {result['status']!s:>4} {result['seconds']:6.2f} s  rss {memory.get('VmRSS', '-'):>5} MB "
          f"peak {memory.get('VmHWM', '-'):>5} MB  {result['name']}"
          + ("" if verdict == "ok" else f"  [{result['answer'][:120]!r}]"), flush=True)


class _TempFactory:
    """The bit of pytest's tmp_path_factory that full_stack uses."""

    def __init__(self, base: Path):
        self.base = base

    def mktemp(self, name: str) -> Path:
        import tempfile

        return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.base))


def measure(label: str, root: Path, args: argparse.Namespace, items: list[Item]) -> dict:
    """The battery against a site running the code of ``root`` (this checkout, or the peer's worktree)."""
    import tempfile

    from tests.conftest import DEFAULT_TEST_DATABASE_URL, DEFAULT_TEST_REDIS_URL, full_stack, run_python

    # the engine's compiled parts, once (a fresh worktree compiles them for about 2 minutes, longer
    # than the site waits for its workers to be ready)
    warmed = run_python("from simengine.models import warm_up; warm_up()", timeout=1200, root=root)
    assert warmed.returncode == 0, warmed.stderr
    database = os.environ.get("GRIDWEB_TEST_DATABASE_URL", DEFAULT_TEST_DATABASE_URL)
    redis_url = os.environ.get("GRIDWEB_TEST_REDIS_URL", DEFAULT_TEST_REDIS_URL).rsplit("/", 1)[0] + f"/{REDIS_DB}"
    with tempfile.TemporaryDirectory() as base, \
            full_stack(database, redis_url, _TempFactory(Path(base)), name="gridweb_hostile", root=root) as site:
        pid = site.processes["server"].pid
        at_rest = server_memory(pid)
        if args.as_limit_mb:
            limit_address_space(pid, args.as_limit_mb * 1024**2)
        print(f"{label}: server pid {pid} at rest: {at_rest} MB; address space limit "
              f"{args.as_limit_mb or 'none'} MB", flush=True)
        results = run_battery(site.base_url, pid, credentials(site), items, report=_print)
        alive = _alive(pid) and answers(site.base_url)
        if any(r["status"] is None or r["status"] >= 500 for r in results):
            print("--- the server's log, last lines ---\n" + site.log("server")[-4000:], flush=True)
        end = server_memory(pid) if alive else {}
    failed = [r["name"] for r in results if not (r["refused"] and r["fast"])]
    summary = {"at_rest_mb": at_rest, "end_mb": end, "as_limit_mb": args.as_limit_mb, "server_alive": alive,
               "peak_growth_mb": (end.get("VmHWM", 0) - at_rest["VmHWM"]) if end else None,
               "slowest_s": max(r["seconds"] for r in results), "failed": failed, "results": results}
    print(f"{label}: {len(results) - len(failed)}/{len(results)} refused within {SECONDS} s; server alive: {alive}; "
          f"peak grew {summary['peak_growth_mb']} MB; slowest {summary['slowest_s']:.2f} s", flush=True)
    return summary


def main() -> int:
    import tempfile

    from worktree import checkout  # (benchmarks/: this script's folder)

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--as-limit-mb", type=int, default=AS_LIMIT // 1024**2,
                        help="the web server's address-space limit (0: none)")
    parser.add_argument("--only", default="", help="send only the items whose name contains this")
    parser.add_argument("--peer", default="",
                        help="also send the battery to a site running this revision (e.g. the commit before "
                             "issue 34's fixes, d71782d), side by side")
    args = parser.parse_args()
    items = [item for item in BATTERY if args.only in item.name]
    summary = {"gridweb": measure("GridWeb", ROOT, args, items)}
    if args.peer:
        with checkout(args.peer, Path(tempfile.mkdtemp(prefix="gridweb-hostile-peer-")) / "peer") as peer:
            summary["peer"] = {"rev": args.peer, **measure(f"peer {args.peer}", peer, args, items)}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(summary, indent=1))
    mine = summary["gridweb"]
    if "peer" in summary:
        theirs = summary["peer"]
        print(f"side by side: refused within {SECONDS} s {len(items) - len(mine['failed'])}/{len(items)} vs "
              f"peer {len(items) - len(theirs['failed'])}/{len(items)}; 5xx or no answer "
              f"{sum(r['status'] is None or r['status'] >= 500 for r in mine['results'])} vs "
              f"{sum(r['status'] is None or r['status'] >= 500 for r in theirs['results'])}; peak growth "
              f"{mine['peak_growth_mb']} vs {theirs['peak_growth_mb']} MB; slowest {mine['slowest_s']:.2f} vs "
              f"{theirs['slowest_s']:.2f} s")
    print(f"-> {RESULTS}")
    return 0 if not mine["failed"] and mine["server_alive"] else 1


if __name__ == "__main__":
    sys.exit(main())
