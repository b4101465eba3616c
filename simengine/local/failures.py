"""Resource failures and maintenance of a cluster (docs/failures.md): the schema part
(``platform.clusters[].failures``) and the down intervals a replication draws from it.

A cluster's processors fail in units of ``group`` (1: each processor alone; a node of g
processors; the cluster's size: the whole cluster). Each unit alternates between up, for a
time drawn from ``mtbf``, and down, for a time drawn from ``mttr`` (an alternating renewal
process, up at time 0), independently of the others; ``down`` adds fixed intervals
(maintenance windows, or a failure trace's down times). The event core (simengine.local.core)
takes each down interval as an outage on the unit's processors: the jobs there are killed
and requeued from scratch (``jobs: requeue``) or lost (``jobs: lose``), reservations there
are broken, and the schedulers see the processors unavailable until the repair.
"""
from __future__ import annotations

import csv
import gzip
import math
import os
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field, PrivateAttr, ValidationError, ValidationInfo, model_serializer, model_validator

from simengine.distributions import Distribution
from simengine.schema_base import StrictModel, problems as field_problems

__all__ = ["DownInterval", "Failures", "draw_outages", "down_time", "read_down_intervals", "DOWN_COLUMNS"]

#: the columns of a down-interval CSV file (docs/failures.md, "Down intervals from a file"):
#: start and end are required, the others optional (DownInterval's fields)
DOWN_COLUMNS = ("start", "end", "first", "processors", "notice")


class DownInterval(StrictModel):
    """Processors ``first`` .. ``first + processors - 1`` of the cluster are down over [start, end)."""

    start: float = Field(ge=0, description="When the processors go down (s, ≥ 0)")
    end: float = Field(gt=0, description="When they are back up (s, after start)")
    first: int = Field(0, ge=0, description="The first processor down (0-based, ≥ 0)")
    processors: int | None = Field(None, gt=0, description="How many processors from first (> 0); empty: all "
                                                           "from first to the cluster's last")
    notice: float = Field(0.0, ge=0, description="Announced this many seconds before start (≥ 0), as a "
                                                 "maintenance reservation: from then on the schedulers plan around "
                                                 "it. 0 (default): unforeseen, as a failure")

    @model_serializer(mode="wrap")
    def _leave_out_no_notice(self, handler):
        data = handler(self)  # (the default is left out: intervals written before it keep their hash)
        if data.get("notice") == 0.0:
            del data["notice"]
        return data

    @model_validator(mode="after")
    def _ordered(self):
        if self.end <= self.start:
            raise ValueError(f"end must be after start ({self.start:g}); got {self.end:g}")
        return self


