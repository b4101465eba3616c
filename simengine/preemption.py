"""Preemption policies: what happens to a running job that a higher-priority job (or an
advance reservation) takes the processors of (MODELS.md §6, docs/reservations.md).

Registered in :data:`simengine.registry.PREEMPTION`; a cluster names one as
``preemption: {name: suspend, params: {overhead: 60}}`` (default ``none``). Every entry's
implementation is a :class:`PreemptionMode`; :func:`preemption_mode` turns a validated
``PolicyRef`` (or its dict form) into one. Models other than the local schedulers (e.g.
KOALA's claiming) use the same registry, :func:`preemption_mode` and :func:`choose_victims`.

Modes
-----
``none``
    Nobody is preempted for a job. A job that overruns its estimate into an accepted
    advance reservation is still killed (reservations outrank every job).
``kill``
    The victim ends with status ``killed``; the part it ran is lost (a ``killed`` segment).
``requeue``
    The part it ran is lost (``killed`` segment); the job goes back to the queue and later
    restarts from scratch, taking ``overhead`` seconds more.
``suspend``
    The victim stops and keeps its checkpoint on its processors: it resumes on the *same*
    processors once they are free and it is its turn, with its remaining run time plus
    ``overhead``; the gap is a ``suspended`` segment.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from simengine.jit import njit
from simengine.registry import PREEMPTION, NoParams

__all__ = ["PreemptionMode", "OverheadParams", "preemption_mode", "choose_victims", "order_victims",
           "DEFAULT_PREEMPTION"]

#: The registry name a cluster gets when its scenario says nothing.
DEFAULT_PREEMPTION = "none"


class OverheadParams(BaseModel):
    """Parameters of the ``requeue`` and ``suspend`` modes."""

    model_config = ConfigDict(strict=True, extra="forbid")
    overhead: float = Field(
        0.0, ge=0,
        description="Seconds added to a preempted job's next run: to the remaining run time when a "
                    "suspended job resumes (suspend), or to the run time of a requeued job's restart "
                    "(requeue). The scheduler plans with it too (estimate + overhead).")


@dataclass(frozen=True)
class PreemptionMode:
    """How a cluster treats the jobs it preempts.

    Attributes
    ----------
    name : str
        Registry name (none, kill, requeue, suspend).
    preempts : bool
        Whether a higher-priority job may preempt lower-priority ones (False only for ``none``).
    restarts : bool
        The victim goes back to the queue and runs again from scratch (requeue).
    resumes : bool
        The victim keeps its progress and resumes on the same processors (suspend).
    overhead : float
        Seconds added to the victim's next run (requeue and suspend).
    """

    name: str
    preempts: bool
    restarts: bool
    resumes: bool
    overhead: float = 0.0

    @property
    def kills(self) -> bool:
        """Whether a victim ends for good (kill, and none when a reservation forces it)."""
        return not (self.restarts or self.resumes)


@PREEMPTION.register("none", NoParams, "No preemption (a job overrunning into a reservation is killed)")
def _none(params: Any = None) -> PreemptionMode:
    return PreemptionMode("none", False, False, False)


@PREEMPTION.register("kill", NoParams, "Kill: the victim ends, its work is lost")
def _kill(params: Any = None) -> PreemptionMode:
    return PreemptionMode("kill", True, False, False)


@PREEMPTION.register("requeue", OverheadParams, "Requeue: the victim restarts from scratch later (+overhead)")
def _requeue(params: OverheadParams) -> PreemptionMode:
    return PreemptionMode("requeue", True, True, False, float(params.overhead))


@PREEMPTION.register("suspend", OverheadParams,
                     "Suspend/resume: the victim resumes on the same processors (+overhead)")
def _suspend(params: OverheadParams) -> PreemptionMode:
    return PreemptionMode("suspend", True, False, True, float(params.overhead))


def preemption_mode(ref: Any) -> PreemptionMode:
    """The :class:`PreemptionMode` of a policy reference.

    Parameters
    ----------
    ref : PolicyRef, dict, str or None
        A validated ``PolicyRef`` (``name``, ``params``), its dict form, a bare name, or None
        (``none``).
    """
    if ref is None:
        name, params = DEFAULT_PREEMPTION, {}
    elif isinstance(ref, str):
        name, params = ref, {}
    elif isinstance(ref, dict):
        name, params = ref.get("name", DEFAULT_PREEMPTION), ref.get("params") or {}
    else:
        name, params = ref.name, ref.params
    entry = PREEMPTION.get(name)
    return entry.implementation(entry.validated(params))


@njit(cache=True)
def _victim_before(a, b, priority, started, seq):
    """Is candidate a taken before b: lower priority, else newer start, else lower ``seq``?"""
    if priority[a] != priority[b]:
        return priority[a] < priority[b]
    if started[a] != started[b]:
        return started[a] > started[b]
    return seq[a] < seq[b]


@njit(cache=True)
def order_victims(ids, priority, started, seq):
    """Sort the candidates ``ids`` (indices into the other arrays) in place into the order victims
    are taken in: lowest ``priority`` first, then newest start (``started``) first, then lowest
    ``seq`` (the order they started in, or were listed in). The one definition of that order: the
    event core (simengine.local.core) and :func:`choose_victims` (KOALA's claiming) both use it.
    A stable merge sort on that key (candidates are one cluster's running jobs: few)."""
    n = ids.shape[0]
    if n < 2:
        return
    tmp = np.empty(n, ids.dtype)
    src, dst = ids, tmp
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            a, b, w = lo, mid, lo
            while a < mid and b < hi:
                if _victim_before(src[b], src[a], priority, started, seq):  # b first only if strictly before
                    dst[w] = src[b]
                    b += 1
                else:
                    dst[w] = src[a]
                    a += 1
                w += 1
            while a < mid:
                dst[w] = src[a]
                a += 1
                w += 1
            while b < hi:
                dst[w] = src[b]
                b += 1
                w += 1
        src, dst = dst, src
        width *= 2
    if src is not ids:
        ids[:] = src


def choose_victims(candidates: Sequence[Any], priority: Callable[[Any], int], started: Callable[[Any], float],
                   enough: Callable[[list], bool], below: int | None = None) -> list | None:
    """The jobs to preempt: in :func:`order_victims`' order (lowest priority first, newest start
    first, then the order of ``candidates``), the shortest prefix after which ``enough(prefix)`` holds.

    Parameters
    ----------
    candidates : sequence
        Running jobs that may be preempted.
    priority, started : callables
        A candidate's priority and the start of its current run.
    enough : callable
        ``enough(victims)``: would the preemptor start now if these were preempted?
    below : int, optional
        Only candidates of priority strictly below this are taken (None: any).

    Returns
    -------
    list or None
        The victims in preemption order, or None when even all candidates would not do
        (then nobody is preempted).
    """
    pool = [c for c in candidates if below is None or priority(c) < below]
    if len(pool) > 1:
        ids = np.arange(len(pool))
        order_victims(ids, np.array([priority(c) for c in pool], np.float64),
                      np.array([started(c) for c in pool], np.float64), ids.copy())
        pool = [pool[i] for i in ids]
    for k in range(1, len(pool) + 1):
        if enough(pool[:k]):
            return pool[:k]
    return None
