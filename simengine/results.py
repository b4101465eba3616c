"""The engine's output contract (DESIGN.md, docs/output.md): jobs, segments, metrics.

A :class:`Result` holds one row per job (all replications, with a ``replication``
column), the Gantt segments of replication 0, per-replication metrics aggregated
into means with 95% confidence intervals, and time series of utilisation and queue
length. ``write`` puts it on disk as CSV, JSON, compressed numpy and SWF.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from simengine.gantt import KIND_NAMES, SEGMENT_COLUMNS, segment_jobs
from simengine.jit import njit
from simengine.statistics import (BATCHES, JOB_MEANS, MIN_BATCH, QUANTILES, batch_means_half_width,
                                  batch_quantile_half_width, shaky, slice_means_half_width, t_half_width,
                                  within_domain)
from simengine.text_columns import column_text, csv_bytes
from simengine.version import ENGINE_VERSION
from simengine.workload import (STATUS_COMPLETED, STATUS_KILLED, STATUS_NAMES, STATUS_REJECTED,
                                STATUS_UNFINISHED)
from simengine.traces import swf_status, write_swf
from simengine.batsim import write_batsim_jobs
from simengine.scenario import scenario_hash

#: Version of the output contract; bump when a column or key changes meaning.
OUTPUT_VERSION = 1

JOB_COLUMNS = ("job_id", "replication", "stream", "cluster", "submit", "start", "end", "processors",
               "runtime", "estimate", "wait", "response", "slowdown", "bounded_slowdown", "status", "warmup")
#: Every Result's job columns, in table order: JOB_COLUMNS (what the kernels' pass writes), then
#: ``measured`` (added by assemble_result where a model does not give its own); model-specific
#: columns follow these.
STANDARD_JOB_COLUMNS = (*JOB_COLUMNS, "measured")

#: Slowdown threshold (s) for the bounded slowdown, as is usual in the literature.
BOUNDED_SLOWDOWN_TAU = 10.0

#: Points per time series.
SERIES_POINTS = 400


@dataclass
class Metric:
    """A named scalar: mean over replications, its 95% interval (Student's t, within the metric's
    domain: simengine.statistics), each replication's value, and why the interval is shaky (if it is)."""

    name: str
    mean: float
    ci_low: float | None
    ci_high: float | None
    values: list[float]
    #: one replication: the batch-means half-width its interval came from (statistics.BATCHES)
    batch_half: float | None = None

    @classmethod
    def from_values(cls, name: str, values: list[float]) -> "Metric":
        v = np.asarray(values, dtype=float)
        v = v[~np.isnan(v)]
        if len(v) == 0:
            return cls(name, math.nan, None, None, list(values))
        mean = float(v.mean())
        half = t_half_width(v)
        if half is None:
            return cls(name, mean, None, None, list(values))
        low, high = within_domain(name, mean - half, mean + half)
        return cls(name, mean, low, high, [float(x) for x in values])

    @property
    def half_width(self) -> float | None:
        """The t interval's half-width (the estimate's precision; the interval itself is cut
        to the metric's domain, so it may be shorter on one side)."""
        if self.ci_high is None:
            return None
        return self.batch_half if self.batch_half is not None else t_half_width(self.values)

    def with_batch_means(self, job_values, percentile: float | None = None) -> "Metric":
        """A one-replication metric with the batch-means interval of its jobs' values (arrival
        order); a percentile of them (``percentile``) with the sectioning interval of its batches'."""
        return self.with_batch_half(batch_means_half_width(job_values) if percentile is None
                                    else batch_quantile_half_width(job_values, percentile))

    def with_batch_half(self, half: float | None) -> "Metric":
        """A one-replication metric with the interval of half-width ``half`` from its batches."""
        if half is None or math.isnan(self.mean):
            return self
        low, high = within_domain(self.name, self.mean - half, self.mean + half)
        return Metric(self.name, self.mean, low, high, self.values, half)

    @property
    def replications(self) -> int:
        return int(np.count_nonzero(~np.isnan(np.asarray(self.values, dtype=float))))

    @property
    def shaky(self) -> str | None:
        """Why the interval should not be trusted (simengine.statistics.shaky), or None."""
        return shaky(self.replications, None if math.isnan(self.mean) else self.mean, self.half_width,
                     batch_means=self.batch_half is not None)

    def as_dict(self) -> dict[str, Any]:
        clean = [None if (isinstance(x, float) and math.isnan(x)) else x for x in self.values]
        return {"mean": None if math.isnan(self.mean) else self.mean, "ci_low": self.ci_low,
                "ci_high": self.ci_high, "half_width": self.half_width, "shaky": self.shaky, "values": clean}


# ---- the compiled pass over one replication's jobs ---------------------------------------------