class Failures(StrictModel):
    """How a cluster's processors fail and are repaired (docs/failures.md)."""

    mtbf: Distribution | None = Field(
        None, description="Time a unit stays up between failures (s): its mean is the MTBF. Give mttr too; "
                          "empty: no drawn failures (down intervals only)")
    mttr: Distribution | None = Field(
        None, description="Time a failed unit takes to be repaired (s): its mean is the MTTR")
    group: int = Field(1, gt=0, description="Processors that fail together (> 0): 1, each processor alone; a "
                                            "node's processors; the cluster's processors, the whole cluster")
    jobs: Literal["requeue", "lose"] = Field(
        "requeue", description="A job running on a processor that fails: requeue (killed, back in the queue, "
                               "restarted from scratch) or lose (killed for good)")
    down: list[DownInterval] = Field([], description="Fixed down intervals: maintenance windows, or the down "
                                                     "times of a failure trace")
    down_file: str | None = Field(
        None, description="A CSV file of more down intervals (a path relative to the scenario file; .gz too): a "
                          "header row naming start, end and any of first, processors, notice, then one interval "
                          "per row (docs/failures.md)")

    #: the intervals read from down_file
    _file_down: list[DownInterval] = PrivateAttr(default_factory=list)

    @model_serializer(mode="wrap")
    def _leave_out_no_file(self, handler):
        data = handler(self)  # (left out when empty: scenarios written before it keep their hash)
        if data.get("down_file") is None:
            data.pop("down_file", None)
        return data

    @property
    def intervals(self) -> list[DownInterval]:
        """Every fixed down interval: ``down``, then those of ``down_file``."""
        return self.down + self._file_down

    @model_validator(mode="after")
    def _both(self, info: ValidationInfo):
        if self.down_file is not None:
            base = Path((info.context or {}).get("base_dir") or os.getcwd())
            path = Path(os.path.normpath(base / Path(self.down_file).expanduser()))
            try:
                self._file_down = read_down_intervals(path)
            except (OSError, ValueError) as e:
                raise field_problems([(("down_file",), str(e) if isinstance(e, ValueError) else
                                 f"cannot read {path}: {e.strerror or e}")]) from None
        if (self.mtbf is None) != (self.mttr is None):
            missing = "mttr" if self.mttr is None else "mtbf"
            raise ValueError(f"{missing} is missing: drawn failures need both mtbf and mttr")
        if self.mtbf is None and not self.intervals:
            raise ValueError("no failures: give mtbf and mttr, or down intervals (or leave failures out)")
        for name in ("mtbf", "mttr"):
            d = getattr(self, name)
            if d is not None and d.min_value() < 0:
                raise ValueError(f"{name} must not draw negative times (this distribution can draw "
                                 f"{d.min_value():g})")
        if self.mtbf is not None and self.mtbf.mean() <= 0:
            raise ValueError("mtbf must have a mean above 0")
        return self


