"""Runs on the full stack when the broker goes away, retried requests, and each user's fair share
of the workers (issue 34, items 5 and 7).

The site has a Redis server of its own (a free port, nothing kept on disk), so stopping it
disturbs no other test, and at most two runs of one user are handed to the workers at once
(``GRIDWEB_USER_RUNS_IN_FLIGHT=2``; the two workers run one run each). A message Redis lost is
looked for after ``GRIDWEB_HEARTBEAT_STALE_SECONDS`` (30 here, the least allowed).
"""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import psycopg
import pytest

from tests.conftest import _wait_until, full_stack
from tests.web.test_run_execution import small_spec

pytestmark = pytest.mark.slow

TOKENS = """
import json
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
print(json.dumps({name: Token.objects.get_or_create(user=User.objects.get_or_create(username=name)[0])[0].key
                  for name in ("alice", "bob")}))
"""


@pytest.fixture(scope="module")
def site(test_database_url, own_redis, tmp_path_factory):
    with full_stack(test_database_url, own_redis.url, tmp_path_factory, name="gridweb_dispatch",
                    GRIDWEB_USER_RUNS_IN_FLIGHT="2", GRIDWEB_HEARTBEAT_STALE_SECONDS="30") as site:
        yield site


@pytest.fixture(scope="module")
def tokens(site) -> dict[str, str]:
    return site.python_json(TOKENS)


def post(site, path: str, token: str, body: dict, headers: dict | None = None, timeout: float = 60):
    """(status, headers, JSON body, seconds taken) of a POST to the site's API."""
    request = urllib.request.Request(f"{site.base_url}{path}", data=json.dumps(body).encode(), method="POST",
                                     headers={"Authorization": f"Token {token}", "Content-Type": "application/json",
                                              **(headers or {})})
    began = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), json.loads(response.read()), time.monotonic() - began
    except urllib.error.HTTPError as error:
        text = error.read()
        try:
            payload = json.loads(text)
        except ValueError:
            payload = text.decode(errors="replace")
        return error.code, dict(error.headers), payload, time.monotonic() - began


def runs(site, where: str = "TRUE") -> list[dict]:
    with psycopg.connect(site.env["DATABASE_URL"]) as conn:
        rows = conn.execute("SELECT r.id, u.username, r.status, r.started_at, r.finished_at, r.error, r.attempt "
                            f"FROM runs_run r JOIN auth_user u ON u.id = r.owner_id WHERE {where} ORDER BY r.id"
                            ).fetchall()
    return [dict(zip(("id", "owner", "status", "started_at", "finished_at", "error", "attempt"), row)) for row in rows]


def wait_finished(site, ids: list[int], timeout: float) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        state = runs(site, f"r.id IN ({','.join(map(str, ids))})")
        if all(run["status"] in ("done", "failed", "cancelled") for run in state):
            return state
        assert time.monotonic() < deadline, f"runs not finished within {timeout} s: {state}"
        time.sleep(0.3)


def test_a_run_posted_while_redis_is_down_is_answered_fast_and_runs_once_redis_is_back(site, tokens, own_redis):
    own_redis.stop()
    try:
        status, headers, body, took = post(site, "/api/runs/", tokens["alice"], {"spec": small_spec(seed=11)})
        # fast, and no 500: either stored and queued (201) or refused with when to try again (503)
        print(f"POST /api/runs/ with Redis down: {status} in {took:.2f} s")
        assert took < 2, f"POST took {took:.1f} s with the broker down"
        assert status in (201, 503), (status, body)
        if status == 503:
            assert int(headers["Retry-After"]) > 0
        else:
            assert body["status"] == "queued"
    finally:
        own_redis.start()
    if status == 503:
        status, _, body, _ = post(site, "/api/runs/", tokens["alice"], {"spec": small_spec(seed=11)})
        assert status == 201, body
    # nobody runs gridweb_requeue: the workers' recovery sweep hands it over once Redis is back
    (ended,) = wait_finished(site, [body["id"]], 120)
    assert ended["status"] == "done", ended["error"]
    assert ended["attempt"] == 1
    # nothing else was created by the failed attempt
    assert [r["id"] for r in runs(site, "TRUE")].count(body["id"]) == 1