#: Column dtypes of ``Result.jobs`` (JOB_COLUMNS order).
JOB_DTYPES = {"job_id": np.int64, "replication": np.int32, "stream": np.int32, "cluster": np.int32,
              "submit": np.float64, "start": np.float64, "end": np.float64, "processors": np.int64,
              "runtime": np.float64, "estimate": np.float64, "wait": np.float64, "response": np.float64,
              "slowdown": np.float64, "bounded_slowdown": np.float64, "status": np.int8, "warmup": np.bool_}


#: per-job columns a trace brings that a run's rows keep when its workload has them: the users
#: (per-user metrics), groups and queues (SWF fields 12, 13, 15: kept in schedule.swf) and the names Batsim writes in its _jobs.csv (``batsim_id``, ``profile``:
#: UTF-8 bytes, as wide as the trace's longest; simengine.batsim). None: the trace's own dtype
CARRIED_JOB_DTYPES = {"user": np.int64, "group": np.int64, "queue": np.int64, "batsim_id": None, "profile": None}


def carried_columns(extra: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The workload's CARRIED_JOB_DTYPES columns it has (``JobTable.extra``)."""
    return {k: v if dtype is None else v.astype(dtype, copy=False)
            for k, dtype in CARRIED_JOB_DTYPES.items() if (v := extra.get(k)) is not None}


def empty_job_rows(n: int, optional: tuple[tuple[str, np.dtype], ...] = ()) -> dict[str, np.ndarray]:
    """Uninitialised job columns for ``n`` rows (JOB_COLUMNS, then the ``optional`` (name, dtype) ones)."""
    return {k: np.empty(n, JOB_DTYPES[k]) for k in JOB_COLUMNS} | {k: np.zeros(n, dtype) for k, dtype in optional}


@njit(cache=True, nogil=True)
def _ends_within(start, runtime, start_limit, end_limit):
    """The ends ``start + runtime`` of jobs started at or before ``start_limit`` and ending
    at or before ``end_limit`` (in job order), and the largest of them (-inf if none)."""
    n = start.shape[0]
    ends = np.empty(n)
    m = 0
    largest = -math.inf
    for i in range(n):
        s = start[i]
        e = s + runtime[i]
        if s <= start_limit and e <= end_limit:  # False when the job never started (NaN)
            ends[m] = e
            m += 1
            if e > largest:
                largest = e
    return ends[:m], largest


def kth_smallest_end(start: np.ndarray, runtime: np.ndarray, limit: float, k: int) -> tuple[float, int, float]:
    """(k-th smallest end over started jobs ending at or before ``limit`` (NaN if fewer),
    how many such jobs, the largest such end (-inf if none))."""
    ends, largest = _ends_within(start, runtime, math.inf, limit)
    if k < 1 or len(ends) < k:
        return math.nan, len(ends), float(largest)
    return _kth(ends, k), len(ends), float(largest)


def order_job_rows(cols: dict[str, np.ndarray], replication: int,
                   warmup_time: float) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Job rows of an event-driven model (grid layer, KOALA, reservations) in submit order
    (stable), with the columns every job table derives: replication, estimate (= runtime unless
    given: the grid models plan with exact run times), wait, response, slowdown, bounded
    slowdown and the warm-up flag.
    Returns the rows and ``position`` (``position[i]`` is the new row of input row ``i``)."""
    order = np.argsort(cols["submit"], kind="stable")
    cols = {k: v[order] for k, v in cols.items()}
    total = len(order)
    cols["replication"] = np.full(total, replication, np.int32)
    if "estimate" not in cols:
        cols["estimate"] = cols["runtime"].copy()
    cols["wait"] = cols["start"] - cols["submit"]
    cols["response"] = cols["end"] - cols["submit"]
    r = cols["runtime"]
    with np.errstate(divide="ignore", invalid="ignore"):
        cols["slowdown"] = np.where(r > 0, cols["response"] / r, np.nan)
    cols["bounded_slowdown"] = np.maximum(cols["response"] / np.maximum(r, BOUNDED_SLOWDOWN_TAU), 1.0)
    cols["warmup"] = cols["submit"] < warmup_time
    position = np.empty(total, np.int64)
    position[order] = np.arange(total)
    return cols, position


def percentile_linear(x: np.ndarray, q: float) -> float:
    """``float(np.percentile(x, q))`` (method "linear") for a non-empty ``x`` without NaN,
    computed the way numpy computes it (same order statistics, same interpolation), from
    one partition instead of numpy's general machinery."""
    n = len(x)
    virtual = (n - 1) * (q / 100)
    if virtual >= n - 1:
        return float(x.max())
    below = math.floor(virtual)
    part = np.partition(x, below)  # one kth: numpy's partition at two is several times slower
    a, b = part[below], part[below + 1:].min()
    gamma = virtual - below
    diff = b - a
    return float(b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma)


def _kth(x: np.ndarray, k: int) -> float:
    """The k-th smallest value (k from 1), without sorting everything (numpy's introselect)."""
    return float(np.partition(x, k - 1)[k - 1])


@njit(cache=True, nogil=True)
def _min(a, b):  # np.minimum
    return a if (a < b or a != a) else b


@njit(cache=True, nogil=True)
def _max(a, b):  # np.maximum
    return a if (a > b or a != a) else b


@njit(cache=True, nogil=True)
def _add_to_slices(a, z, weight, t0, width, slices):
    """Add ``weight`` x the time [a, z] spends in each slice [t0 + k width, t0 + (k+1) width]."""
    n = slices.shape[0]
    if z <= a:
        return
    k = min(int((a - t0) / width), n - 1)
    while k < n and t0 + k * width < z:
        part = min(z, t0 + (k + 1) * width) - max(a, t0 + k * width)
        if part > 0.0:
            slices[k] += part * weight
        k += 1


@njit(cache=True, nogil=True)
def slice_busy(starts, ends, weights, t0, t1, slices):
    """Into ``slices``: the busy time (x weight) of intervals [starts, ends], clipped to [t0, t1],
    in each of its len(slices) equal slices -- a utilisation's batch means (as the replication pass)."""
    if t1 <= t0 or slices.shape[0] == 0:
        return
    width = (t1 - t0) / slices.shape[0]
    for i in range(starts.shape[0]):
        _add_to_slices(min(max(starts[i], t0), t1), min(max(ends[i], t0), t1), weights[i], t0, width, slices)


def utilisation_batch_half(slices: np.ndarray, capacity: float, t0: float, t1: float, measured: int) -> float | None:
    """The batch-means half-width of a one-replication utilisation from its slices' busy times:
    None with fewer than BATCHES x MIN_BATCH measured jobs (as the job means)."""
    if measured < BATCHES * MIN_BATCH or t1 <= t0 or capacity <= 0 or len(slices) < 2:
        return None
    return slice_means_half_width(slices / (capacity * (t1 - t0) / len(slices)))


@njit(cache=True, nogil=True, error_model="numpy")
def _finish_rows(submit, runtime, killed, cluster, start, job_id, stream, processors, estimate, replication,
                 keep, t_stop, warm_time, t_w, take_at_tw, t_warm, n_clusters, write,
                 o_job_id, o_replication, o_stream, o_cluster, o_submit, o_start, o_end, o_processors, o_runtime,
                 o_estimate, o_wait, o_response, o_slowdown, o_bounded, o_status, o_warmup, held, batch_busy):
    t0, t1 = t_warm, t_stop
    # busy processor-seconds in each of len(batch_busy) equal slices of [t0, t1] (batch means)
    width = (t1 - t0) / batch_busy.shape[0] if batch_busy.shape[0] and t1 > t0 else 0.0
    # the measured jobs' values and the started jobs' busy processor-seconds, in job order
    wait_m = np.empty(keep)
    response_m = np.empty(keep)
    slowdown_m = np.empty(keep)
    bounded_m = np.empty(keep)
    n_measured = 0
    busy = np.empty(keep)
    n_started = 0
    per_cluster = np.zeros(n_clusters)
    last_release = -math.inf
    first_submit = math.inf
    for i in range(keep):
        sub = submit[i]
        r = runtime[i]
        s = start[i]
        e = s + r
        started = s <= t_stop  # by the stop (False when never started: NaN)
        done = started and e <= t_stop
        st = s if started else math.nan
        h = _min(e, t_stop) if started else math.nan  # processors held until the end or the stop
        end = e if done else math.nan
        status = STATUS_UNFINISHED
        if done:
            status = STATUS_KILLED if killed[i] else STATUS_COMPLETED
        if cluster[i] < 0:
            status = STATUS_REJECTED
        warm = sub < warm_time
        if done and e < t_w:
            warm = True
        elif done and e == t_w and take_at_tw > 0:
            warm = True
            take_at_tw -= 1
        wait = st - sub
        response = end - sub
        slowdown = response / r if r > 0 else math.nan
        bounded = _max(response / _max(r, BOUNDED_SLOWDOWN_TAU), 1.0)
        if write:
            o_job_id[i] = job_id[i]
            o_replication[i] = replication
            o_stream[i] = stream[i]
            o_cluster[i] = cluster[i]
            o_submit[i] = sub
            o_start[i] = st
            o_end[i] = end
            o_processors[i] = processors[i]
            o_runtime[i] = r
            o_estimate[i] = estimate[i]
            o_wait[i] = wait
            o_response[i] = response
            o_slowdown[i] = slowdown
            o_bounded[i] = bounded
            o_status[i] = status
            o_warmup[i] = warm
        if held.shape[0]:
            held[i] = h
        if not warm and (status == STATUS_COMPLETED or status == STATUS_KILLED):
            wait_m[n_measured] = wait
            response_m[n_measured] = response
            slowdown_m[n_measured] = slowdown
            bounded_m[n_measured] = bounded
            n_measured += 1
        if started:
            a, z = min(max(st, t0), t1), min(max(h, t0), t1)
            b = (z - a) * processors[i]
            busy[n_started] = b
            if width > 0.0:
                _add_to_slices(a, z, processors[i], t0, width, batch_busy)
            n_started += 1
            per_cluster[cluster[i]] += b  # as np.bincount: in job order, from 0
            if h > last_release:
                last_release = h
        if sub < first_submit:
            first_submit = sub
    return (wait_m[:n_measured], response_m[:n_measured], slowdown_m[:n_measured],
            bounded_m[:n_measured], busy[:n_started], per_cluster, last_release, first_submit)


#: the job metrics every model reports over its measured jobs (docs/output.md, Metrics)
JOB_METRICS = ("mean_wait", "mean_response", "mean_slowdown", "mean_bounded_slowdown", "max_response", "p95_wait")


def job_metrics(wait: np.ndarray, response: np.ndarray, slowdown: np.ndarray, bounded: np.ndarray) -> dict[str, float]:
    """The standard job metrics from the measured jobs' waits, responses, slowdowns (NaN for a
    zero run time: left out of the mean) and bounded slowdowns -- computed here only, for every
    model (tests/simengine/test_metrics_once.py checks that each model's come from here)."""
    if not len(wait):
        return {k: math.nan for k in JOB_METRICS}
    return {"mean_wait": float(wait.mean()), "mean_response": float(response.mean()),
            "mean_slowdown": float(np.nanmean(slowdown)) if (~np.isnan(slowdown)).any() else math.nan,
            "mean_bounded_slowdown": float(bounded.mean()), "max_response": float(response.max()),
            "p95_wait": percentile_linear(wait, 95)}


#: per-user metrics (user_metrics), present when every job of the workload carries a user (SWF)
USER_METRICS = ("users_measured", "jain_wait", "jain_bounded_slowdown", "worst_user_mean_wait",
                "worst_user_mean_bounded_slowdown")


def jain_index(x: np.ndarray) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2) of non-negative values: 1 when all are equal,
    1/n when one takes everything; 1 for all zeros (everyone equal)."""
    x = np.asarray(x, float)
    if not len(x):
        return math.nan
    square = float((x * x).sum())
    return 1.0 if square == 0 else float(x.sum()) ** 2 / (len(x) * square)


def per_user(jobs: dict[str, np.ndarray], rows=slice(None)) -> dict[str, np.ndarray]:
    """Per user (id >= 0; SWF's -1, unknown, is left out) of the job rows ``rows`` (a mask or
    indices; the measured ones) of the job columns ``jobs``: ``user``, ``jobs``, ``mean_wait``,
    ``mean_bounded_slowdown``, users in increasing id."""
    user, wait, bounded = (np.asarray(jobs[k])[rows] for k in ("user", "wait", "bounded_slowdown"))
    known = user >= 0
    ids, index = np.unique(np.asarray(user)[known], return_inverse=True)
    jobs = np.bincount(index, minlength=len(ids))
    total = np.maximum(jobs, 1)
    return {"user": ids.astype(np.int64), "jobs": jobs.astype(np.int64),
            "mean_wait": np.bincount(index, weights=np.asarray(wait, float)[known], minlength=len(ids)) / total,
            "mean_bounded_slowdown": np.bincount(index, weights=np.asarray(bounded, float)[known],
                                                 minlength=len(ids)) / total}


def user_metrics(jobs: dict[str, np.ndarray], rows=slice(None)) -> dict[str, float]:
    """The per-user metrics (USER_METRICS) of the job rows ``rows`` (the measured ones) --
    computed here only: how many users, Jain's index over the users' mean waits and mean bounded
    slowdowns, and the worst user's means (docs/output.md)."""
    users = per_user(jobs, rows)
    if not len(users["user"]):
        return {k: math.nan for k in USER_METRICS}
    return {"users_measured": float(len(users["user"])), "jain_wait": jain_index(users["mean_wait"]),
            "jain_bounded_slowdown": jain_index(users["mean_bounded_slowdown"]),
            "worst_user_mean_wait": float(users["mean_wait"].max()),
            "worst_user_mean_bounded_slowdown": float(users["mean_bounded_slowdown"].max())}