def read_down_intervals(path: str | os.PathLike) -> list[DownInterval]:
    """The down intervals of a CSV file (DOWN_COLUMNS: a header row, then one interval per row;
    lines starting with # and blank lines are skipped). A ValueError names the line and column
    at fault."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="") as fh:
        lines = [(k, line) for k, line in enumerate(fh, 1) if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise ValueError(f"{Path(path).name}: no header row (expected {', '.join(DOWN_COLUMNS)})")
    rows = list(csv.reader(line for _, line in lines))
    header = [h.strip() for h in rows[0]]
    where = f"{Path(path).name}, line {lines[0][0]}"
    unknown = [h for h in header if h not in DOWN_COLUMNS]
    if unknown or len(set(header)) < len(header) or not {"start", "end"} <= set(header):
        why = (f"unknown column {unknown[0]!r}" if unknown else "a column named twice" if len(set(header)) < len(header)
               else "start and end are required")
        raise ValueError(f"{where}: {why}; the header names columns among {', '.join(DOWN_COLUMNS)}")
    out = []
    for (k, _), row in zip(lines[1:], rows[1:]):
        where = f"{Path(path).name}, line {k}"
        if len(row) != len(header):
            raise ValueError(f"{where}: {len(row)} values for the header's {len(header)} columns")
        values = {}
        for name, text in zip(header, row):
            text = text.strip()
            if text == "" and name not in ("start", "end"):
                continue  # (an optional column left empty: its default)
            try:
                number = float(text)
            except ValueError:
                raise ValueError(f"{where}, column {name}: not a number: {text!r}") from None
            if name in ("first", "processors"):
                if not (math.isfinite(number) and number == int(number)):
                    raise ValueError(f"{where}, column {name}: must be a whole number; got {text!r}")
                number = int(number)
            values[name] = number
        try:
            out.append(DownInterval.model_validate(values))
        except ValidationError as e:
            err = e.errors()[0]
            column = ".".join(map(str, err["loc"])) or "end"
            raise ValueError(f"{where}, column {column}: {err['msg'].removeprefix('Value error, ')}") from None
    return out


def problems(failures: Failures, processors: int) -> list[tuple[tuple, str]]:
    """What does not fit the cluster, as (path below ``failures``, message; a file's interval is
    named by its row)."""
    found = []
    if failures.group > processors:
        found.append((("group",), f"must be at most the cluster's {processors} processors; got {failures.group}"))
    n = len(failures.down)
    for i, d in enumerate(failures.intervals):
        # an interval of down: its field's path; one of down_file: the file's path, its row and field
        at, row = (lambda f: ("down", i, f), "") if i < n else (lambda f: ("down_file",), f"row {i - n + 1}: ")
        if d.first >= processors:
            found.append((at("first"), f"{row}{'first ' if row else ''}must be below the cluster's {processors} "
                                       f"processors; got {d.first}"))
        elif d.processors is not None and d.first + d.processors > processors:
            found.append((at("processors"), f"{row}processors {d.first} .. {d.first + d.processors - 1} do not "
                                            f"exist: the cluster has {processors}"))
    return found


def draw_outages(failures: Failures, processors: int, until: float, rng: np.random.Generator,
                 limit: int | None = None) -> np.ndarray:
    """Down intervals over [0, until) as rows (start, end, first processor, processors, announced
    at), ordered by start (then first processor); the fixed ones are kept whole, wherever they lie
    (a drawn failure is announced at its start). Past ``limit`` rows the drawing stops (the caller
    refuses the scenario: more than it can simulate)."""
    parts: list[np.ndarray] = []
    rows = [(d.start, d.end, d.first, d.processors if d.processors is not None else processors - d.first,
             max(d.start - d.notice, 0.0)) for d in failures.intervals]
    if failures.mtbf is not None and until > 0:
        g = failures.group
        units = -(-processors // g)
        firsts = np.arange(units) * g
        sizes = np.minimum(firsts + g, processors) - firsts
        t = np.zeros(units)  # each unit's time: up from 0
        cycle = failures.mtbf.mean() + failures.mttr.mean()
        while True:
            live = np.flatnonzero(t < until)
            if not len(live):
                break
            k = int(min(max(4, math.ceil(1.2 * (until - t[live].min()) / cycle) + 2), max(4, (1 << 22) // len(live))))
            up = failures.mtbf.sample(rng, len(live) * k).reshape(len(live), k)
            down = failures.mttr.sample(rng, len(live) * k).reshape(len(live), k)
            ends = t[live, None] + np.cumsum(up + down, axis=1)  # each cycle's repair
            starts = ends - down
            keep = (starts < until) & (down > 0)
            u = np.broadcast_to(live[:, None], keep.shape)[keep]
            parts.append(np.column_stack([starts[keep], ends[keep], firsts[u], sizes[u], starts[keep]]))
            t[live] = ends[:, -1]
            if limit is not None and sum(len(p) for p in parts) > limit:
                break
    fixed = np.array(rows, float).reshape(-1, 5)
    out = np.concatenate([fixed] + parts) if failures.mtbf is not None and until > 0 and parts else fixed
    order = np.lexsort((out[:, 2], out[:, 0]))
    return out[order]


def down_time(outages: np.ndarray, processors: int, t0: float, t1: float) -> float:
    """Processor-seconds down within [t0, t1): intervals overlapping on a processor count once."""
    if not len(outages) or t1 <= t0:
        return 0.0
    a = np.clip(outages[:, 0], t0, t1)
    b = np.clip(outages[:, 1], t0, t1)
    first, count = outages[:, 2].astype(np.int64), outages[:, 3].astype(np.int64)
    total = 0.0
    # per block of processors sharing their intervals: the union of the intervals, times the block's size
    cuts = np.unique(np.concatenate([first, first + count, [0, processors]]))
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        on = (first <= lo) & (first + count >= hi)
        if not on.any():
            continue
        s, e = a[on], b[on]
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
        reach = np.maximum.accumulate(e)
        new = np.ones(len(s), bool)
        new[1:] = s[1:] > reach[:-1]
        starts = s[new]
        ends = np.append(reach[np.flatnonzero(new)[1:] - 1], reach[-1])
        total += float((ends - starts).sum()) * (hi - lo)
    return total
