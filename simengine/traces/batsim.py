"""Reader for Batsim workload files (JSON), the input format of Batsim and of the tools built on it
(docs/traces.md, "Batsim workloads").

A workload is ``{"nb_res": N, "jobs": [{"id", "subtime", "walltime", "res", "profile"}, ...],
"profiles": {name: {"type": "DelayProfile", "delay": seconds}, ...}}``. A job's run time is its
profile's: a delay profile's ``delay``, or a sequential composition's ``repeat`` (default 1) times
the sum of its ``seq`` profiles' run times (compositions nest). Batsim v5 names the types
``DelayProfile`` and ``SequentialCompositionProfile``, v4 and earlier ``delay`` and ``composed``;
both are read. Only these say how long a job runs on its own (the others describe computation and
communication that Batsim times on its platform model), so a job of another profile type is
refused with its index, profile and type named. ``walltime`` is the requested time
(absent or -1: unknown); ``res`` the processors. Numeric job ids are kept; others are numbered
from 1 in file order, and ``nb_res`` becomes the trace's ``MaxProcs``.

The file is parsed as a stream: jobs and profiles are decoded from a buffer of about 64 kB (or one
of them, if longer) with ``json.JSONDecoder``, a run of whole ones in one call, each counted against
the caps as it comes, and the jobs kept become numbers a few thousand at a time. Memory stays
bounded by the caps (:class:`~simengine.traces.swf.ReadCaps`: bytes, jobs and profiles, one value's
length) whatever the file, where ``json.loads`` of a small gzip of ``[{},{},...]`` would take
gigabytes.
"""
from __future__ import annotations

import codecs
import hashlib
import json
import math
import os
import re
import zlib
from array import array
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from ..errors import TraceError
from ..workload import JobTable
from .swf import MAX_PROCESSORS, MAX_SKIPPED_LINES, NO_CAPS, ReadCaps, Trace, _Columns, _open_binary

SHAPE = "a Batsim workload is an object with 'jobs' (a list) and 'profiles' (an object)"
_CHUNK = 1 << 16
_BATCH = 4096  # jobs checked and turned into arrays at once
_WINDOW = 1 << 16  # text decoded at once, items of an array or object (Source.batch)
_NOT_BLANK = re.compile(r"[^ \t\n\r]")
_PUNCTUATION = re.compile(r"[ \t\n\r]*([,:\]}])[ \t\n\r]*")
_DECODER = json.JSONDecoder()
# Profiles in bulk: an object decodes to a tuple of its (key, value) pairs, so duplicate keys (the last
# counts, as with json.loads) count against the cap too, and no JSON value is taken for an object.
_PAIRS = json.JSONDecoder(object_pairs_hook=tuple)
# A decoding error this close to the end of the buffer may only mean the value goes on in the next chunk.
_TAIL = 16


