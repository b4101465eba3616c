"""The websocket stream of a run: ``/ws/runs/<id>/?after=N`` (protocol in docs/web.md).

The consumer checks that the session's user may view the run, joins the channel-layer group
``run-<id>``, sends every stored chunk with ``seq > N`` (N = -1 when absent) in order, then
the chunks announced while it is connected, and ``{"kind": "status", ...}`` once the run has
ended (at once for a run that had already ended). Announcements carry only a ``seq``; the
chunks themselves are read from the database, each sent once: the consumer keeps the highest
``seq`` it sent and only ever sends higher ones, so replay and live chunks never overlap and
never leave a gap. A run whose worker died starts again as a new ``attempt`` whose chunks are
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
``attempt`` is not an integer.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from typing import Any
from urllib.parse import parse_qs

from channels.db import DatabaseSyncToAsync, database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db.models import BooleanField, Case, TextField, Value, When
from django.db.models.functions import Cast

from .execution import group_name, register_stream_loop
from .frames import summary_frame
from .models import FINISHED, Run, RunChunk

CLOSE_BAD_REQUEST, CLOSE_NOT_FOUND = 4400, 4404


def in_pool(read):
    """Run a replay's read-only query in the thread pool, not in the one thread Django's views,
    the session lookup and ``database_sync_to_async`` share: a crowd replaying a big run must not
    hold up new handshakes, pages and /healthz (each pool thread keeps its own connection)."""
    return DatabaseSyncToAsync(read, thread_sensitive=False)

BATCH = 64  # chunks read per query (their headers: the rows come from CHUNK_ROWS)
#: streamed segment rows a page holds at most (beyond: summary frames and tiles)
LIVE_ROWS_LIMIT = 100_000


class ChunkRows:
    """The rows (binary frames) of stored segments chunks, read from the database once per process
    and kept, least recently sent out first, up to ``limit`` bytes: a crowd watching or replaying
    one run costs one read of each chunk, not one per viewer. A chunk's rows never change once
    stored (a restarted run's new chunks are new rows), so its primary key and the time it was
    stored name them (the time too: a database may give a rolled-back key out again)."""

    def __init__(self, limit: int):
        self.limit, self.size = limit, 0
        self.kept: OrderedDict[tuple, bytes] = OrderedDict()
        self.reading: dict[tuple, asyncio.Future] = {}

    async def get(self, pk: int, stored) -> bytes:
        key = (pk, stored)
        data = self.kept.get(key)
        if data is not None:
            self.kept.move_to_end(key)
            return data
        pending = self.reading.get(key)
        if pending is not None:  # another viewer is reading it: wait for that read
            return await asyncio.shield(pending)
        pending = self.reading[key] = asyncio.ensure_future(_read_rows(pk))
        try:
            data = await pending
        finally:
            del self.reading[key]
        self.kept[key] = data
        self.size += len(data)
        while self.size > self.limit and len(self.kept) > 1:
            self.size -= len(self.kept.popitem(last=False)[1])
        return data


@in_pool
def _read_rows(pk: int) -> bytes:
    return bytes(RunChunk.objects.filter(pk=pk).values_list("data", flat=True).get())


#: this process's chunk rows (docs/deploy.md: GRIDWEB_CHUNK_CACHE_MB)
CHUNK_ROWS = ChunkRows(int(settings.GRIDWEB_CHUNK_CACHE_MB) << 20)


class RunStreamConsumer(AsyncWebsocketConsumer):
    run_id: int
    sent: int  # highest seq sent to this client
    attempt: int  # the run's attempt whose chunks this client gets
    status_sent: bool
    joined: bool = False

    async def connect(self) -> None:
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        self.status_sent = False
        await self.accept()
        query = _query(self.scope.get("query_string", b""))
        if query is None:
            await self.close(code=CLOSE_BAD_REQUEST)
            return
        after, attempt = query
        access, self.attempt = await self._access()
        if access is not None:
            await self.close(code=access)
            return
        if attempt is not None:  # a reconnecting client says whose chunks it holds
            self.attempt = attempt
        self.sent = after
        # A page that joins once more rows are stored than it may hold would take them in only to
        # switch to tiles at the limit: it gets the summaries at once and draws from tiles at once.
        self.summaries_only = await self._stored_rows() > LIVE_ROWS_LIMIT
        register_stream_loop(asyncio.get_running_loop())
        # Join before reading: a chunk stored meanwhile is then announced to us, never missed.
        await self.channel_layer.group_add(group_name(self.run_id), self.channel_name)
        self.joined = True
        await self._send_new_chunks()
        ended = await self._ended()
        if ended is not None:
            await self._send_status(*ended)

    async def disconnect(self, code: int) -> None:
        if self.joined:
            await self.channel_layer.group_discard(group_name(self.run_id), self.channel_name)
            self.joined = False

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Clients have nothing to say: reconnecting with ``?after=`` is how they ask for more."""

    # Channel-layer messages (see gridweb.runs.execution.announce)
    async def run_chunk(self, event: dict[str, Any]) -> None:
        await self._send_new_chunks()

    async def run_restart(self, event: dict[str, Any]) -> None:
        await self._send_new_chunks()

    async def run_status(self, event: dict[str, Any]) -> None:
        await self._send_new_chunks()
        await self._send_status(event.get("status", ""), event.get("error", ""))

    # Helpers
    async def _send_new_chunks(self) -> None:
        while True:
            rows = await self._chunks_after(self.sent)
            # read after the chunks: while it is unchanged they are this attempt's (a new attempt
            # deletes the old chunks and takes the run in one transaction)
            attempt = await self._attempt()
            if attempt is not None and attempt != self.attempt:
                restarted = self.sent >= 0  # (a client that holds nothing just takes the new attempt)
                self.attempt, self.sent = attempt, -1
                self.summaries_only = False  # the new attempt's rows start from none
                if restarted:
                    await self.send(text_data=json.dumps({"kind": "restart", "attempt": attempt}))
                continue
            if not rows:
                return
            for pk, stored, seq, text, binary, rows_before, count in rows:
                if seq <= self.sent:
                    continue
                if not binary:
                    await self.send(text_data=text)
                elif not self.summaries_only and rows_before + count <= LIVE_ROWS_LIMIT:
                    await self.send(bytes_data=await CHUNK_ROWS.get(pk, stored))
                else:
                    await self.send(bytes_data=summary_frame(json.loads(text)))
                self.sent = seq
            # A long replay gives way between batches to the other viewers and new handshakes.
            await asyncio.sleep(0)

    async def _send_status(self, status: str, error: str) -> None:
        if self.status_sent:
            return
        self.status_sent = True
        await self.send(text_data=json.dumps({"kind": "status", "status": status, "error": error,
                                              "last_seq": self.sent}))

    @database_sync_to_async  # (not in_pool: a handshake never waits behind a crowd's replay)
    def _access(self) -> tuple[int | None, int]:
        """(close code or None, the run's attempt): hidden answers as missing does."""
        run = Run.objects.filter(pk=self.run_id).first()
        if run is None or not run.can_view(self.scope.get("user")):
            return CLOSE_NOT_FOUND, 0
        return None, run.attempt

    @in_pool
    def _stored_rows(self) -> int:
        """Segment rows the run's stored chunks hold so far (this attempt's: a new one deletes them)."""
        last = (RunChunk.objects.filter(run_id=self.run_id, data__isnull=False).order_by("-seq")
                .values_list("rows_before", "rows").first())
        return sum(last) if last else 0

    @in_pool
    def _attempt(self) -> int | None:
        return Run.objects.filter(pk=self.run_id).values_list("attempt", flat=True).first()

    @in_pool
    def _chunks_after(self, after: int) -> list[tuple[int, Any, int, str, bool, int, int]]:
        """(pk, when stored, seq, payload text, binary?, rows before, rows) of the next chunks: their
        rows' bytes come from CHUNK_ROWS, once per process however many viewers send them."""
        return list(RunChunk.objects.filter(run_id=self.run_id, seq__gt=after).order_by("seq")
                    .annotate(text=Cast("payload", TextField()),
                              binary=Case(When(data__isnull=False, then=Value(True)), default=Value(False),
                                          output_field=BooleanField()))
                    .values_list("pk", "created", "seq", "text", "binary", "rows_before", "rows")[:BATCH])

    @database_sync_to_async
    def _ended(self) -> tuple[str, str] | None:
        run = Run.objects.filter(pk=self.run_id).values("status", "error").first()
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
