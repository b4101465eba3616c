"""The full stack while its services restart under a running run (issue 14's probes, as tests):
Redis (broker, channel layer and cache at once) and the ASGI server. A watcher that reconnects
as the page does (``?after=<last seq>&attempt=<attempt>``) must end with exactly the stored
chunks and the run's final status; the run itself must finish.

The site here has a Redis server of its own (a free port, nothing kept on disk, as this machine's),
so restarting it disturbs no other test.
"""
from __future__ import annotations

import json
import threading
import time

import psycopg
import pytest

from tests.conftest import full_stack
from tests.web.stream_messages import decode_received
from tests.web.test_run_stream import CREATE_RUN, DISPATCH, LONG_SPEC, SETUP_PEOPLE

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(test_database_url, own_redis, tmp_path_factory):
    with full_stack(test_database_url, own_redis.url, tmp_path_factory, name="gridweb_restarts") as site:
        yield site


class ReconnectingWatcher(threading.Thread):
    """Watches a run's stream as the page does: when the connection drops it connects again with
    ?after=<the last seq it holds>&attempt=<its attempt>, until it gets the status message."""

    def __init__(self, url: str, session: str):
        super().__init__(daemon=True)
        self.url, self.session = url, session
        self.messages: list[dict] = []
        self.attempt: int | None = None
        self.connections = 0
        self.connected = threading.Event()
        self.error: BaseException | None = None

    def last_seq(self) -> int:
        seqs = [m["seq"] for m in self.messages if "seq" in m]
        return seqs[-1] if seqs else -1

    def run(self) -> None:
        from websockets.sync.client import connect

        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            query = f"?after={self.last_seq()}" + (f"&attempt={self.attempt}" if self.attempt else "")
            try:
                with connect(self.url + query, additional_headers={"Cookie": f"sessionid={self.session}"},
                             max_size=None, open_timeout=10) as socket:
                    self.connections += 1
                    self.connected.set()
                    while True:
                        message = decode_received(socket.recv(timeout=30))
                        if message["kind"] == "restart":  # the page starts again from the new attempt
                            self.messages = [m for m in self.messages if "seq" not in m]
                            self.attempt = message["attempt"]
                            continue
                        self.messages.append(message)
                        if message["kind"] == "status":
                            return
            except Exception:  # noqa: BLE001 - a dropped or refused connection: try again, as the page does
                time.sleep(0.5)
        self.error = TimeoutError("no status message within 300 s")

    def finish(self, timeout: float = 320) -> list[dict]:
        self.join(timeout)
        assert not self.is_alive() and self.error is None, repr(self.error)
        return self.messages


def stored(database_url: str, run_id: int) -> dict:
    with psycopg.connect(database_url) as conn:
        status, attempt, last_seq = conn.execute(
            "SELECT status, attempt, last_seq FROM runs_run WHERE id = %s", [run_id]).fetchone()
        seqs = [r[0] for r in conn.execute("SELECT seq FROM runs_runchunk WHERE run_id = %s ORDER BY seq",
                                           [run_id])]
    return {"status": status, "attempt": attempt, "last_seq": last_seq, "seqs": seqs}


def watch_a_run_through(site, restart) -> tuple[list[dict], dict, int]:
    """Start a long run with a watcher on it; once chunks stream, ``restart()``; wait for the end.
    Returns the watcher's messages, the run as stored, and the last seq stored at the restart."""
    sessions = site.python_json(SETUP_PEOPLE)
    run_id = site.python_json(CREATE_RUN.format(spec=json.dumps(LONG_SPEC)))
    database_url = site.env["DATABASE_URL"]
    watcher = ReconnectingWatcher(f"{site.ws_url}/ws/runs/{run_id}/", sessions["streamer"])
    watcher.start()
    assert watcher.connected.wait(30)
    site.python_json(DISPATCH.format(run_id=run_id))
    deadline = time.monotonic() + 120
    while len(stored(database_url, run_id)["seqs"]) < 3:
        assert time.monotonic() < deadline, "the run streamed nothing"
        time.sleep(0.1)
    assert stored(database_url, run_id)["status"] == "running"
    at_restart = stored(database_url, run_id)["seqs"][-1]
    restart()
    messages = watcher.finish()
    deadline = time.monotonic() + 240
    while (state := stored(database_url, run_id))["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, f"the run did not end: {state}"
        time.sleep(0.5)
    assert watcher.connections >= 2  # it did lose its connection and came back
    return messages, state, at_restart


def check_exact(messages: list[dict], state: dict) -> None:
    """The watcher holds every stored chunk once, in order, and the run's final status."""
    assert state["status"] == "done", state
    assert state["seqs"] == list(range(state["last_seq"] + 1))
    assert [m["seq"] for m in messages[:-1]] == state["seqs"]
    assert messages[-1] == {"kind": "status", "status": "done", "error": "", "last_seq": state["last_seq"]}


def test_a_redis_restart_under_a_running_run_loses_no_chunk_and_no_run(site, own_redis):
    def restart_redis():
        own_redis.stop()
        time.sleep(1.0)
        own_redis.start()

    messages, state, at_restart = watch_a_run_through(site, restart_redis)
    check_exact(messages, state)
    assert state["last_seq"] > at_restart  # the run went on streaming through the new Redis


def test_a_server_restart_under_a_running_run_loses_no_chunk(site):
    def restart_server():
        server = site.processes["server"]
        server.kill()  # as a crash: the watchers' connections drop
        server.wait(timeout=20)
        site.start("server", site.argv["server"])

    messages, state, at_restart = watch_a_run_through(site, restart_server)
    check_exact(messages, state)
    assert state["last_seq"] > at_restart