def finish_rows(submit, runtime, killed, cluster, start, job_id, stream, processors, estimate, replication: int,
                keep: int, t_stop: float, warmup_time: float, warmup_completions: int,
                cluster_names: list[str], cluster_processors: list[int], out: dict[str, np.ndarray] | None,
                held: np.ndarray | None, batch_half: dict[str, float] | None = None) -> dict[str, float]:
    """One replication's job rows and metrics in one compiled pass.

    Inputs are the replication's jobs in submit order (``start`` NaN if never started)
    and the stop time; rows ``0..keep-1`` are written into ``out`` (JOB_COLUMNS, ``keep``
    rows each; None: compute the metrics only) and, if given, each row's processor release
    time into ``held``. Statuses, the warm-up rule and the metrics follow docs/output.md.
    The metrics are numpy's reductions over the measured jobs' values, gathered in job
    order, so they equal the same reductions over the rows bit for bit
    (tests/simengine/test_replication_pass.py holds the plain-numpy definition).
    """
    # warm-up by completions: the first w completions (by end; among jobs ending together
    # at the w-th end, the earliest submitted)
    t_warm = warmup_time
    t_w = -math.inf  # none: no job ends before it
    take_at_tw = 0
    w = warmup_completions
    if w:
        done_ends, _ = _ends_within(start, runtime, t_stop, t_stop)
        if len(done_ends) >= w:
            t_w = _kth(done_ends, w)
            take_at_tw = w - int(np.count_nonzero(done_ends < t_w))
            t_warm = max(t_warm, t_w)
    o = out if out is not None else _NO_ROWS
    slices = np.zeros(BATCHES) if batch_half is not None else _NO_HELD
    wait, response, slowdown, bounded, busy, per_cluster, last_release, first_submit = _finish_rows(
        submit, runtime, killed, cluster, start, job_id, stream, processors, estimate, replication, keep,
        t_stop, warmup_time, t_w, take_at_tw, t_warm, len(cluster_processors), out is not None,
        *(o[k] for k in JOB_COLUMNS), held if held is not None else _NO_HELD, slices)
    n = len(wait)
    metrics: dict[str, float] = {"jobs_measured": float(n), **job_metrics(wait, response, slowdown, bounded)}
    t0, t1 = t_warm, t_stop
    capacity = sum(cluster_processors)
    if t1 > t0 and capacity > 0:
        metrics["utilisation"] = float(busy.sum()) / (capacity * (t1 - t0))
        metrics["throughput"] = n / (t1 - t0)
        if batch_half is not None:
            # the utilisation of each of BATCHES equal slices of the window: its batch means
            half = utilisation_batch_half(slices, capacity, t0, t1, n)
            if half is not None:
                batch_half["utilisation"] = half
    else:
        metrics["utilisation"] = metrics["throughput"] = math.nan
    metrics["makespan"] = float(last_release - first_submit) if len(busy) else math.nan
    if t1 > t0:
        per = per_cluster / (np.asarray(cluster_processors) * (t1 - t0))
    else:
        per = np.full(len(cluster_processors), math.nan)
    for name, u in zip(cluster_names, per):
        metrics[f"utilisation.{name}"] = float(u)
    return metrics


