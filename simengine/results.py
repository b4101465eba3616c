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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from simengine.gantt import KIND_NAMES, SEGMENT_COLUMNS
from simengine.workload import STATUS_COMPLETED, STATUS_KILLED, STATUS_NAMES

#: Version of the output contract; bump when a column or key changes meaning.
OUTPUT_VERSION = 1

JOB_COLUMNS = ("job_id", "replication", "stream", "cluster", "submit", "start", "end", "processors",
               "runtime", "estimate", "wait", "response", "slowdown", "bounded_slowdown", "status", "warmup")

#: Slowdown threshold (s) for the bounded slowdown, as is usual in the literature.
BOUNDED_SLOWDOWN_TAU = 10.0

#: Points per time series.
SERIES_POINTS = 400


@dataclass
class Metric:
    """A named scalar: mean over replications, 95% CI (t distribution), and each replication's value."""

    name: str
    mean: float
    ci_low: float | None
    ci_high: float | None
    values: list[float]

    @classmethod
    def from_values(cls, name: str, values: list[float]) -> "Metric":
        v = np.asarray(values, dtype=float)
        v = v[~np.isnan(v)]
        if len(v) == 0:
            return cls(name, math.nan, None, None, list(values))
        mean = float(v.mean())
        if len(v) < 2:
            return cls(name, mean, None, None, list(values))
        half = float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))
        return cls(name, mean, mean - half, mean + half, [float(x) for x in values])

    @property
    def half_width(self) -> float | None:
        return None if self.ci_high is None else (self.ci_high - self.ci_low) / 2

    def as_dict(self) -> dict[str, Any]:
        clean = [None if (isinstance(x, float) and math.isnan(x)) else x for x in self.values]
        return {"mean": None if math.isnan(self.mean) else self.mean, "ci_low": self.ci_low,
                "ci_high": self.ci_high, "half_width": self.half_width, "values": clean}


def replication_metrics(jobs: dict[str, np.ndarray], held_until: np.ndarray, capacity: int,
                        window: tuple[float, float]) -> dict[str, float]:
    """Metrics of one replication over its measured jobs (not warm-up, finished).

    ``window`` is the measurement interval for utilisation, ``held_until`` when each
    started job gave its processors back (its end, or the stop time), ``capacity`` the
    processors counted.
    """
    measured = ~jobs["warmup"] & np.isin(jobs["status"], (STATUS_COMPLETED, STATUS_KILLED))
    n = int(measured.sum())
    out: dict[str, float] = {"jobs_measured": float(n)}
    if n:
        for key in ("wait", "response", "slowdown", "bounded_slowdown"):
            out[f"mean_{key}"] = float(np.nanmean(jobs[key][measured])) if key == "slowdown" \
                else float(jobs[key][measured].mean())
        out["max_response"] = float(jobs["response"][measured].max())
        out["p95_wait"] = float(np.percentile(jobs["wait"][measured], 95))
    else:
        for key in ("mean_wait", "mean_response", "mean_slowdown", "mean_bounded_slowdown", "max_response",
                    "p95_wait"):
            out[key] = math.nan
    t0, t1 = window
    started = ~np.isnan(jobs["start"])
    if t1 > t0 and capacity > 0:
        s = np.clip(jobs["start"][started], t0, t1)
        e = np.clip(held_until[started], t0, t1)
        busy = float(((e - s) * jobs["processors"][started]).sum())
        out["utilisation"] = busy / (capacity * (t1 - t0))
        out["throughput"] = n / (t1 - t0)
    else:
        out["utilisation"] = out["throughput"] = math.nan
    out["makespan"] = float(np.nanmax(held_until) - np.nanmin(jobs["submit"])) if started.any() else math.nan
    return out


def cluster_utilisation(jobs: dict[str, np.ndarray], held_until: np.ndarray, processors: np.ndarray,
                        window: tuple[float, float]) -> np.ndarray:
    """Utilisation of each cluster over ``window`` (busy processor-seconds / capacity)."""
    t0, t1 = window
    if not t1 > t0:
        return np.full(len(processors), math.nan)
    started = ~np.isnan(jobs["start"])
    busy = (np.clip(held_until[started], t0, t1) - np.clip(jobs["start"][started], t0, t1)) \
        * jobs["processors"][started]
    per = np.bincount(jobs["cluster"][started], weights=busy, minlength=len(processors))
    return per / (processors * (t1 - t0))


