"""The metrics of Klein & Pérez's Tables 1-2 (MODELS.md §7).

Per application: *reserved* = node-seconds held (sum of held duration x nodes, the CBF
view for CBF), *used* = node-seconds computed (the requested EP's area), *stretch* =
(held duration - requested duration) / requested duration, start (= waiting time, all
applications arrive at 0) and completion.

Per test (then min / avg / max over tests):

- ``waste`` % = (sum reserved - sum used) / sum used;
- ``reservation`` = sum reserved / the same test's sum reserved under CBF;
- ``utilisation`` % = sum used / (n_max x makespan);
- ``makespan`` = makespan / CBF's makespan;
- ``jct`` = mean completion / CBF's mean completion; ``jwt`` likewise for the start;
- ``stretches`` % = share of the test's applications whose held duration exceeds the
  requested one (never for CBF, whose rigid jobs are not stretched).

Per job (min / avg / max over all jobs of all tests: the paper's maxima, e.g. CBF job
waste 681 %, are single jobs, not per-test averages): ``job_stretch`` % and
``job_waste`` % = (reserved - used) / used.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simengine.evolving.generate import FlatWorkload
from simengine.evolving.schedule import FlatSchedule

#: (key, column title, unit) in the order of Table 1 (without the run time) and Table 2
TABLE1 = (("waste", "Waste", "%"), ("reservation", "Reservation", "relative"),
          ("utilisation", "Utilisation", "%"), ("makespan", "Makespan", "relative"))
TABLE2 = (("jct", "Avg. JCT", "relative"), ("jwt", "Avg. JWT", "relative"),
          ("stretches", "Stretches", "%"), ("job_stretch", "Job Stretch", "%"),
          ("job_waste", "Job Waste", "%"))
PER_JOB = ("job_stretch", "job_waste")


@dataclass
class AppValues:
    """Per-application values of one algorithm over a FlatWorkload of requested EPs."""

    reserved: np.ndarray
    used: np.ndarray
    stretch: np.ndarray  # fraction of the requested total duration
    stretched: np.ndarray  # bool
    start: np.ndarray
    end: np.ndarray


def app_values(requested: FlatWorkload, sched: FlatSchedule, rigid: bool) -> AppValues:
    """Per-application values; ``sched`` may be over the rigid view (CBF) of ``requested``."""
    napps = len(requested.app_off) - 1
    w = sched.workload
    owner = np.repeat(np.arange(napps), np.diff(w.app_off))
    held = sched.hold_end() - sched.hold
    reserved = np.bincount(owner, held * w.n, napps)
    rowner = np.repeat(np.arange(napps), np.diff(requested.app_off))
    used = np.bincount(rowner, requested.d * requested.n, napps)
    duration = np.bincount(rowner, requested.d, napps)
    if rigid:
        stretch = np.zeros(napps)
    else:
        stretch = (np.bincount(owner, held, napps) - duration) / duration
    stretched = stretch > 1e-9
    return AppValues(reserved, used, np.where(stretched, stretch, 0.0), stretched, sched.start, sched.end)


def _per_test(tid: np.ndarray, tests: int, x: np.ndarray, how: str) -> np.ndarray:
    if how == "sum":
        return np.bincount(tid, x, tests)
    if how == "mean":
        return np.bincount(tid, x, tests) / np.bincount(tid, None, tests)
    out = np.full(tests, -np.inf)
    np.maximum.at(out, tid, x)
    return out


def per_test_metrics(requested: FlatWorkload, v: AppValues, cbf: AppValues, n_max: int) -> dict[str, np.ndarray]:
    """Every metric of Tables 1-2: per test, or per job for :data:`PER_JOB`."""
    T = requested.tests
    tid = np.repeat(np.arange(T), np.diff(requested.test_off))

    def s(x, how="sum"):
        return _per_test(tid, T, x, how)

    R, U, mk = s(v.reserved), s(v.used), s(v.end, "max")
    with np.errstate(divide="ignore", invalid="ignore"):
        return {
            "waste": 100 * (R - U) / U,
            "reservation": R / s(cbf.reserved),
            "utilisation": 100 * U / (n_max * mk),
            "makespan": mk / s(cbf.end, "max"),
            "jct": s(v.end, "mean") / s(cbf.end, "mean"),
            "jwt": s(v.start, "mean") / s(cbf.start, "mean"),
            "stretches": 100 * s(v.stretched.astype(float), "mean"),
            "job_stretch": 100 * v.stretch,
            "job_waste": 100 * (v.reserved - v.used) / v.used,
        }


def summarise(values: dict[str, np.ndarray]) -> dict[str, tuple[float, float, float]]:
    """min / avg / max of each metric (NaN entries, e.g. 0/0 waiting times, left out)."""
    out = {}
    for k, x in values.items():
        x = x[np.isfinite(x)]
        out[k] = (float(x.min()), float(x.mean()), float(x.max())) if len(x) else (np.nan,) * 3
    return out
