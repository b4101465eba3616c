"""PostgreSQL connections of a web process are bounded (issue 34, item 2).

Under ASGI each request's sync code runs in a thread of its own, and with ``CONN_MAX_AGE > 0`` each
thread left its connection open: 50 concurrent wrong logins left 52 idle connections per daphne and
two web processes took 98 of PostgreSQL's 100, workers included. Now each process borrows from a
pool of at most ``GRIDWEB_DB_POOL_MAX`` connections, and a request that waits longer than
``GRIDWEB_DB_POOL_TIMEOUT`` seconds for one gets a 503, not a hang.

The site here has a pool of 4 and a 2-second wait, and a Redis server of its own.
"""
from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest

from tests.conftest import E2E_WORKERS, full_stack, project_env, run_python, run_python_json

pytestmark = pytest.mark.slow

POOL_MAX = 4
POOL_TIMEOUT = 2


@pytest.fixture(scope="module")
def site(test_database_url, own_redis, tmp_path_factory):
    with full_stack(test_database_url, own_redis.url, tmp_path_factory, name="gridweb_pool",
                    GRIDWEB_DB_POOL_MAX=str(POOL_MAX), GRIDWEB_DB_POOL_TIMEOUT=str(POOL_TIMEOUT)) as site:
        yield site


def request(site, path: str, body: dict | None = None, timeout: float = 60) -> tuple[int, str, float]:
    """(status, body, seconds) of a GET, or a JSON POST when there is a body."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{site.base_url}{path}", data=data,
                                 headers={"Content-Type": "application/json"} if data else {})
    began = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return response.status, response.read().decode(errors="replace"), time.monotonic() - began
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace"), time.monotonic() - began


def server_connections(site) -> int:
    """TCP connections of the web process to PostgreSQL's port (its /proc: exact, whatever else runs)."""
    pid = site.processes["server"].pid
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            if remote_port == 5432 and fields[9] in inodes and fields[3] == "01":  # ESTABLISHED
                count += 1
    return count


def database_connections(site) -> int:
    name = site.env["DATABASE_URL"].rsplit("/", 1)[1]
    with psycopg.connect(site.env["DATABASE_URL"].rsplit("/", 1)[0] + "/postgres") as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (name,)).fetchone()[0]


def test_a_crowd_of_logins_and_page_loads_holds_at_most_the_pool(site):
    def wrong_login(i: int):
        return request(site, "/api/token/", {"username": f"nobody{i}", "password": "wrong"})[0]

    def page(i: int):
        return request(site, ("/api/runs/", "/gallery/", "/accounts/login/", "/")[i % 4])[0]

    peak = {"server": 0, "database": 0}
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            peak["server"] = max(peak["server"], server_connections(site))
            peak["database"] = max(peak["database"], database_connections(site))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with ThreadPoolExecutor(100) as crowd:
            statuses = list(crowd.map(wrong_login, range(60))) + list(crowd.map(page, range(60)))
    finally:
        stop.set()
        watcher.join()
    after = {"server": server_connections(site), "database": database_connections(site)}
    print(f"connections: peak {peak}, after {after}, statuses {sorted(set(statuses))}")  # docs/deploy.md

    assert 500 not in statuses and all(status < 500 or status == 503 for status in statuses), statuses
    assert peak["server"] <= POOL_MAX and after["server"] <= POOL_MAX, (peak, after)
    # the workers: each main process's recovery thread, each prefork child's task and its heartbeat
    assert peak["database"] <= POOL_MAX + E2E_WORKERS * 3, (peak, after)