class _Source:
    """The decompressed text of a JSON file, read a chunk at a time and decoded a value at a time."""

    def __init__(self, name: str, fh: IO[bytes], caps: ReadCaps, bulk: bool = True):
        self.name, self.fh, self.caps = name, fh, caps
        self.bulk = bulk  # items may be decoded many at once (batch)
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.buf, self.pos, self.line = "", 0, 1  # line: the line of buf[0]
        self.read = 0  # bytes, decompressed
        self.eof = False

    def error(self, field: str | None, reason: str, at: int | None = None) -> TraceError:
        at = self.pos if at is None else at
        return TraceError(self.name, self.line + self.buf.count("\n", 0, at), field, reason)

    def more(self, size: int = _CHUNK) -> bool:
        """Append about ``size`` more bytes to the buffer, dropping what was consumed; False at the end."""
        if self.eof:
            return False
        try:
            chunk = self.fh.read(size)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceError(self.name, None, None, f"cannot read: {exc}") from None
        self.read += len(chunk)
        if self.caps.bytes is not None and self.read > self.caps.bytes:
            raise TraceError(self.name, None, None, f"more than {self.caps.bytes:,} bytes")
        try:
            text = self.decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as exc:
            raise TraceError(self.name, None, None, f"not a JSON document: not UTF-8 ({exc.reason})") from None
        self.eof = not chunk
        self.line += self.buf.count("\n", 0, self.pos)
        self.buf, self.pos = self.buf[self.pos:] + text, 0
        return True

    def peek(self) -> str:
        """The next character that is not white space (left unread); "" at the end of the file."""
        while True:
            found = _NOT_BLANK.search(self.buf, self.pos)
            if found:
                self.pos = found.start()
                return self.buf[self.pos]
            self.pos = len(self.buf)
            if not self.more():
                return ""

    def punctuation(self, allowed: str, field: str | None) -> str:
        """Read one of the characters ``allowed`` (``","``, ``"]"`` ...) and return it."""
        found = _PUNCTUATION.match(self.buf, self.pos)
        if found and found.group(1) in allowed:  # (the common case, at once)
            self.pos = found.end()
            return found.group(1)
        char = self.peek()
        if not char or char not in allowed:
            expected = " or ".join(repr(c) for c in allowed)
            raise self.error(field, f"not a JSON document: expected {expected}, found "
                                    f"{repr(char) if char else 'the end of the file'}")
        self.pos += 1
        return char

    def value(self, field: str | None) -> Any:
        """Decode the next value; one longer than ``caps.element_bytes`` is refused."""
        bound = self.caps.element_bytes
        try:  # the common case: a whole value in the buffer, after no white space
            value, end = _DECODER.scan_once(self.buf, self.pos)
            if end < len(self.buf) and (bound is None or end - self.pos <= bound):
                self.pos = end
                return value
        except (StopIteration, ValueError, RecursionError):  # (no value here yet, or a bad one: see below)
            pass
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                cut_short = exc.msg.startswith("Unterminated string") or exc.pos >= len(self.buf) - _TAIL
                if self.eof or not cut_short:
                    raise self.error(field, f"not a JSON document: {exc.msg}", exc.pos) from None
            except RecursionError:
                raise self.error(field, "not a JSON document: nested too deeply") from None
            except ValueError as exc:  # (a number of more than 4,300 digits)
                raise self.error(field, f"not a JSON document: {exc}") from None
            else:
                if end < len(self.buf) or self.eof:  # (a number at the buffer's end may go on)
                    if bound is not None and end - self.pos > bound:
                        raise self.error(field, f"longer than {bound:,} characters")
                    self.pos = end
                    return value
            if bound is not None and len(self.buf) - self.pos > bound:
                raise self.error(field, f"longer than {bound:,} characters")
            # Double what is buffered: a long value is decoded a few times, not once per chunk.
            self.more(max(_CHUNK, len(self.buf) - self.pos))

    def batch(self, brackets: str, start: str) -> Any:
        """Many whole items of the array (``brackets`` "[]") or object ("{}") being read, and the comma
        after the last, decoded in one call when the buffer holds them (jobs are many and small:
        decoding them one at a time costs more than reading them); None when it cannot tell where
        items end. ``start`` is how an item starts (``{`` a job, ``"`` a profile)."""
        window = _WINDOW if self.caps.element_bytes is None else min(_WINDOW, self.caps.element_bytes)
        if len(self.buf) - self.pos < window:
            self.more(window)
        end = min(len(self.buf), self.pos + window)
        for _ in range(4):
            cut = self.buf.rfind("},", self.pos, end)
            if cut < 0:
                return None
            after = _NOT_BLANK.search(self.buf, cut + 2)
            if after and after.group() == start:
                break
            end = cut + 1  # (a "}," inside an item, or at the buffer's end: an earlier one)
        else:
            return None
        decoder = _DECODER if brackets == "[]" else _PAIRS
        try:  # (a "}," that is not between items leaves the text unbalanced: an error, never other items)
            items = decoder.decode(brackets[0] + self.buf[self.pos:cut + 1] + brackets[1])
        except (ValueError, RecursionError):
            return None
        self.pos = cut + 2
        return items

    def key(self, field: str | None) -> str:
        """An object's next key, and its colon."""
        if self.peek() != '"':
            raise self.error(field, "not a JSON document: expected a property name in double quotes")
        name = self.value(field)
        self.punctuation(":", field)
        return name


def _items(source: _Source, field: str, brackets: str, read_one: Callable[[int], None],
           read_many: Callable[[int], int] | None = None) -> None:
    """The items of an array (``brackets`` "[]") or object ("{}"): ``read_one(i)`` reads the i-th,
    ``read_many(i)`` reads as many as it can from the i-th on (and the comma after them) and says how many."""
    opening, closing = brackets
    if source.peek() != opening:
        raise TraceError(source.name, None, None, SHAPE)
    source.pos += 1
    if source.peek() == closing:
        source.pos += 1
        return
    i = wait = 0  # wait: items to read one by one before the next batch (after one failed)
    while True:
        if read_many is not None and wait == 0:
            got = read_many(i)
            if got:
                i += got
                continue
            wait = 64
        read_one(i)
        i += 1
        wait = max(wait - 1, 0)
        if source.punctuation("," + closing, field) == closing:
            return