def test_a_queued_run_whose_message_redis_lost_is_sent_again_by_the_recovery_sweep(site, tokens, own_redis):
    import redis

    # no worker takes the message: it waits in Redis, and Redis then loses its data
    for name in ("worker1", "worker2"):
        site.processes[name].terminate()
    for name in ("worker1", "worker2"):
        site.processes[name].wait(timeout=60)
    try:
        status, _, body, _ = post(site, "/api/runs/", tokens["bob"], {"spec": small_spec(seed=41)})
        assert status == 201, body
        with psycopg.connect(site.env["DATABASE_URL"]) as conn:
            (task_id,) = conn.execute("SELECT task_id FROM runs_run WHERE id = %s", [body["id"]]).fetchone()
        broker = redis.Redis.from_url(own_redis.url)
        assert task_id and task_id.encode() in b"".join(broker.lrange("celery", 0, -1))  # handed over
        broker.flushall()
    finally:
        for name in ("worker1", "worker2"):
            site.start(name, site.argv[name])
        _wait_until(lambda: all("ready." in site.log(name) for name in ("worker1", "worker2")), 120,
                    "the workers to start again", site)

    # nobody runs gridweb_requeue: a worker's recovery sweep sees the message is gone and sends it again
    (ended,) = wait_finished(site, [body["id"]], 180)
    assert ended["status"] == "done", ended["error"]
    assert ended["attempt"] == 1


def test_a_retried_post_with_the_same_idempotency_key_creates_one_run(site, tokens):
    spec = small_spec(seed=12)
    first = post(site, "/api/runs/", tokens["bob"], {"spec": spec}, {"Idempotency-Key": "bob-run-12"})
    again = post(site, "/api/runs/", tokens["bob"], {"spec": spec}, {"Idempotency-Key": "bob-run-12"})
    other_user = post(site, "/api/runs/", tokens["alice"], {"spec": spec}, {"Idempotency-Key": "bob-run-12"})

    assert first[0] == 201 and again[0] == 200, (first[2], again[2])
    assert again[2]["id"] == first[2]["id"]
    assert other_user[0] == 201 and other_user[2]["id"] != first[2]["id"]  # keys are per user
    assert len(runs(site, "r.seed = 12")) == 2
    wait_finished(site, [first[2]["id"], other_user[2]["id"]], 120)


def test_one_users_backlog_does_not_starve_another_users_run(site, tokens):
    spec = small_spec(seed=21, replications=3, completions=150000)
    backlog = []
    for i in range(8):
        status, _, body, _ = post(site, "/api/runs/", tokens["alice"], {"spec": {**spec, "name": f"alice {i}"}})
        assert status == 201, body
        backlog.append(body["id"])
    status, _, body, _ = post(site, "/api/runs/", tokens["bob"], {"spec": {**spec, "name": "bob's one run"}})
    assert status == 201, body

    state = {run["id"]: run for run in wait_finished(site, [*backlog, body["id"]], 300)}
    assert all(run["status"] == "done" for run in state.values()), state
    # the web process and both workers dispatch at once, and no run was executed twice
    assert all(run["attempt"] == 1 for run in state.values()), state
    bob_started = state[body["id"]]["started_at"]
    alice_after_bob = [i for i in backlog if state[i]["started_at"] > bob_started]
    first, last = min(state[i]["started_at"] for i in backlog), max(state[i]["finished_at"] for i in backlog)
    print(f"fair share: {len(alice_after_bob)} of alice's {len(backlog)} runs started after bob's, which started "
          f"{(bob_started - first).total_seconds():.1f} s into a backlog of {(last - first).total_seconds():.1f} s")
    # first come, first served would start bob's run after all eight; fair share starts it after
    # at most the two alice has handed to the workers
    assert len(alice_after_bob) >= len(backlog) - 3, [(i, state[i]["started_at"]) for i in backlog] + [bob_started]


def test_a_running_run_is_cancelled_at_once_while_redis_is_down(site, tokens, own_redis):
    from tests.web.test_run_execution import SEVERAL_REPLICATIONS

    status, _, body, _ = post(site, "/api/runs/", tokens["alice"], {"spec": SEVERAL_REPLICATIONS})
    assert status == 201, body
    deadline = time.monotonic() + 120
    while runs(site, f"r.id = {body['id']}")[0]["status"] != "running":
        assert time.monotonic() < deadline, "the run did not start"
        time.sleep(0.1)

    own_redis.stop()
    try:
        # the task cannot be revoked through the broker; the worker's progress checks stop the run
        status, _, cancelled, took = post(site, f"/api/runs/{body['id']}/cancel/", tokens["alice"], {})
        print(f"cancel with Redis down: {status} in {took:.2f} s")
        assert took < 2, f"cancel took {took:.1f} s with the broker down"
        assert status == 200, cancelled
        assert cancelled["status"] in ("running", "cancelled")
        (ended,) = wait_finished(site, [body["id"]], 120)
    finally:
        own_redis.start()
    assert ended["status"] == "cancelled", ended