def test_a_request_that_cannot_get_a_connection_in_time_gets_a_503_not_a_hang(site):
    holder = psycopg.connect(site.env["DATABASE_URL"])
    try:
        # listing runs reads this table: each such request waits on the lock holding a pooled connection
        holder.execute("LOCK TABLE runs_run IN ACCESS EXCLUSIVE MODE")

        began = time.monotonic()
        with ThreadPoolExecutor(POOL_MAX + 4) as crowd:
            waiting = [crowd.submit(request, site, "/api/runs/", None, 30) for _ in range(POOL_MAX + 4)]
            time.sleep(POOL_TIMEOUT + 3)
            answered = [f.result() for f in waiting if f.done()]
            assert time.monotonic() - began < POOL_TIMEOUT + 10
            holder.rollback()  # let the blocked ones go
            results = [f.result() for f in waiting]
    finally:
        holder.close()

    busy = [r for r in results if r[0] == 503]
    assert busy, results
    assert all(took < POOL_TIMEOUT + 3 for _, _, took in busy), results
    assert all("busy" in body.lower() for _, body, _ in busy), busy[0][1]
    assert len(answered) >= len(busy), (answered, results)
    # nothing leaked: every connection came back, pages load again
    assert [request(site, "/api/runs/")[0] for _ in range(POOL_MAX * 3)] == [200] * (POOL_MAX * 3)


TOKEN = """
import json
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
print(json.dumps(Token.objects.get_or_create(user=User.objects.get_or_create(username="pooled")[0])[0].key))
"""


def test_runs_go_through_the_workers_with_their_pools(site):
    # the prefork children (forked after the main process's recovery thread used its pool) run them
    from tests.web.test_run_execution import small_spec

    token = site.python_json(TOKEN)
    ids = []
    for seed in (1, 2, 3):
        req = urllib.request.Request(f"{site.base_url}/api/runs/", method="POST",
                                     data=json.dumps({"spec": small_spec(seed=seed)}).encode(),
                                     headers={"Content-Type": "application/json", "Authorization": f"Token {token}"})
        with urllib.request.urlopen(req, timeout=30) as response:
            ids.append(json.loads(response.read())["id"])
    deadline = time.monotonic() + 180
    while True:
        with psycopg.connect(site.env["DATABASE_URL"]) as conn:
            states = conn.execute("SELECT status, error FROM runs_run WHERE id = ANY(%s)", (ids,)).fetchall()
        if all(status in ("done", "failed", "cancelled") for status, _ in states):
            break
        assert time.monotonic() < deadline, states
        time.sleep(0.5)
    assert [status for status, _ in states] == ["done"] * 3, states
    for name in ("worker1", "worker2"):
        assert "too many clients" not in site.log(name) and "Traceback" not in site.log(name), site.log(name)[-3000:]


FORKED_CHILD = """
import json, os
import django
django.setup()
from django.db import connection, connections

def backend_pid():
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]

parent = backend_pid()
connections.close_all()  # back to the pool, open and idle: what a forked child would inherit
read, write = os.pipe()
child = os.fork()
if child == 0:
    try:
        os.write(write, str(backend_pid()).encode())
    finally:
        os._exit(0)
os.waitpid(child, 0)
child_pid = int(os.read(read, 100))
print(json.dumps({"parent": parent, "child": child_pid, "parent_after": backend_pid(),
                  "pool": connection.pool is not None}))
"""


def test_a_forked_process_opens_its_own_connections_not_its_parents(site):
    # Celery's prefork children are forked from a main process whose recovery thread used the pool
    found = run_python_json(FORKED_CHILD, env=site.env)
    assert found["pool"] is True
    assert found["child"] != found["parent"], found
    assert found["parent_after"] == found["parent"], found  # the parent's connection still works


def test_the_pool_settings_are_checked_and_the_embedded_mode_has_no_pool(site):
    env = project_env()
    assert run_python_json("import django, json; django.setup()\nfrom django.conf import settings\n"
                           "print(json.dumps(settings.DATABASES['default']['ENGINE']))", env=env) \
        == "django.db.backends.sqlite3"
    for value in ("0", "four", "1.5"):
        result = run_python("import django; django.setup()",
                            env={**site.env, "GRIDWEB_DB_POOL_MAX": value})
        assert result.returncode != 0 and "GRIDWEB_DB_POOL_MAX" in result.stderr, result.stderr[-500:]
    result = run_python("import django; django.setup()", env={**site.env, "GRIDWEB_DB_POOL_TIMEOUT": "0"})
    assert result.returncode != 0 and "GRIDWEB_DB_POOL_TIMEOUT" in result.stderr, result.stderr[-500:]