def _walk(source: _Source, on_jobs: Callable[[int, list[Any]], None],
          on_profiles: Callable[[list[tuple[str, Any]]], None]) -> Any:
    """Read the workload, handing the jobs (``on_jobs(index of the first, jobs)``) and the profiles
    (``on_profiles([(name, profile), ...])``) to the callbacks as they are read; ``nb_res``."""
    name, cap = source.name, source.caps.jobs
    if source.peek() != "{":
        source.value(None)  # (not JSON at all: say so)
        raise TraceError(name, None, None, SHAPE)
    seen: set[str] = set()
    nb_res = None

    def check(count: int, what: str) -> None:
        if cap is not None and count > cap:  # (a workload needs no more profiles than jobs)
            raise TraceError(name, None, None, f"more than {cap:,} {what}")

    def job(i: int) -> None:
        check(i + 1, "jobs")
        on_jobs(i, [source.value(f"jobs[{i}]")])

    def jobs(i: int) -> int:
        found = source.batch("[]", "{")
        if not found:
            return 0
        check(i + len(found), "jobs")
        on_jobs(i, found)
        return len(found)

    def profile(i: int) -> None:
        check(i + 1, "profiles")
        key = source.key("profiles")
        on_profiles([(key, source.value(f"profiles.{key:.40}"))])

    def profiles(i: int) -> int:
        found = source.batch("{}", '"')
        if not found:
            return 0
        check(i + len(found), "profiles")
        on_profiles([(key, dict(body) if type(body) is tuple else body) for key, body in found])
        return len(found)

    def member(i: int) -> None:
        nonlocal nb_res
        key = source.key(None)
        if key in seen and key in ("jobs", "profiles"):
            raise source.error(key, "given twice")
        seen.add(key)
        if key == "jobs":
            _items(source, key, "[]", job, jobs if source.bulk else None)
        elif key == "profiles":
            _items(source, key, "{}", profile, profiles if source.bulk else None)
        else:
            value = source.value(key[:40])
            if key == "nb_res":
                nb_res = value

    _items(source, "", "{}", member)
    if source.peek():
        raise source.error(None, "not a JSON document: more after the workload's closing brace")
    if not {"jobs", "profiles"} <= seen:
        raise TraceError(name, None, None, SHAPE)
    return nb_res