_NO_ROWS = empty_job_rows(0)
_NO_HELD = np.empty(0)


def active_sum(on: np.ndarray, off: np.ndarray, weight: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Sum of ``weight`` over intervals [on, off) containing each instant of ``t``."""
    a, b = np.sort(on), np.argsort(off)
    cum_on = np.concatenate([[0.0], np.cumsum(weight[np.argsort(on)])])
    cum_off = np.concatenate([[0.0], np.cumsum(weight[b])])
    return cum_on[np.searchsorted(a, t, side="right")] - cum_off[np.searchsorted(off[b], t, side="right")]


#: the job columns the queue series are computed from
QUEUE_COLUMNS = ("submit", "start", "processors", "cluster")


def queue_series(t: np.ndarray, submit: np.ndarray, start: np.ndarray, processors: np.ndarray,
                 cluster: np.ndarray, cluster_names: list[str]) -> dict[str, np.ndarray]:
    """The queue at each instant of ``t``: jobs submitted and not yet started (NaN start: never),
    ``queue_length`` and the processors they request, ``queued_processors``, in all and per
    cluster (``.<cluster>``; a job counts on the cluster it went to) -- computed here only, for
    every model's series."""
    began = np.where(np.isnan(start), np.inf, start)
    procs = np.asarray(processors, float)
    ones = np.ones(len(began))
    out = {"queue_length": active_sum(submit, began, ones, t),
           "queued_processors": active_sum(submit, began, procs, t)}
    for c, name in enumerate(cluster_names):
        on = cluster == c
        out[f"queue_length.{name}"] = active_sum(submit[on], began[on], ones[on], t)
        out[f"queued_processors.{name}"] = active_sum(submit[on], began[on], procs[on], t)
    return out


def time_series(jobs: dict[str, np.ndarray], held_until: np.ndarray, clusters, t_end: float,
                points: int = SERIES_POINTS) -> dict[str, np.ndarray]:
    """Utilisation (busy / capacity), in all and per cluster, and the queue (:func:`queue_series`)
    sampled at ``points`` instants in [0, t_end], from job rows and when each job's processors
    were released (``held_until``)."""
    t = np.linspace(0.0, max(t_end, 1e-9), points)
    started = ~np.isnan(jobs["start"])
    starts, ends = jobs["start"][started], held_until[started]
    procs, where = jobs["processors"][started].astype(float), jobs["cluster"][started]
    out = {"time": t, "utilisation": active_sum(starts, ends, procs, t) / max(sum(c.processors for c in clusters), 1)}
    for c, spec in enumerate(clusters):
        on = where == c
        out[f"utilisation.{spec.name}"] = active_sum(starts[on], ends[on], procs[on], t) / spec.processors
    out.update(queue_series(t, jobs["submit"], jobs["start"], jobs["processors"], jobs["cluster"],
                            [c.name for c in clusters]))
    return out


@dataclass
class Result:
    """Everything one run produced. See docs/output.md for every column and key."""

    scenario: dict[str, Any]
    scenario_hash: str
    seed: int
    engine_version: str
    cluster_names: list[str]
    cluster_processors: list[int]
    jobs: dict[str, np.ndarray]
    segments: dict[str, np.ndarray]
    metrics: dict[str, Metric]
    series: dict[str, np.ndarray]
    replications: int = 1
    engine_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    #: per trace stream replayed on its own clock, the SWF header keys that date its time 0
    #: (simengine.workload_build.trace_time_origins): kept in schedule.swf and the summary
    time_origins: dict[str, dict[str, str]] = field(default_factory=dict)

    def status_counts(self) -> dict[str, int]:
        codes, counts = np.unique(self.jobs["status"], return_counts=True)
        # (cancelled only when a run has it: older results keep their summaries)
        out = {name: 0 for name in STATUS_NAMES if name != "cancelled"}
        for c, k in zip(codes, counts):
            out[STATUS_NAMES[c]] = int(k)
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "output_version": OUTPUT_VERSION,
            "scenario_name": self.scenario.get("name"),
            "scenario_hash": self.scenario_hash,
            "seed": self.seed,
            "engine_version": self.engine_version,
            "replications": self.replications,
            "clusters": [{"name": n, "processors": p} for n, p in zip(self.cluster_names, self.cluster_processors)],
            "jobs": int(len(self.jobs["job_id"])),
            "job_counts": self.status_counts(),
            "metrics": {k: m.as_dict() for k, m in self.metrics.items()},
            "segments": int(len(self.segments["t0"])),
            "engine_seconds": self.engine_seconds,
            "notes": self.notes,
            **({"time_origins": self.time_origins} if self.time_origins else {}),
        }

    # ---- writers -------------------------------------------------------------------------
    def write(self, out_dir: str | os.PathLike, swf: bool = True, swf_precision: int | None = 0,
              batsim: bool = False, batsim_precision: int | None = None) -> Path:
        """Write jobs.csv, segments.csv, summary.json, scenario.json, result.npz and
        schedule.swf (times at ``swf_precision`` decimals: :meth:`write_swf`) and, with
        ``batsim``, batsim_jobs.csv (:meth:`write_batsim_jobs`, times at ``batsim_precision``) into ``out_dir``.
        Files appear whole or not at all: everything is written into a temporary folder beside
        ``out_dir`` and moved in at the end."""
        out = Path(out_dir)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
        try:
            self.write_jobs_csv(tmp / "jobs.csv")
            self.write_segments_csv(tmp / "segments.csv")
            (tmp / "summary.json").write_text(json.dumps(self.summary(), indent=2, allow_nan=False) + "\n")
            (tmp / "scenario.json").write_text(json.dumps(self.scenario, indent=2) + "\n")
            self.write_npz(tmp / "result.npz")
            if swf:
                self.write_swf(tmp / "schedule.swf", swf_precision)
            if batsim:
                self.write_batsim_jobs(tmp / "batsim_jobs.csv", batsim_precision)
            if self.users() is not None:
                self.write_users_csv(tmp / "users.csv")
            out.mkdir(exist_ok=True)
            for f in tmp.iterdir():
                os.replace(f, out / f.name)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return out

    def users(self) -> dict[str, np.ndarray] | None:
        """Per user, over replication 0's measured jobs (:func:`per_user`): None when the jobs
        carry no users (a ``user`` column comes with traces that name them, e.g. SWF)."""
        j = self.jobs
        if "user" not in j:
            return None
        mine = (j["replication"] == 0) & j["measured"].astype(bool)
        return per_user(j, mine)

    def write_users_csv(self, path: Path) -> None:
        """``users.csv`` (:meth:`users`); ValueError when the jobs carry no users."""
        users = self.users()
        if users is None:
            raise ValueError("this result's jobs carry no users")
        _write_csv(path, users)

    def write_jobs_csv(self, path: Path) -> None:
        j = self.jobs
        names = np.asarray(self.cluster_names + [""], dtype=object)
        cols = {
            "job_id": j["job_id"], "replication": j["replication"], "stream": j["stream"],
            "cluster": names[j["cluster"]], "submit": j["submit"], "start": j["start"], "end": j["end"],
            "processors": j["processors"], "runtime": j["runtime"], "estimate": j["estimate"],
            "wait": j["wait"], "response": j["response"], "slowdown": j["slowdown"],
            "bounded_slowdown": j["bounded_slowdown"],
            "status": np.asarray(STATUS_NAMES, dtype=object)[j["status"]],
            "warmup": j["warmup"].astype(np.int8),
        }
        if "measured" in j:  # results written before the column existed lack it
            cols["measured"] = j["measured"].astype(np.int8)
        # model-specific columns (e.g. priority, preemptions, lost_time, reservation of
        # docs/reservations.md; workflow, task, ready, job_class of Cao's runs) follow, as kept
        for extra, values in j.items():
            if extra not in cols and extra not in ("killed",) and np.ndim(values) == 1:
                cols[extra] = values
        _write_csv(path, cols)

    def write_segments_csv(self, path: Path) -> None:
        s = self.segments
        names = np.asarray(self.cluster_names, dtype=object)
        cols = {c: s[c] for c in SEGMENT_COLUMNS}
        cols["cluster"] = names[s["cluster"]] if len(names) else s["cluster"]
        cols["job"] = segment_jobs(self.jobs["job_id"], self.jobs["stream"], s["job"])[0] if len(s["job"]) else s["job"]
        cols["kind"] = np.asarray(KIND_NAMES, dtype=object)[s["kind"]]
        _write_csv(path, cols)

    def write_batsim_jobs(self, path: Path, precision: int | None = None) -> None:
        """Replication 0's finished and rejected jobs as Batsim's ``_jobs.csv`` (evalys reads it:
        simengine.batsim), times at ``precision`` decimals (None: as simulated)."""
        write_batsim_jobs(self, path, precision)

    def write_npz(self, path: Path) -> None:
        arrays = {f"jobs_{k}": v for k, v in self.jobs.items()}
        arrays |= {f"segments_{k}": v for k, v in self.segments.items()}
        arrays |= {f"series_{k}": v for k, v in self.series.items()}
        # np.savez_compressed's zlib level 6 took a fifth of a command-line replay; level 1 is
        # about four times faster for a file a few per cent larger (np.load reads either)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
            for name, values in arrays.items():
                with archive.open(f"{name}.npy", "w", force_zip64=True) as fh:
                    np.lib.format.write_array(fh, np.asanyarray(values), allow_pickle=False)

    def write_swf(self, path: Path, precision: int | None = 0) -> None:
        """The simulated schedule of replication 0 as an SWF file other tools can read: times
        in integer seconds by default, as the SWF standard has them (``precision``: decimals;
        None: exact, as simulated)."""
        j = self.jobs
        first = j["replication"] == 0
        header = ["Version: 2.2", f"Computer: GridWeb simulation of {self.scenario.get('name')}",
                  f"Note: engine {self.engine_version}, scenario {self.scenario_hash[:16]}, seed {self.seed}",
                  f"MaxProcs: {sum(self.cluster_processors)}"]
        origins = {tuple(sorted(o.items())) for o in self.time_origins.values()}
        if len(origins) == 1:  # the replayed trace's time 0, when its streams agree on it
            header += [f"{k}: {v}" for k, v in sorted(origins.pop())]
        # the trace's users, groups and queues (SWF fields 12, 13, 15) where the jobs carry them
        ids = {k: j[k][first] for k in ("user", "group", "queue") if k in j}
        write_swf(path, job_id=j["job_id"][first], submit=j["submit"][first], wait=j["wait"][first],
                  runtime=(j["end"] - j["start"])[first], processors=j["processors"][first],
                  estimate=j["estimate"][first], status=swf_status(j["status"][first]),
                  header_comments=header, extra={"partition": j["cluster"][first] + 1, **ids}, precision=precision)


