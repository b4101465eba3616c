"""The websocket stream /ws/runs/<id>/?after=N (docs/web.md, "Streaming protocol").

Embedded mode through Channels' WebsocketCommunicator (who may watch, replay after N, live
chunks from the embedded worker thread); then the live full-stack site with real websocket
clients: a client that watched from the start and one that joined mid-run end with exactly the
same segments, and a client that reconnects with ?after= misses nothing and gets nothing twice.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from datetime import timedelta
from typing import Any

import numpy as np
import psycopg
import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group
from django.test import Client
from django.utils import timezone

from gridweb.asgi import application
from gridweb.runs import execution, frames
from gridweb.runs.models import Run, RunChunk, Status
from gridweb.runs.services import create_run
from gridweb.sharing import Visibility
from tests.web.stream_messages import decode_message, decode_output, decode_received

# --- Embedded: WebsocketCommunicator -------------------------------------------------------------


def small_spec(replications: int = 2) -> dict:
    return {
        "name": "streamed",
        "platform": {"clusters": [{"name": "main", "processors": 32, "scheduler": {"name": "easy"}}]},
        "workload": {"streams": [{
            "kind": "synthetic", "name": "users", "target": "main", "arrival": {"target_load": 0.8},
            "size": {"kind": "uniform", "low": 1, "high": 16, "integer": True},
            "runtime": {"kind": "exponential", "mean": 600},
        }]},
        # 12,000 completions: more than 5,000 segments, so several segments chunks.
        "run": {"seed": 5, "replications": replications, "stop": {"completions": 12000}},
    }


def session_cookie(user) -> list[tuple[bytes, bytes]]:
    client = Client()
    client.force_login(user)
    return [(b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())]


async def watch(path: str, headers: list, until_status: bool = True, timeout: float = 60) -> dict[str, Any]:
    """Connect to ``path``; collect messages until the status message (or the close)."""
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await communicator.connect(timeout=10)
    assert connected  # refusals are sent after the handshake, with a close code
    messages: list[dict] = []
    close_code = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        output = await communicator.receive_output(timeout=timeout)
        if output["type"] == "websocket.close":
            close_code = output.get("code")
            break
        messages.append(decode_output(output))
        if until_status and messages[-1]["kind"] == "status":
            break
    await communicator.disconnect()
    return {"messages": messages, "close": close_code}


@pytest.fixture
def people(django_user_model):
    alice = django_user_model.objects.create_user("alice", password="pw-alice-123")
    bob = django_user_model.objects.create_user("bob", password="pw-bob-123")
    carol = django_user_model.objects.create_user("carol", password="pw-carol-123")
    lab = Group.objects.create(name="lab")
    alice.groups.add(lab)
    carol.groups.add(lab)
    return {"alice": alice, "bob": bob, "carol": carol, "lab": lab}


def finished_run(owner, **sharing) -> Run:
    run = create_run(owner, small_spec(), dispatch_now=False, **sharing)
    assert execution.execute_run(run.pk) == execution.DONE
    run.refresh_from_db()
    return run


@pytest.mark.django_db(transaction=True)
def test_a_private_run_answers_outsiders_exactly_as_a_missing_run(people):
    run = finished_run(people["alice"])

    as_bob = async_to_sync(watch)(f"/ws/runs/{run.pk}/", session_cookie(people["bob"]))
    anonymous = async_to_sync(watch)(f"/ws/runs/{run.pk}/", [])
    missing = async_to_sync(watch)(f"/ws/runs/{run.pk + 1000}/", session_cookie(people["alice"]))
    bad_after = async_to_sync(watch)(f"/ws/runs/{run.pk}/?after=x", session_cookie(people["alice"]))

    # the same answer for hidden and missing: a closed stream does not reveal that a run exists
    assert as_bob == anonymous == missing == {"messages": [], "close": 4404}
    assert bad_after == {"messages": [], "close": 4400}


@pytest.mark.django_db(transaction=True)
def test_group_members_may_watch_a_group_run_and_others_may_not(people):
    run = finished_run(people["alice"], visibility=Visibility.GROUP, group=people["lab"])

    as_carol = async_to_sync(watch)(f"/ws/runs/{run.pk}/", session_cookie(people["carol"]))
    as_bob = async_to_sync(watch)(f"/ws/runs/{run.pk}/", session_cookie(people["bob"]))

    assert [m["seq"] for m in as_carol["messages"][:-1]] == list(range(run.last_seq + 1))
    assert as_carol["messages"][-1] == {"kind": "status", "status": "done", "error": "",
                                        "last_seq": run.last_seq}
    assert as_bob["close"] == 4404 and as_bob["messages"] == []


@pytest.mark.django_db(transaction=True)
def test_public_runs_stream_to_visitors(people):
    run = finished_run(people["alice"], visibility=Visibility.PUBLIC)

    anonymous = async_to_sync(watch)(f"/ws/runs/{run.pk}/", [])

    assert anonymous["close"] is None and anonymous["messages"][-1]["status"] == "done"


@pytest.mark.django_db(transaction=True)
def test_replay_after_n_sends_exactly_the_chunks_after_n_as_stored(people):
    run = finished_run(people["alice"])
    stored = {c.seq: decode_message(json.dumps(c.payload), None if c.data is None else bytes(c.data))
              for c in RunChunk.objects.filter(run=run)}
    assert len(stored) >= 3

    watched = async_to_sync(watch)(f"/ws/runs/{run.pk}/?after=0", session_cookie(people["alice"]))

    chunks, status = watched["messages"][:-1], watched["messages"][-1]
    assert [c["seq"] for c in chunks] == [s for s in sorted(stored) if s > 0]
    assert all(c == stored[c["seq"]] for c in chunks)
    assert status["kind"] == "status" and status["status"] == "done"


@pytest.mark.django_db(transaction=True)
def test_a_crowd_replaying_a_finished_run_reads_its_chunk_list_once(people, monkeypatch):
    """Replays of a finished run come from one read of its chunk list per process, however many
    viewers replay it at once or later, and each viewer still gets exactly the stored chunks after
    its ``after``; a run that ends later is read anew (its list is not taken for a finished one's)."""
    from gridweb.runs import consumers

    run = finished_run(people["alice"])
    stored = sorted(RunChunk.objects.filter(run=run).values_list("seq", flat=True))
    reads = []
    original = consumers.chunk_headers

    def counted(run_id, after, limit=None):
        reads.append((run_id, after, limit))
        return original(run_id, after, limit)

    monkeypatch.setattr(consumers, "chunk_headers", counted)
    headers = session_cookie(people["alice"])

    async def crowd() -> list[dict]:
        return list(await asyncio.gather(*(watch(f"/ws/runs/{run.pk}/?after={after}", headers)
                                           for after in (-1, -1, 0, 2, -1))))

    watched = async_to_sync(crowd)() + [async_to_sync(watch)(f"/ws/runs/{run.pk}/", headers)]
    assert reads == [(run.pk, -1, None)]
    for after, seen in zip((-1, -1, 0, 2, -1, -1), watched):
        assert [m["seq"] for m in seen["messages"][:-1]] == [s for s in stored if s > after]
        assert seen["messages"][-1] == {"kind": "status", "status": "done", "error": "", "last_seq": stored[-1]}

    other = finished_run(people["alice"])
    again = async_to_sync(watch)(f"/ws/runs/{other.pk}/", headers)
    assert reads[1:] == [(other.pk, -1, None)]
    assert [m["seq"] for m in again["messages"][:-1]] == sorted(
        RunChunk.objects.filter(run=other).values_list("seq", flat=True))


@pytest.mark.django_db(transaction=True)
def test_segment_chunks_travel_as_binary_frames_of_typed_columns(people):
    run = finished_run(people["alice"])
    headers = session_cookie(people["alice"])

    async def first_frames() -> list:
        communicator = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/", headers=headers)
        assert (await communicator.connect(timeout=10))[0]
        outputs = []
        while True:
            output = await communicator.receive_output(timeout=30)
            outputs.append(output)
            if "text" in output and json.loads(output["text"])["kind"] == "status":
                break
        await communicator.disconnect()
        return outputs

    outputs = async_to_sync(first_frames)()
    binary = [o["bytes"] for o in outputs if o.get("bytes") is not None]
    assert binary and all(o.get("text") is None for o in outputs if o.get("bytes") is not None)
    header, arrays = frames.decode(binary[0])
    assert header["kind"] == "segments" and arrays["s.t0"].dtype == np.float64
    assert arrays["s.cluster"].dtype == np.int16 and arrays["s.kind"].dtype == np.int8
    streamed = sum(frames.decode(b)[0]["n"] for b in binary)
    assert streamed == run.segments_count


@pytest.mark.django_db(transaction=True)
def test_a_watcher_connected_before_the_run_starts_gets_every_chunk_live(people):
    run = create_run(people["alice"], small_spec(replications=3), dispatch_now=False)
    headers = session_cookie(people["alice"])

    async def watch_then_start() -> dict:
        communicator = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/", headers=headers)
        assert (await communicator.connect(timeout=10))[0]
        # Nothing stored yet: the consumer has nothing to replay and waits.
        assert await communicator.receive_nothing(timeout=0.3)
        execution.dispatch(run.pk)  # the embedded worker thread
        messages = []
        while not messages or messages[-1]["kind"] != "status":
            messages.append(decode_output(await communicator.receive_output(timeout=60)))
        await communicator.disconnect()
        return {"messages": messages}

    watched = async_to_sync(watch_then_start)()
    assert execution.embedded_worker().wait_idle(60)

    run.refresh_from_db()
    assert run.status == Status.DONE
    seqs = [m["seq"] for m in watched["messages"][:-1]]
    assert seqs == list(range(run.last_seq + 1))
    assert watched["messages"][-1]["status"] == "done"


@pytest.mark.django_db(transaction=True)
def test_a_watcher_whose_status_announcement_was_lost_still_learns_the_run_ended(people, settings):
    """The channel layer drops a group message to a channel over its capacity (a watcher behind a
    fast run's chunks): the run ends, but no announcement says so. The stream finds out by
    asking the database (GRIDWEB_STREAM_END_CHECK_SECONDS), sends what is left and the status once."""
    settings.GRIDWEB_STREAM_END_CHECK_SECONDS = 0.1
    run = create_run(people["alice"], small_spec(replications=1), dispatch_now=False)
    headers = session_cookie(people["alice"])

    async def watch_a_silent_end() -> list[dict]:
        communicator = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/", headers=headers)
        assert (await communicator.connect(timeout=10))[0]
        assert await communicator.receive_nothing(timeout=0.3)  # queued: nothing to send yet
        await sync_to_async(Run.objects.filter(pk=run.pk).update)(  # ended, and nobody announces it
            status=Status.CANCELLED, error="", finished_at=timezone.now())
        messages = [decode_output(await communicator.receive_output(timeout=5))]
        assert await communicator.receive_nothing(timeout=0.5)  # the status once, nothing after it
        await communicator.disconnect()
        return messages

    messages = async_to_sync(watch_a_silent_end)()
    assert [(m["kind"], m.get("status")) for m in messages] == [("status", "cancelled")]


@pytest.mark.django_db(transaction=True)
def test_a_run_that_restarts_tells_its_watchers_who_then_get_the_new_attempt_from_its_first_chunk(people):
    run = create_run(people["alice"], small_spec(replications=1), dispatch_now=False)
    headers = session_cookie(people["alice"])
    # attempt 1 streams three chunks on another machine, then that machine goes silent for good
    _, claimed = execution._claim(run.pk, "worker7@gone-machine:4242")
    progress = execution._Progress(claimed)
    for seq in range(3):
        progress({"seq": seq, "kind": "progress", "fraction": seq / 100, "sim_time": 10.0 * seq})
    Run.objects.filter(pk=run.pk).update(heartbeat=timezone.now() - execution.HEARTBEAT_STALE - timedelta(seconds=1))

    async def watch_through_the_restart() -> tuple[list, list]:
        communicator = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/", headers=headers)
        assert (await communicator.connect(timeout=10))[0]
        before = [decode_output(await communicator.receive_output(timeout=10)) for _ in range(3)]
        # a new delivery finds the execution gone and runs it again, as attempt 2
        outcome = await sync_to_async(execution.execute_run, thread_sensitive=False)(run.pk)
        assert outcome == execution.DONE
        after = []
        while not after or after[-1]["kind"] != "status":
            after.append(decode_output(await communicator.receive_output(timeout=60)))
        await communicator.disconnect()
        return before, after

    before, after = async_to_sync(watch_through_the_restart)()
    run.refresh_from_db()
    stored = {c.seq: decode_message(json.dumps(c.payload), None if c.data is None else bytes(c.data))
              for c in RunChunk.objects.filter(run=run)}

    assert [m["seq"] for m in before] == [0, 1, 2] and run.attempt == 2 and run.status == Status.DONE
    assert after[0] == {"kind": "restart", "attempt": 2}
    # then the new attempt, whole and as stored: nothing of the first one is kept or mixed in
    assert [m["seq"] for m in after[1:-1]] == list(range(run.last_seq + 1))
    assert all(m == stored[m["seq"]] for m in after[1:-1])
    assert after[-1]["status"] == "done"

    # A client that reconnects holding attempt 1's chunks is told too; one that says nothing of
    # its attempt, or holds this one's, just gets what follows
    stale = async_to_sync(watch)(f"/ws/runs/{run.pk}/?after=2&attempt=1", headers)["messages"]
    current = async_to_sync(watch)(f"/ws/runs/{run.pk}/?after=2&attempt=2", headers)["messages"]
    bad = async_to_sync(watch)(f"/ws/runs/{run.pk}/?after=2&attempt=x", headers)
    assert stale[0] == {"kind": "restart", "attempt": 2}
    assert [m["seq"] for m in stale[1:-1]] == list(range(run.last_seq + 1))
    assert [m["seq"] for m in current[:-1]] == list(range(3, run.last_seq + 1))
    assert bad == {"messages": [], "close": 4400}


# --- Full stack: real websocket clients against the live site ------------------------------------

LONG_SPEC = {
    "name": "long stream",
    "platform": {"clusters": [{"name": "main", "processors": 128, "scheduler": {"name": "conservative"}}]},
    "workload": {"streams": [{
        "kind": "synthetic", "name": "users", "target": "main", "arrival": {"target_load": 0.9},
        "size": {"kind": "uniform", "low": 1, "high": 64, "integer": True},
        "runtime": {"kind": "exponential", "mean": 600},
        "estimate": {"kind": "factor", "factor": {"kind": "uniform", "low": 1, "high": 5}},
    }]},
    # Replication 0's segments are streamed first; the other 12 replications (well under a
    # second each) keep the run going long after, so a client can join in the middle.
    "run": {"seed": 9, "replications": 13, "stop": {"completions": 15000}},
}

SETUP_PEOPLE = """
import json
from django.contrib.auth.models import User
from django.test import Client
sessions = {}
for name in ("streamer", "stranger"):
    user, _ = User.objects.get_or_create(username=name)
    client = Client()
    client.force_login(user)
    sessions[name] = client.cookies["sessionid"].value
print(json.dumps(sessions))
"""

CREATE_RUN = """
import json
from django.contrib.auth.models import User
from gridweb.runs.services import create_run
run = create_run(User.objects.get(username="streamer"), json.loads({spec!r}), dispatch_now=False)
print(json.dumps(run.pk))
"""

DISPATCH = """
import json
from gridweb.runs.execution import dispatch
dispatch({run_id})
print(json.dumps("dispatched"))
"""


class StreamClient(threading.Thread):
    """A real websocket client in a thread: collects messages until the status message."""

    def __init__(self, url: str, session: str, stop_after: int | None = None):
        super().__init__(daemon=True)
        self.url, self.session, self.stop_after = url, session, stop_after
        self.messages: list[dict] = []
        self.connected = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        from websockets.sync.client import connect

        try:
            with connect(self.url, additional_headers={"Cookie": f"sessionid={self.session}"},
                         max_size=None, open_timeout=20) as socket:
                self.connected.set()
                while True:
                    message = decode_received(socket.recv(timeout=120))
                    self.messages.append(message)
                    if message["kind"] == "status":
                        return
                    if self.stop_after is not None and len(self.messages) >= self.stop_after:
                        return  # hang up early, as a browser losing its network would
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc
            self.connected.set()

    def finish(self, timeout: float = 180) -> list[dict]:
        self.join(timeout)
        assert not self.is_alive(), f"{self.url}: no status message within {timeout} s"
        assert self.error is None, repr(self.error)
        return self.messages


def segments_of(messages: list[dict]) -> dict[str, list]:
    """Every segment of the segments chunks, column by column, in seq order."""
    columns: dict[str, list] = {}
    for message in sorted((m for m in messages if m["kind"] == "segments"), key=lambda m: m["seq"]):
        for name, values in message["segments"].items():
            columns.setdefault(name, []).extend(values)
    return columns


def stored_chunks(database_url: str, run_id: int) -> tuple[str, int | None]:
    with psycopg.connect(database_url) as conn:
        status = conn.execute("SELECT status FROM runs_run WHERE id = %s", [run_id]).fetchone()[0]
        last = conn.execute("SELECT max(seq) FROM runs_runchunk WHERE run_id = %s", [run_id]).fetchone()[0]
    return status, last


@pytest.mark.slow
def test_late_and_reconnecting_clients_end_with_the_segments_of_one_that_watched_from_the_start(
        full_stack_site):
    sessions = full_stack_site.python_json(SETUP_PEOPLE)
    run_id = full_stack_site.python_json(CREATE_RUN.format(spec=json.dumps(LONG_SPEC)))
    url = f"{full_stack_site.ws_url}/ws/runs/{run_id}/"
    database_url = full_stack_site.env["DATABASE_URL"]

    early = StreamClient(url, sessions["streamer"])
    dropping = StreamClient(url, sessions["streamer"], stop_after=2)
    for client in (early, dropping):
        client.start()
        assert client.connected.wait(30) and client.error is None
    full_stack_site.python_json(DISPATCH.format(run_id=run_id))

    # Join late: once the early client holds segments and a few chunks, while the run still goes on.
    deadline = time.monotonic() + 120
    while not any(m["kind"] == "segments" for m in list(early.messages)) or len(early.messages) < 3:
        assert time.monotonic() < deadline and early.is_alive(), "no segments streamed"
        time.sleep(0.02)
    late = StreamClient(url, sessions["streamer"])
    late.start()
    assert late.connected.wait(30) and late.error is None
    status_at_join, stored_at_join = stored_chunks(database_url, run_id)
    assert status_at_join == Status.RUNNING, "the late client did not join mid-run; make the run longer"
    assert stored_at_join is not None and stored_at_join >= 1

    # The dropped client reconnects from the last seq it holds.
    first_part = dropping.finish()
    reconnected = StreamClient(url + f"?after={first_part[-1]['seq']}", sessions["streamer"])
    reconnected.start()

    from_start, joined_late, second_part = early.finish(), late.finish(), reconnected.finish()

    status, last_seq = stored_chunks(database_url, run_id)
    assert status == Status.DONE
    assert last_seq > stored_at_join  # chunks were stored after the late client joined
    everything = list(range(last_seq + 1))
    for messages in (from_start, joined_late, first_part + second_part):
        assert [m["seq"] for m in messages if m["kind"] != "status"] == everything
        assert messages[-1] == {"kind": "status", "status": "done", "error": "", "last_seq": last_seq}
    assert len(first_part) == 2
    reference = segments_of(from_start)
    assert len(reference["t0"]) > 5000  # several segments chunks
    assert segments_of(joined_late) == reference
    assert segments_of(first_part + second_part) == reference
    # And the live copies are the stored ones.
    assert from_start[:-1] == joined_late[:-1]


@pytest.mark.slow
def test_real_clients_are_refused_with_close_codes(full_stack_site):
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    sessions = full_stack_site.python_json(SETUP_PEOPLE)
    run_id = full_stack_site.python_json(CREATE_RUN.format(spec=json.dumps(LONG_SPEC)))

    codes = {}
    for who, path in (("stranger", f"/ws/runs/{run_id}/"), ("streamer", f"/ws/runs/{run_id + 10_000}/")):
        with connect(f"{full_stack_site.ws_url}{path}",
                     additional_headers={"Cookie": f"sessionid={sessions[who]}"}) as socket:
            with pytest.raises(ConnectionClosed) as closed:
                socket.recv(timeout=20)
            codes[who] = closed.value.rcvd.code

    assert codes == {"stranger": 4404, "streamer": 4404}  # hidden answers as missing does


@pytest.mark.django_db(transaction=True)
def test_a_client_joining_past_the_row_limit_gets_summaries_and_one_below_it_the_rows(people, monkeypatch):
    """A page holds at most LIVE_ROWS_LIMIT streamed rows. One that joins a run with more stored
    rows than that gets summary frames only (counts, no rows: it draws from tiles at once); one
    that joins below the limit gets the rows."""
    from gridweb.runs import consumers

    run = finished_run(people["alice"])
    chunks = list(RunChunk.objects.filter(run=run, data__isnull=False).order_by("seq"))
    assert len(chunks) >= 2
    headers = session_cookie(people["alice"])

    def segments(watched):
        return [m for m in watched["messages"] if m["kind"] == "segments"]

    # the limit just below what is stored: summaries from the first chunk on, counting every row
    monkeypatch.setattr(consumers, "LIVE_ROWS_LIMIT", run.segments_count - 1)
    late = segments(async_to_sync(watch)(f"/ws/runs/{run.pk}/", headers))
    assert [m["seq"] for m in late] == [c.seq for c in chunks]
    assert all(m["n"] == 0 and m["segments"]["t0"] == [] for m in late)
    assert sum(m["omitted"] for m in late) == run.segments_count
    # a limit above what is stored: every row
    monkeypatch.setattr(consumers, "LIVE_ROWS_LIMIT", run.segments_count)
    full = segments(async_to_sync(watch)(f"/ws/runs/{run.pk}/", headers))
    assert "omitted" not in full[0] and sum(m["n"] for m in full) == run.segments_count