def _digest(profile: str) -> bytes:
    # Jobs and profiles are matched by a digest of the name: 16 bytes each, however long the names.
    return hashlib.blake2b(profile.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _number(name: str, value: Any, field: str) -> float:
    try:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError
        number = float(value)
    except (TypeError, OverflowError):  # (an integer of 400 digits is no float)
        number = math.nan
    if not math.isfinite(number):
        raise TraceError(name, None, field, f"must be a finite number; got {value!r:.40}")
    return number


#: the profile types with a run time of their own, by Batsim version: v5's names, then v4's
DELAY_TYPES = ("DelayProfile", "delay")
SEQUENCE_TYPES = ("SequentialCompositionProfile", "composed")
#: how deep compositions may nest (Batsim's own examples nest 4 deep)
MAX_NESTING = 64


def _delay(profile: Any) -> float:
    """The run time a delay profile gives; NaN for any other profile (compositions are resolved
    once every profile is read: :class:`_Sequences`) or a bad delay (why: :func:`_profile_error`)."""
    if type(profile) is not dict or profile.get("type") not in DELAY_TYPES:
        return math.nan
    delay = profile.get("delay")
    try:
        delay = float(delay) if type(delay) in (int, float) else math.nan  # (not True)
    except OverflowError:
        return math.nan
    return delay if 0 <= delay < math.inf else math.nan


def _profile_error(name: str, where: str, profile_name: Any, profile: Any,
                   why: dict[str, tuple[str, str]] | None = None) -> TraceError:
    """Why job ``where``'s profile gives no run time (``why``: the compositions' reasons, by name)."""
    if not isinstance(profile, dict):
        return TraceError(name, None, f"{where}.profile", f"names no profile of 'profiles': {profile_name!r:.40}")
    if profile.get("type") in SEQUENCE_TYPES and why and profile_name in why:
        field, reason = why[profile_name]
        return TraceError(name, None, field, f"{reason} (the profile of {where})")
    if profile.get("type") not in DELAY_TYPES:
        return TraceError(name, None, f"{where}.profile",
                          f"profile {profile_name[:40]!r} is of type {profile.get('type')!r:.40}: only delay profiles "
                          "(DelayProfile, delay) and sequential compositions of them (SequentialCompositionProfile, "
                          "composed) give a run time")
    return TraceError(name, None, f"profiles.{profile_name:.40}.delay",
                      f"must be a number >= 0; got {profile.get('delay')!r:.40}")


class _Sequences:
    """The sequential compositions of a workload, resolved to run times once every profile is read
    (a composition may name profiles that come after it). Few workloads have many, so they are kept
    as read; a name's last profile counts, as with ``json.loads``."""

    def __init__(self):
        self.bodies: dict[str, Any] = {}  # name -> the composition (its last profile, if a composition)
        self.at: dict[str, list[int]] = {}  # name -> its positions among the profiles read
        self.why: dict[str, tuple[str, str]] = {}  # name -> (field, reason) when it gives no run time

    def add(self, position: int, key: str, body: Any) -> None:
        if type(body) is dict and body.get("type") in SEQUENCE_TYPES:
            self.bodies[key] = body
            self.at.setdefault(key, []).append(position)
        else:  # a later profile of the name replaces a composition
            self.bodies.pop(key, None)

    def resolve(self, given: bytes | bytearray, delays: np.ndarray) -> None:
        """Write each composition's run time into ``delays`` (NaN, with its reason in ``why``, when
        it has none); ``given``: the profiles' 16-byte digests end to end, in the order read."""
        if not self.bodies:
            return
        # (file order: the last of a name counts; raw slices, as numpy's S16 would drop trailing zeros)
        last = {bytes(given[16 * i:16 * i + 16]): float(v) for i, v in enumerate(delays)}
        done: dict[str, float] = {}

        def runtime(key: str, depth: int, path: tuple[str, ...]) -> float:
            if key not in self.bodies:
                return last.get(_digest(key), math.nan)
            if key in done:
                return done[key]
            body = self.bodies[key]
            repeat = body.get("repeat", 1)
            seq = body.get("seq")
            total = math.nan
            if key in path or depth > MAX_NESTING:
                self.why[key] = (f"profiles.{key:.40}.seq", "the composition contains itself" if key in path else
                                 f"compositions nest more than {MAX_NESTING} deep")
            elif type(repeat) is not int or repeat < 1:
                self.why[key] = (f"profiles.{key:.40}.repeat", f"must be a whole number >= 1; got {repeat!r:.40}")
            elif type(seq) is not list or not seq or not all(type(x) is str for x in seq):
                self.why[key] = (f"profiles.{key:.40}.seq", f"must be a list of profile names; got {seq!r:.40}")
            else:
                total = 0.0
                for i, part in enumerate(seq):
                    t = runtime(part, depth + 1, (*path, key))
                    if math.isnan(t):
                        inner = self.why.get(part)
                        self.why[key] = inner if inner else (
                            f"profiles.{key:.40}.seq[{i}]",
                            f"profile {part[:40]!r} gives no run time (no such profile, or not a delay profile or a "
                            "sequential composition of them)")
                        total = math.nan
                        break
                    total += t
                total *= repeat
            done[key] = total
            return total

        for key, positions in self.at.items():
            if key in self.bodies:
                value = runtime(key, 0, ())
                for p in positions:
                    delays[p] = value


def _check_job(name: str, index: int, job: Any) -> None:
    """Raise the first problem of one job, as the batch found one (fields in the order a job is read)."""
    where = f"jobs[{index}]"
    if not isinstance(job, dict):
        raise TraceError(name, None, where, f"a job is an object; got {job!r:.40}")
    _number(name, job.get("subtime"), f"{where}.subtime")
    res = _number(name, job.get("res"), f"{where}.res")
    if not 1 <= res <= MAX_PROCESSORS or res != int(res):
        raise TraceError(name, None, f"{where}.res", f"must be a whole number of processors from 1 to "
                                                    f"{MAX_PROCESSORS:,}; got {res:g}")
    if job.get("walltime") is not None:
        _number(name, job["walltime"], f"{where}.walltime")
    if not isinstance(job.get("profile"), str):
        raise _profile_error(name, where, job.get("profile"), None)


class _BadBatch(Exception):
    """Some job of the batch is not right (which, and why, is for :func:`_check_job` to say)."""


class _Jobs:
    """The jobs kept, checked and turned into columns a batch at a time (no Python object per job)."""

    def __init__(self, name: str):
        self.name = name
        self.cols = _Columns(("submit", "estimate", "processors", "job_id", "profile", "batsim_id", "profile_name"))
        self.batch: list[Any] = []
        self.first = 0  # index of the batch's first job
        self.numeric = True  # every id so far is a number (else jobs are numbered from 1)

    def take(self, column: str, dtype: Any) -> np.ndarray:
        """A column, whole; its pieces are let go."""
        found = self.cols.get(column, dtype)
        self.cols.parts[column] = []
        return found

    def add(self, jobs: list[Any]) -> None:
        self.batch.extend(jobs)
        if len(self.batch) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        if not self.batch:
            return
        try:
            self._columns()
        except _BadBatch:
            for i, job in enumerate(self.batch):  # one job at a time, to name the first that is not right
                _check_job(self.name, self.first + i, job)
            raise AssertionError("a batch refused as a whole has no bad job") from None
        self.first += len(self.batch)
        self.batch = []

    def _numbers(self, key: str, absent: float | None = None) -> np.ndarray:
        values = [job.get(key) for job in self.batch]
        if absent is not None:
            values = [absent if v is None else v for v in values]
        if not set(map(type, values)) <= {int, float}:  # (None, strings, True ...)
            raise _BadBatch
        try:
            out = np.array(values, dtype=np.float64)
        except OverflowError:
            raise _BadBatch from None
        if not np.isfinite(out).all():
            raise _BadBatch
        return out

    def _columns(self) -> None:
        batch = self.batch
        if set(map(type, batch)) != {dict}:
            raise _BadBatch
        submit = self._numbers("subtime")
        res = self._numbers("res")
        if ((res < 1) | (res > MAX_PROCESSORS) | (res != np.floor(res))).any():
            raise _BadBatch
        walltime = self._numbers("walltime", absent=-1)  # (unknown)
        profiles = [job.get("profile") for job in batch]
        if set(map(type, profiles)) != {str}:
            raise _BadBatch
        digests = {p: _digest(p) for p in set(profiles)}  # (jobs share few profiles)
        if self.numeric:
            ids = [job.get("id") for job in batch]
            try:
                if set(map(type, ids)) != {int}:  # "w0!12" reads 12
                    ids = [int(str(i).rsplit("!", 1)[-1]) for i in ids]
                ids = np.array(ids, dtype=np.int64)
            except (ValueError, OverflowError):
                self.numeric = False
        # the names Batsim writes in its _jobs.csv (job_id, profile), as UTF-8 bytes
        names = np.array([str(job.get("id")).encode("utf-8") for job in batch], dtype=np.bytes_)
        self.cols.add(submit=submit, estimate=np.where(walltime > 0, walltime, np.nan),
                      processors=res.astype(np.int64), job_id=ids if self.numeric else np.zeros(0, np.int64),
                      profile=np.array(list(map(digests.__getitem__, profiles)), dtype="S16"), batsim_id=names,
                      profile_name=np.array([p.encode("utf-8") for p in profiles], dtype=np.bytes_))


def _open(name: str) -> IO[bytes]:
    try:
        return _open_binary(name)
    except FileNotFoundError:
        raise TraceError(name, None, None, "file not found") from None
    except OSError as exc:
        raise TraceError(name, None, None, f"cannot open: {exc.strerror or exc}") from None


def read_batsim(path: str | os.PathLike[str], limit: int | None = None, caps: ReadCaps = NO_CAPS,
                skip_untimed: bool = False) -> Trace:
    """Read a Batsim workload (plain or gzipped JSON). Raises TraceError naming the job and field.

    ``limit`` keeps the first jobs only (the others are still read, and counted against ``caps.jobs``).
    ``skip_untimed`` leaves out the jobs whose profile gives no run time (Batsim times them on its
    platform model) instead of refusing the file: ``Trace.skipped`` counts them and
    ``skipped_lines`` holds the indices in ``jobs`` of the first of them.
    """
    name = os.fspath(path)
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    jobs = _Jobs(name)
    # Per profile, in file order (the last of a name counts, as with json.loads): digest and delay.
    given, delays = bytearray(), array("d")
    sequences = _Sequences()

    def on_jobs(first: int, found: list[Any]) -> None:
        if limit is None or first < limit:
            jobs.add(found if limit is None else found[:limit - first])

    def on_profiles(found: list[tuple[str, Any]]) -> None:
        digests = {key: _digest(key) for key in {key for key, _ in found}}
        for i, (key, body) in enumerate(found):
            sequences.add(len(delays) + i, key, body)
        given.extend(b"".join(digests[key] for key, _ in found))
        delays.extend(_delay(body) for _, body in found)

    with _open(name) as fh:
        nb_res = _walk(_Source(name, fh, caps), on_jobs, on_profiles)
    jobs.flush()
    if isinstance(nb_res, int) and not isinstance(nb_res, bool) and nb_res > MAX_PROCESSORS:
        raise TraceError(name, None, "nb_res", f"{nb_res:,} processors, more than the {MAX_PROCESSORS:,} a "
                                               "workload may name")

    wanted = jobs.take("profile", np.dtype("S16"))
    resolved = np.array(delays, np.float64)  # (a copy: the compositions' run times are written in)
    sequences.resolve(given, resolved)
    runtime = _runtimes(wanted, np.frombuffer(given, "S16"), resolved)
    given.clear()
    del delays[:], resolved
    bad = np.flatnonzero(np.isnan(runtime))
    if len(bad) and not skip_untimed:
        raise _explain(name, caps, int(bad[0]), wanted[bad[0]:bad[0] + 1].tobytes(), sequences.why)
    del wanted
    n = len(runtime)
    submit = jobs.take("submit", np.float64)
    order = np.argsort(submit, kind="stable")
    if len(bad):  # skip_untimed: the jobs without a run time are left out
        order = order[~np.isnan(runtime[order])]
    # (one column at a time, each dropped once sorted: the peak stays near one copy of the jobs)
    ids = (jobs.take("job_id", np.int64) if jobs.numeric else np.arange(1, n + 1, dtype=np.int64))[order]
    kept = len(order)
    table = JobTable(ids, submit[order], runtime[order], jobs.take("estimate", np.float64)[order],
                     jobs.take("processors", np.int64)[order], np.full(kept, -1, np.int32), np.zeros(kept, np.int32),
                     extra={"batsim_id": jobs.take("batsim_id", "S1")[order],
                            "profile": jobs.take("profile_name", "S1")[order]})
    header = {"MaxProcs": str(int(nb_res))} if isinstance(nb_res, int) and not isinstance(nb_res, bool) else {}
    return Trace(table, name, "batsim", header, [], int(nb_res) if header else None, len(bad),
                 bad[:MAX_SKIPPED_LINES].tolist())


def _runtimes(wanted: np.ndarray, given: np.ndarray, delays: np.ndarray) -> np.ndarray:
    """Each job's profile delay (NaN: no such profile, or one that gives no run time)."""
    if len(given) == 0:
        return np.full(len(wanted), np.nan)
    order = np.argsort(given, kind="stable")
    names = given[order]
    last = np.append(names[1:] != names[:-1], True)  # the last profile of each name counts (stable sort)
    names, delay = names[last], delays[order[last]]
    del order, last
    at = np.minimum(np.searchsorted(names, wanted), len(names) - 1)
    runtime = delay[at]
    runtime[names[at] != wanted] = np.nan
    return runtime


def _explain(name: str, caps: ReadCaps, index: int, digest: bytes,
             why: dict[str, tuple[str, str]] | None = None) -> TraceError:
    """The error of job ``index``, whose profile gives no run time: read the file again for the job's
    profile name and the profile itself (only what names the problem is kept)."""
    found: dict[str, Any] = {}

    def on_jobs(first: int, jobs: list[Any]) -> None:
        if 0 <= index - first < len(jobs):
            found["name"] = jobs[index - first].get("profile")

    def on_profiles(profiles: list[tuple[str, Any]]) -> None:
        for key, body in profiles:
            if _digest(key) == digest:
                found["profile"] = body

    with _open(name) as fh:  # (one value at a time: the profile as json.loads gives it, for the message)
        _walk(_Source(name, fh, caps, bulk=False), on_jobs, on_profiles)
    return _profile_error(name, f"jobs[{index}]", found.get("name"), found.get("profile"), why)
