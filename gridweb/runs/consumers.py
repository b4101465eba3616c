"""The websocket stream of a run: ``/ws/runs/<id>/?after=N`` (protocol in docs/web.md).

The consumer checks that the session's user may view the run, joins the channel-layer group
``run-<id>``, sends every stored chunk with ``seq > N`` (N = -1 when absent) in order, then
the chunks announced while it is connected, and ``{"kind": "status", ...}`` once the run has
ended (announced, or found by the consumer's own check every ``GRIDWEB_STREAM_END_CHECK_SECONDS``:
the channel layer may drop the announcement). A run that had already ended is replayed from
this process's copy of its chunk list (read once however many replay it: a finished run's
chunks never change) and its status at once, without joining the group. Announcements carry
only a ``seq``; the chunks themselves are read from the database, each sent once: the consumer
keeps the highest ``seq`` it sent and only ever sends higher ones, so replay and live chunks
never overlap and never leave a gap. A run whose worker died starts again as a new ``attempt`` whose chunks are
numbered from 0 again (and cut at other moments: chunks follow the wall clock): the consumer
then sends ``{"kind": "restart", "attempt": n}`` and the new attempt's chunks from the first.
Chunks go out as stored (no decoding and re-encoding): ``segments`` chunks as binary frames
(gridweb.runs.frames), the others as JSON text. A page holds at most ``LIVE_ROWS_LIMIT`` streamed
rows: a segments chunk whose rows would take the run past it goes
out as a summary frame without rows, and the page draws from level-of-detail tiles instead
(gridweb.runs.gantt_tiles); a client that joins when more rows than that are stored gets summary
frames only (it would take rows in only to switch to tiles at the limit).

Refusals are sent after accepting the handshake, so that browsers see the close code:
4404 when the run does not exist *or* the user may not view it (the same answer, as the API's
404: a closed stream does not tell whether a hidden run exists), 4400 when ``after`` or
``attempt`` is not an integer, 4403 when the session was opened with an invite's one-time password
that is not yet replaced (gridweb/accounts/models.py).
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs

from channels.db import DatabaseSyncToAsync, database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db.models import BooleanField, Case, TextField, Value, When
from django.db.models.functions import Cast

from gridweb.accounts.models import must_change_password

from .execution import group_name, register_stream_loop
from .frames import summary_frame
from .models import FINISHED, Run, RunChunk

CLOSE_BAD_REQUEST, CLOSE_NOT_FOUND = 4400, 4404
CLOSE_CHANGE_PASSWORD = 4403  # the session must choose its own password first


def in_pool(read):
    """Run a replay's read-only query in the thread pool, not in the one thread Django's views,
    the session lookup and ``database_sync_to_async`` share: a crowd replaying a big run must not
    hold up new handshakes, pages and /healthz (each pool thread keeps its own connection)."""
    return DatabaseSyncToAsync(read, thread_sensitive=False)

BATCH = 64  # chunks read per query (their headers: the rows come from CHUNK_ROWS)
#: streamed segment rows a page holds at most (beyond: summary frames and tiles)
LIVE_ROWS_LIMIT = 100_000


class SharedReads:
    """Values read from the database once per process and kept, least recently used out first,
    up to ``limit`` bytes (``size`` of each): a crowd watching or replaying one run costs one read,
    not one per viewer; viewers asking while it is read wait for that read. Only for values that
    never change under their key."""

    def __init__(self, limit: int, read: Callable[..., Awaitable[Any]], size: Callable[[Any], int] = len):
        self.limit, self.size, self.read, self.size_of = limit, 0, read, size
        self.kept: OrderedDict[tuple, Any] = OrderedDict()
        self.reading: dict[tuple, asyncio.Future] = {}

    async def get(self, *key) -> Any:
        value = self.kept.get(key)
        if value is not None:
            self.kept.move_to_end(key)
            return value
        pending = self.reading.get(key)
        if pending is not None:  # another viewer is reading it: wait for that read
            return await asyncio.shield(pending)
        pending = self.reading[key] = asyncio.ensure_future(self.read(*key))
        try:
            value = await pending
        finally:
            del self.reading[key]
        self.kept[key] = value
        self.size += self.size_of(value)
        while self.size > self.limit and len(self.kept) > 1:
            self.size -= self.size_of(self.kept.popitem(last=False)[1])
        return value


@in_pool
def _read_rows(pk: int, stored) -> bytes:
    return bytes(RunChunk.objects.filter(pk=pk).values_list("data", flat=True).get())


#: the rows (binary frames) of stored segments chunks (docs/deploy.md: GRIDWEB_CHUNK_CACHE_MB). A
#: chunk's rows never change once stored (a restarted run's new chunks are new rows), so its primary
#: key and the time it was stored name them (the time too: a database may give a rolled-back key
#: out again).
CHUNK_ROWS = SharedReads(int(settings.GRIDWEB_CHUNK_CACHE_MB) << 20, _read_rows)


def chunk_headers(run_id: int, after: int, limit: int | None = None) -> list[tuple[int, Any, int, str, bool, int, int]]:
    """(pk, when stored, seq, payload text, binary?, rows before, rows) of a run's chunks after
    ``after``, in seq order: their rows' bytes come from CHUNK_ROWS, once per process however many
    viewers send them."""
    query = (RunChunk.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")
             .annotate(text=Cast("payload", TextField()),
                       binary=Case(When(data__isnull=False, then=Value(True)), default=Value(False),
                                   output_field=BooleanField()))
             .values_list("pk", "created", "seq", "text", "binary", "rows_before", "rows"))
    return list(query if limit is None else query[:limit])


class FinishedStream:
    """A finished run's chunk headers, and their summary frames once asked for."""

    def __init__(self, headers: list[tuple]):
        self.headers = headers
        last = next((h for h in reversed(headers) if h[4]), None)
        self.rows = last[5] + last[6] if last else 0  # segment rows stored
        self.size = 2 * sum(len(h[3]) for h in headers)  # (its summary frames, once made, are about as big)
        self.summaries: dict[int, bytes] = {}

    def summary(self, k: int) -> bytes:
        frame = self.summaries.get(k)
        if frame is None:
            frame = self.summaries[k] = summary_frame(json.loads(self.headers[k][3]))
        return frame