def warm_up_by_completions(cols: dict[str, np.ndarray], eligible: np.ndarray, completions: int,
                           t_warm: float) -> float:
    """Mark the first ``completions`` jobs to end (among rows ``eligible`` that ended; ties by
    row) as warm-up in ``cols["warmup"]``; return the warm-up's end: the later of ``t_warm`` and
    the last of those ends, when there were that many."""
    done_rows = np.flatnonzero(eligible & ~np.isnan(cols["end"]))
    by_end = done_rows[np.lexsort((done_rows, cols["end"][done_rows]))]
    first = by_end[:completions]
    cols["warmup"][first] = True
    if len(first) == completions:
        t_warm = max(t_warm, float(cols["end"][first[-1]]))
    return t_warm


def segment_series(segments: dict[str, np.ndarray], clusters, jobs: dict[str, np.ndarray],
                   t_stop: float) -> dict[str, np.ndarray]:
    """Time series from a schedule's Gantt segments (models that emit segments themselves):
    utilisation of all processors and of each cluster (``run`` segments only) and the queue of
    the job rows ``jobs`` (:func:`queue_series`) at SERIES_POINTS instants over [0, t_stop]."""
    t = np.linspace(0.0, max(t_stop, 1e-9), SERIES_POINTS)
    run = segments["kind"] == KIND_NAMES.index("run")
    w = segments["processors"].astype(float)
    out = {"time": t, "utilisation": active_sum(segments["t0"][run], segments["t1"][run], w[run], t)
           / max(sum(c.processors for c in clusters), 1)}
    for c, spec in enumerate(clusters):
        m = run & (segments["cluster"] == c)
        out[f"utilisation.{spec.name}"] = active_sum(segments["t0"][m], segments["t1"][m], w[m], t) / spec.processors
    out.update(queue_series(t, jobs["submit"], jobs["start"], jobs["processors"], jobs["cluster"],
                            [c.name for c in clusters]))
    return out


