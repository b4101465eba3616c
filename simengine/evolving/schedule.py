"""Algorithm 2 and the CBF baseline for one input, and for many tests at once.

:func:`schedule` takes a validated :class:`~simengine.evolving.models.EvolvingScenario`
and returns a :class:`Schedule`: for every application the *hold* intervals of its
stages (stage i holds ``stage_nodes[i]`` nodes on ``[holds[i], holds[i+1])``) and the
computation inside each hold (the first ``stage_work[i]`` seconds; the rest of a
stretched hold is held-but-idle time, waiting for the next stage's nodes, C1 of the
paper). :func:`schedule_flat` runs one algorithm over a :class:`FlatWorkload` of many
tests in one compiled call (the reproduction's path).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from simengine.evolving.generate import FlatWorkload
from simengine.evolving.kernels import plan_applications, plan_scratch, schedule_tests
from simengine.evolving import mapping
from simengine.evolving.models import ALGORITHMS, Algorithm, EvolvingScenario, load_evolving
from simengine.streaming import run_in_slices


@dataclass
class FlatSchedule:
    """Output of :func:`schedule_flat` for a FlatWorkload (the rigid one for CBF).

    ``hold[k]`` is the hold start of stage k (flat index, as in the workload);
    ``start[a]``/``end[a]`` the first hold start and the completion of application a.
    """

    workload: FlatWorkload
    hold: np.ndarray
    start: np.ndarray
    end: np.ndarray

    def hold_end(self) -> np.ndarray:
        """The hold end of every stage (the next stage's start, or the completion)."""
        out = np.empty_like(self.hold)
        out[:-1] = self.hold[1:]
        out[self.workload.app_off[1:] - 1] = self.end
        return out


def schedule_flat(w: FlatWorkload, algorithm: Algorithm | str, n_max: int = 100,
                  move_first_stage: bool = True, on_planned: Callable[[int, int], None] | None = None) -> FlatSchedule:
    """Schedule every test of ``w`` with ``algorithm`` (CBF: ``w`` is made rigid first).

    ``on_planned(stages, of)``: called between slices of applications (of about
    ``simengine.streaming.SLICE_SECONDS`` each, cut by :func:`~simengine.streaming.run_in_slices`
    as a simulation's slices of time are) with the stages planned so far and in all; it may raise
    to stop the plan. Without it every test is planned in one compiled call. The schedule is the
    same either way."""
    alg = ALGORITHMS[algorithm] if isinstance(algorithm, str) else algorithm
    if alg.rigid:
        w = w.rigid()
    hold = np.empty(len(w.d))
    start = np.empty(len(w.app_off) - 1)
    end = np.empty_like(start)
    if len(w.d) and int(w.n.max()) > n_max:
        raise ValueError(f"a stage needs {int(w.n.max())} nodes, more than n_max = {n_max}")
    args = (w.app_off, w.d, w.n, int(n_max), float(alg.stretch_limit), bool(alg.compact and not alg.rigid),
            bool(move_first_stage))
    if on_planned is None:
        schedule_tests(w.test_off, *args, hold, start, end)
        return FlatSchedule(w, hold, start, end)
    for t in range(len(w.test_off) - 1):
        first, last = int(w.test_off[t]), int(w.test_off[t + 1])
        bt, bv, rbt, rbv, h, rh = plan_scratch(int(w.app_off[last] - w.app_off[first]), w.app_off)
        app, m = first, 1  # the next application to plan, the EP's step count

        def advance(T: float) -> bool:  # (the slices' "time" counts applications; one at least each)
            nonlocal app, m
            b = last if T >= last else min(max(int(T), app + 1), last)
            m = plan_applications(app, b, *args, bt, bv, m, rbt, rbv, h, rh, hold, start, end)
            app = b
            return b == last

        def report(T: float) -> bool:
            on_planned(int(w.app_off[app]), len(w.d))
            return False

        run_in_slices(first, last, advance, report)
    return FlatSchedule(w, hold, start, end)


@dataclass
class Schedule:
    """The schedule of one input. Per application a (all lists are indexed by a):

    - ``requested[a]``: the requested EP, a list of (duration, nodes);
    - ``stage_nodes[a]``, ``stage_work[a]``: nodes held and seconds computed per held
      stage (the requested stages; for CBF one rigid stage of max nodes x total duration);
    - ``holds[a]``: the hold start of every held stage, then the completion.
    """

    n_max: int
    algorithm: Algorithm
    requested: list[list[tuple[float, int]]]
    stage_nodes: list[np.ndarray]
    stage_work: list[np.ndarray]
    holds: list[np.ndarray]
    names: list[str] = field(default_factory=list)
    release: str = "last_acquired"
    flat: FlatSchedule | None = None  # the one-test schedule this was read from (for the metrics)

    @property
    def applications(self) -> int:
        return len(self.holds)

    def start(self, a: int) -> float:
        return float(self.holds[a][0])

    def end(self, a: int) -> float:
        return float(self.holds[a][-1])

    @property
    def makespan(self) -> float:
        return max(self.end(a) for a in range(self.applications))

    def scheduled_ep(self, a: int) -> list[tuple[float, int]]:
        """The paper's scheduled EP: a leading (delay, 0) stage, then (held duration, nodes)."""
        h = self.holds[a]
        ep = [(float(h[0]), 0)] if h[0] > 0 else []
        return ep + [(float(h[i + 1] - h[i]), int(self.stage_nodes[a][i])) for i in range(len(h) - 1)]

    def reserved(self, a: int) -> float:
        """Node-seconds held by application a."""
        return float(np.dot(np.diff(self.holds[a]), self.stage_nodes[a]))

    def used(self, a: int) -> float:
        """Node-seconds application a computes (its requested EP's area)."""
        return float(sum(d * n for d, n in self.requested[a]))

    def resource_profile(self) -> tuple[np.ndarray, np.ndarray]:
        """The resource EP: busy nodes ``busy[k]`` on [times[k], times[k+1]); 0 after the last."""
        ts, vs = [], []
        for h, n in zip(self.holds, self.stage_nodes):
            ts += [h[:-1], h[1:]]
            vs += [n, -n]
        t = np.concatenate(ts)
        v = np.concatenate(vs)
        times, inv = np.unique(t, return_inverse=True)
        busy = np.cumsum(np.bincount(inv, weights=v, minlength=len(times))).round().astype(np.int64)
        keep = np.ones(len(times), bool)
        keep[1:] = busy[1:] != busy[:-1]  # one step per change of value
        return times[keep], busy[keep]

    def segments(self) -> dict[str, np.ndarray]:
        """Gantt segments (docs/output.md) from the node mapping of Algorithm 1."""
        return mapping.segments(self)


def schedule(scenario: EvolvingScenario | dict, on_planned: Callable[[int, int], None] | None = None) -> Schedule:
    """Schedule the applications of ``scenario`` in order with its algorithm (``on_planned``:
    progress, as for :func:`schedule_flat`)."""
    s = load_evolving(scenario)
    alg = s.policy
    requested = [[(st.duration, st.nodes) for st in app.stages] for app in s.applications]
    w = FlatWorkload.from_tests([requested])
    fs = schedule_flat(w, alg, s.n_max, s.move_first_stage, on_planned)
    rw = fs.workload
    holds, nodes, work = [], [], []
    for a in range(len(requested)):
        lo, hi = rw.app_off[a], rw.app_off[a + 1]
        holds.append(np.append(fs.hold[lo:hi], fs.end[a]))
        nodes.append(rw.n[lo:hi].copy())
        work.append(rw.d[lo:hi].copy())
    names = [app.name or f"app{a}" for a, app in enumerate(s.applications)]
    return Schedule(s.n_max, alg, requested, nodes, work, holds, names, s.release, fs)