@in_pool
def _read_finished(run_id: int, attempt: int, finished_at) -> FinishedStream:
    return FinishedStream(chunk_headers(run_id, -1))


#: the chunk lists of finished runs: a crowd replaying a big run costs one query of its chunks, not
#: two per viewer. A finished run's chunks never change (a run starts again only while it is
#: running, as a new attempt), so its id, attempt and end name them. (Headers are a fraction of
#: the rows' size: a quarter of CHUNK_ROWS' bytes.)
FINISHED_STREAMS = SharedReads(int(settings.GRIDWEB_CHUNK_CACHE_MB) << 18, _read_finished, lambda s: s.size)


class RunStreamConsumer(AsyncWebsocketConsumer):
    run_id: int
    sent: int  # highest seq sent to this client
    attempt: int  # the run's attempt whose chunks this client gets
    status_sent: bool
    joined: bool = False
    end_check: asyncio.Task | None = None

    async def connect(self) -> None:
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        self.status_sent = False
        self.sending = asyncio.Lock()  # the end check sends beside the group's messages
        await self.accept()
        query = _query(self.scope.get("query_string", b""))
        if query is None:
            await self.close(code=CLOSE_BAD_REQUEST)
            return
        after, attempt = query
        access, state = await self._access()
        if access is not None:
            await self.close(code=access)
            return
        self.attempt = state["attempt"] if attempt is None else attempt  # (a reconnecting client says whose chunks it holds)
        self.sent = after
        if state["status"] in FINISHED:
            # Nothing more will be stored or announced: the process's copy of the chunk list, no group.
            await self._send_finished(state)
            return
        # A page that joins once more rows are stored than it may hold would take them in only to
        # switch to tiles at the limit: it gets the summaries at once and draws from tiles at once.
        self.summaries_only = await self._stored_rows() > LIVE_ROWS_LIMIT
        register_stream_loop(asyncio.get_running_loop())
        # Join before reading: a chunk stored meanwhile is then announced to us, never missed.
        await self.channel_layer.group_add(group_name(self.run_id), self.channel_name)
        self.joined = True
        async with self.sending:
            await self._send_new_chunks()
            ended = await self._ended()
            if ended is not None:
                await self._send_status(*ended)
                return
        self.end_check = asyncio.create_task(self._check_for_end())

    async def _check_for_end(self) -> None:
        """Now and then, ask the database whether the run has ended. The status announcement
        can be lost -- the channel layer drops a group message to a channel that is over its
        capacity, as a watcher lagging behind a fast run's chunks is -- and nothing follows it
        that would show the gap: without this the page would wait for the end forever."""
        while not self.status_sent:
            await asyncio.sleep(settings.GRIDWEB_STREAM_END_CHECK_SECONDS)
            ended = await self._ended_now()
            if ended is not None:
                async with self.sending:
                    await self._send_new_chunks()
                    await self._send_status(*ended)

    async def _send_finished(self, state: dict[str, Any]) -> None:
        """Replay a finished run from this process's copy of its chunk list, then its status."""
        stream = await FINISHED_STREAMS.get(self.run_id, state["attempt"], state["finished_at"])
        if state["attempt"] != self.attempt:  # the client holds an earlier attempt's chunks
            await self._restart(state["attempt"])
        self.summaries_only = stream.rows > LIVE_ROWS_LIMIT
        await self._send_chunks(stream.headers, stream)
        await self._send_status(state["status"], state["error"])

    async def disconnect(self, code: int) -> None:
        if self.end_check is not None:
            self.end_check.cancel()
            self.end_check = None
        if self.joined:
            await self.channel_layer.group_discard(group_name(self.run_id), self.channel_name)
            self.joined = False

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Clients have nothing to say: reconnecting with ``?after=`` is how they ask for more."""

    # Channel-layer messages (see gridweb.runs.execution.announce)
    async def run_chunk(self, event: dict[str, Any]) -> None:
        async with self.sending:
            await self._send_new_chunks()

    async def run_restart(self, event: dict[str, Any]) -> None:
        async with self.sending:
            await self._send_new_chunks()

    async def run_status(self, event: dict[str, Any]) -> None:
        async with self.sending:
            await self._send_new_chunks()
            await self._send_status(event.get("status", ""), event.get("error", ""))

    # Helpers
    async def _send_new_chunks(self) -> None:
        while True:
            rows, attempt = await self._chunks_after(self.sent)
            if attempt is not None and attempt != self.attempt:
                await self._restart(attempt)
                continue
            if not rows:
                return
            await self._send_chunks(rows)

    async def _restart(self, attempt: int) -> None:
        """The run started again (its worker died): from now on this client gets the new attempt's chunks."""
        restarted = self.sent >= 0  # (a client that holds nothing just takes the new attempt)
        self.attempt, self.sent = attempt, -1
        self.summaries_only = False  # the new attempt's rows start from none
        if restarted:
            await self.send(text_data=json.dumps({"kind": "restart", "attempt": attempt}))

    async def _send_chunks(self, rows: list[tuple], finished: FinishedStream | None = None) -> None:
        """Send the chunks of ``rows`` (headers, in seq order) after the highest seq sent."""
        for k, (pk, stored, seq, text, binary, rows_before, count) in enumerate(rows):
            if seq <= self.sent:
                continue
            if not binary:
                await self.send(text_data=text)
            elif not self.summaries_only and rows_before + count <= LIVE_ROWS_LIMIT:
                await self.send(bytes_data=await CHUNK_ROWS.get(pk, stored))
            else:
                await self.send(bytes_data=finished.summary(k) if finished else summary_frame(json.loads(text)))
            self.sent = seq
            if k % BATCH == BATCH - 1:
                # A long replay gives way to the other viewers and new handshakes.
                await asyncio.sleep(0)
        await asyncio.sleep(0)

    async def _send_status(self, status: str, error: str) -> None:
        if self.status_sent:
            return
        self.status_sent = True
        await self.send(text_data=json.dumps({"kind": "status", "status": status, "error": error,
                                              "last_seq": self.sent}))

    @database_sync_to_async  # (not in_pool: a handshake never waits behind a crowd's replay)
    def _access(self) -> tuple[int | None, dict[str, Any]]:
        """(close code or None, the run's attempt, status, error and end): hidden answers as missing does."""
        user = self.scope.get("user")
        if user is not None and must_change_password(user):  # a one-time password's session: the password page only
            return CLOSE_CHANGE_PASSWORD, {}
        run = Run.objects.filter(pk=self.run_id).first()
        if run is None or not run.can_view(user):
            return CLOSE_NOT_FOUND, {}
        return None, {"attempt": run.attempt, "status": run.status, "error": run.error,
                      "finished_at": run.finished_at}

    @in_pool
    def _stored_rows(self) -> int:
        """Segment rows the run's stored chunks hold so far (this attempt's: a new one deletes them)."""
        last = (RunChunk.objects.filter(run_id=self.run_id, data__isnull=False).order_by("-seq")
                .values_list("rows_before", "rows").first())
        return sum(last) if last else 0

    @in_pool
    def _chunks_after(self, after: int) -> tuple[list[tuple[int, Any, int, str, bool, int, int]], int | None]:
        """The next chunks' headers (``chunk_headers``) and then the run's attempt: while that is
        unchanged they are this attempt's (a new attempt deletes the old chunks and takes the run
        in one transaction)."""
        rows = chunk_headers(self.run_id, after, BATCH)
        return rows, Run.objects.filter(pk=self.run_id).values_list("attempt", flat=True).first()

    @database_sync_to_async
    def _ended(self) -> tuple[str, str] | None:
        return _end_of(self.run_id)

    @in_pool  # (every open stream asks now and then: not on the thread handshakes and pages wait for)
    def _ended_now(self) -> tuple[str, str] | None:
        return _end_of(self.run_id)


def _end_of(run_id: int) -> tuple[str, str] | None:
    """(status, error) of the run if it has ended, else None."""
    run = Run.objects.filter(pk=run_id).values("status", "error").first()
    if run is None or run["status"] not in FINISHED:
        return None
    return run["status"], run["error"]


def _query(query_string: bytes) -> tuple[int, int | None] | None:
    """(after, attempt) from the query string: ``after`` the highest seq the client holds (-1
    when absent), ``attempt`` the run's attempt those chunks are from (None when absent); None
    when either is not an integer."""
    query = parse_qs(query_string.decode("latin-1"))
    out: list[int | None] = []
    for name, default in (("after", -1), ("attempt", None)):
        values = query.get(name)
        if not values:
            out.append(default)
            continue
        try:
            out.append(max(int(values[-1]), -1))
        except ValueError:
            return None
    return out[0], out[1]