def time_series(jobs: dict[str, np.ndarray], held_until: np.ndarray, capacity: int, t_end: float,
                points: int = SERIES_POINTS):
    """Utilisation (busy / capacity) and queue length sampled at ``points`` instants in [0, t_end]."""
    t = np.linspace(0.0, max(t_end, 1e-9), points)
    started = ~np.isnan(jobs["start"])
    starts, ends, procs = jobs["start"][started], held_until[started], jobs["processors"][started]

    def count_active(on, off, weight):
        on_sorted = np.argsort(on)
        off_sorted = np.argsort(off)
        cum_on = np.concatenate([[0], np.cumsum(weight[on_sorted])])
        cum_off = np.concatenate([[0], np.cumsum(weight[off_sorted])])
        return cum_on[np.searchsorted(on[on_sorted], t, side="right")] - \
            cum_off[np.searchsorted(off[off_sorted], t, side="right")]

    busy = count_active(starts, ends, procs.astype(float))
    submitted = jobs["submit"]
    began = np.where(np.isnan(jobs["start"]), np.inf, jobs["start"])
    queue = count_active(submitted, began, np.ones(len(submitted)))
    return {"time": t, "utilisation": busy / max(capacity, 1), "queue_length": queue}


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

    def status_counts(self) -> dict[str, int]:
        codes, counts = np.unique(self.jobs["status"], return_counts=True)
        out = {name: 0 for name in STATUS_NAMES}
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
        }

    # ---- writers -------------------------------------------------------------------------
    def write(self, out_dir: str | os.PathLike, swf: bool = True) -> Path:
        """Write jobs.csv, segments.csv, summary.json, scenario.json, result.npz and
        schedule.swf into ``out_dir``. Files appear whole or not at all: everything is
        written into a temporary folder beside ``out_dir`` and moved in at the end."""
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
                self.write_swf(tmp / "schedule.swf")
            out.mkdir(exist_ok=True)
            for f in tmp.iterdir():
                os.replace(f, out / f.name)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return out

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
        _write_csv(path, cols)

    def write_segments_csv(self, path: Path) -> None:
        s = self.segments
        names = np.asarray(self.cluster_names, dtype=object)
        cols = {c: s[c] for c in SEGMENT_COLUMNS}
        cols["cluster"] = names[s["cluster"]] if len(names) else s["cluster"]
        cols["job"] = self.jobs["job_id"][s["job"]] if len(s["job"]) else s["job"]
        cols["kind"] = np.asarray(KIND_NAMES, dtype=object)[s["kind"]]
        _write_csv(path, cols)

    def write_npz(self, path: Path) -> None:
        arrays = {f"jobs_{k}": v for k, v in self.jobs.items()}
        arrays |= {f"segments_{k}": v for k, v in self.segments.items()}
        arrays |= {f"series_{k}": v for k, v in self.series.items()}
        np.savez_compressed(path, **arrays)

    def write_swf(self, path: Path) -> None:
        """The simulated schedule of replication 0 as an SWF file other tools can read."""
        from simengine.traces import swf_status, write_swf

        j = self.jobs
        first = j["replication"] == 0
        header = ["Version: 2.2", f"Computer: GridWeb simulation of {self.scenario.get('name')}",
                  f"Note: engine {self.engine_version}, scenario {self.scenario_hash[:16]}, seed {self.seed}",
                  f"MaxProcs: {sum(self.cluster_processors)}"]
        write_swf(path, job_id=j["job_id"][first], submit=j["submit"][first], wait=j["wait"][first],
                  runtime=(j["end"] - j["start"])[first], processors=j["processors"][first],
                  estimate=j["estimate"][first], status=swf_status(j["status"][first]),
                  header_comments=header, extra={"partition": j["cluster"][first] + 1})


def _write_csv(path: Path, cols: dict[str, np.ndarray]) -> None:
    """Fast CSV of equal-length columns; floats in shortest round-trip form, NaN as empty."""
    names = list(cols)
    text_cols = []
    for name in names:
        v = np.asarray(cols[name])
        if v.dtype.kind == "f":
            # repr is the shortest text that reads back as the same float
            text_cols.append(np.array(["" if x != x else repr(x) for x in v.tolist()], dtype=object))
        else:
            text_cols.append(v.astype(str).astype(object))
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(",".join(names) + "\n")
        if len(text_cols[0]):
            rows = text_cols[0]
            for c in text_cols[1:]:
                rows = rows + "," + c
            fh.write("\n".join(rows.tolist()))
            fh.write("\n")