def measured_rows(jobs: dict[str, np.ndarray]) -> np.ndarray:
    """The rows the job metrics (mean wait, response, slowdowns, p95 wait, jobs_measured) average,
    by the rule most models use: past the warm-up, completed or killed, and not an advance
    reservation's row. Models with another population (the grid layer, KOALA) give their own
    ``measured`` column."""
    status = jobs["status"]
    keep = ~jobs["warmup"].astype(bool) & ((status == STATUS_COMPLETED) | (status == STATUS_KILLED))
    if "reservation" in jobs:
        keep &= jobs["reservation"] < 0
    return keep


def assemble_result(scenario, kept_jobs: list[dict[str, np.ndarray]], metric_values: list[dict[str, float]],
                    segments: dict[str, np.ndarray], series: dict[str, np.ndarray],
                    notes: list[str] = (), batch_half: dict[str, float] | None = None) -> Result:
    """The Result of a run, from what every model's replications produce.

    Parameters
    ----------
    scenario : Scenario
        The validated scenario (recorded with its hash, seed and the engine version).
    kept_jobs : list of dict
        The job rows kept (``run.keep_jobs``), in replication order; concatenated.
    metric_values : list of dict
        Each replication's scalar metrics; one :class:`Metric` (mean, 95% CI) per name.
    segments, series : dict
        Replication 0's Gantt segments and time series.
    notes : list of str
        Notes of every replication (repeats are dropped).
    batch_half : dict, optional
        Replication 0's batch-means half-widths of metrics that are not means over jobs
        (``utilisation``: the busy share of equal slices of its window); used with one replication.
    """
    jobs = kept_jobs[0] if len(kept_jobs) == 1 else {k: np.concatenate([j[k] for j in kept_jobs])
                                                     for k in kept_jobs[0]}
    if "measured" not in jobs:
        jobs["measured"] = measured_rows(jobs)
    names = sorted({k for m in metric_values for k in m})
    metrics = {k: Metric.from_values(k, [m.get(k, math.nan) for m in metric_values]) for k in names}
    if len(metric_values) == 1:  # no replications to compare: batch means of the measured jobs
        mine = np.flatnonzero((jobs["replication"] == 0) & jobs["measured"].astype(bool))
        mine = mine[np.argsort(jobs["submit"][mine], kind="stable")]
        for name, column in JOB_MEANS.items():
            if name in metrics and column in jobs:
                metrics[name] = metrics[name].with_batch_means(jobs[column][mine])
        for name, (column, q) in QUANTILES.items():
            if name in metrics and column in jobs:
                metrics[name] = metrics[name].with_batch_means(jobs[column][mine], q)
        for name, half in (batch_half or {}).items():
            if name in metrics:
                metrics[name] = metrics[name].with_batch_half(half)
    clusters = scenario.platform.clusters
    return Result(
        scenario=scenario.model_dump(mode="json"), scenario_hash=scenario_hash(scenario), seed=scenario.run.seed,
        engine_version=ENGINE_VERSION, cluster_names=[c.name for c in clusters],
        cluster_processors=[c.processors for c in clusters], jobs=jobs, segments=segments, metrics=metrics,
        series=series, replications=len(metric_values), notes=list(dict.fromkeys(notes)))


def _write_csv(path: Path, cols: dict[str, np.ndarray]) -> None:
    """CSV of equal-length columns; floats in shortest round-trip form, NaN as empty. Each column
    is turned into text at once (simengine.text_columns), not value by value."""
    with open(path, "wb") as fh:
        fh.write((",".join(cols) + "\n").encode("utf-8"))
        fh.write(csv_bytes([column_text(values) for values in cols.values()]))
