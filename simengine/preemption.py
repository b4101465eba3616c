"""Preemption policies: what happens to a running job that a higher-priority job (or an
advance reservation) takes the processors of (MODELS.md §6, docs/reservations.md).

Registered in :data:`simengine.registry.PREEMPTION`; a cluster names one as
``preemption: {name: suspend, params: {overhead: 60}}`` (default ``none``). Every entry's
implementation is a :class:`PreemptionMode`; :func:`preemption_mode` turns a validated
``PolicyRef`` (or its dict form) into one. Models other than the local schedulers (e.g.
KOALA's claiming) use the same registry, :func:`preemption_mode` and :func:`choose_victims`.

Which running jobs a preemption takes, and in what order, is a cluster's *victim choice*
(``victims: {name: ...}``, registry :data:`simengine.registry.VICTIMS`, kind
:class:`VictimChoice`, docs/policies/victim-choice.md). The built-in
``lowest-priority-newest`` (the default) is :func:`order_victims`, compiled into the event core;
a Python one makes fcfs and easy clusters run their plain-Python twins (simengine.local.twins),
which take the victims from ``cluster.victims``.

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
from typing import Any, Callable, Iterable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from simengine.jit import njit
from simengine.policy_kind import PolicyKind, register
from simengine.policy_types import Job, PolicyError, policy_raised
from simengine.registry import PREEMPTION, VICTIMS, NoParams

__all__ = ["PreemptionMode", "OverheadParams", "preemption_mode", "choose_victims", "order_victims",
           "DEFAULT_PREEMPTION", "VictimChoice", "LowestPriorityNewest", "victim_choice", "ordered_victims",
           "DEFAULT_VICTIMS", "VICTIMS"]

#: The registry name a cluster gets when its scenario says nothing.
DEFAULT_PREEMPTION = "none"
#: The victim choice of a cluster whose scenario names none: the event core's own order.
DEFAULT_VICTIMS = "lowest-priority-newest"


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
    name, params = _name_and_params(ref, DEFAULT_PREEMPTION)
    entry = PREEMPTION.get(name)
    return entry.implementation(entry.validated(params))


def _name_and_params(ref: Any, default: str) -> tuple[str, Any]:
    """(name, params) of a PolicyRef, its dict form, a bare name or None (``default``)."""
    if ref is None:
        return default, {}
    if isinstance(ref, str):
        return ref, {}
    if isinstance(ref, dict):
        return ref.get("name", default), ref.get("params") or {}
    return ref.name, ref.params


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


def _in_built_in_order(pool: list, priority: Callable[[Any], int], started: Callable[[Any], float]) -> list:
    """``pool`` in :func:`order_victims`' order (its listing order breaks the last ties)."""
    if len(pool) < 2:
        return pool
    ids = np.arange(len(pool))
    order_victims(ids, np.array([priority(c) for c in pool], np.float64),
                  np.array([started(c) for c in pool], np.float64), ids.copy())
    return [pool[i] for i in ids]


def choose_victims(candidates: Sequence[Any], priority: Callable[[Any], int], started: Callable[[Any], float],
                   enough: Callable[[list], bool], below: int | None = None,
                   order: Callable[[list], Iterable] | None = None) -> list | None:
    """The jobs to preempt: in :func:`order_victims`' order (lowest priority first, newest start
    first, then the order of ``candidates``) -- or ``order``'s -- the shortest prefix after which
    ``enough(prefix)`` holds.

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
    order : callable, optional
        ``order(pool)``: the candidates left (a list, in the order of ``candidates``) in the order
        to take them, leaving out any never to take (None: the built-in order).

    Returns
    -------
    list or None
        The victims in preemption order, or None when even all candidates would not do
        (then nobody is preempted).
    """
    pool = [c for c in candidates if below is None or priority(c) < below]
    pool = _in_built_in_order(pool, priority, started) if order is None else list(order(pool))
    for k in range(1, len(pool) + 1):
        if enough(pool[:k]):
            return pool[:k]
    return None


# ---- victim choice: which running jobs a preemption takes, in what order ---------------------------

class VictimChoice(PolicyKind):
    """Which running jobs a preemption takes, in what order (docs/policies/victim-choice.md):
    subclass this, set ``name`` (``Params``, ``summary``) and write :meth:`order`. A cluster names
    one as ``victims: {name: ...}`` beside its ``preemption``. When a waiting job cannot start
    now, the scheduler asks for the order and preempts the shortest prefix of it that lets the
    job start now (nobody, when even all of it would not do). One instance serves one cluster of
    one replication (it may keep state); ``self.cluster`` is the cluster's view
    (simengine.local.external.Cluster: ``processors``, ``preemption`` -- what a victim loses --,
    ``allocation(job)``, ``queue``, ...)."""

    kind_registry = VICTIMS
    kind_methods = ("order",)

    def __init__(self, params: BaseModel, cluster):
        self.params, self.cluster = params, cluster

    def order(self, now: float, preemptor: Job | None, candidates: list[Job]) -> Iterable[Job]:
        """The ``candidates`` to take, in the order to take them; leave out any that must not be
        taken. ``preemptor``: the waiting job to start (None when the caller named none);
        ``candidates`` (never empty): the running jobs of lower priority than it, in the order they started
        (``start``, ``plan``, ``expected_end``, ``size``, ``priority`` ...; jobs ending at this
        very instant are not among them). The list is the policy's: it may sort it in place."""
        raise NotImplementedError


@register
class LowestPriorityNewest(VictimChoice):
    """Lowest priority first, then the newest start, then the order they started in (the
    built-in order: :func:`order_victims`, which the event core applies itself)."""

    name = DEFAULT_VICTIMS
    summary = ("Lowest priority first, then the newest start, then the order they started in (the default; "
               "compiled into the event core)")
    capabilities = ("compiled",)

    def order(self, now, preemptor, candidates):
        return _in_built_in_order(candidates, lambda j: j.priority, lambda j: j.start)


def victim_choice(ref: Any) -> tuple[type[VictimChoice], BaseModel] | None:
    """The victim choice a cluster's ``victims`` names (a PolicyRef, its dict form, a bare name or
    None: the default), as (policy class, validated parameters) -- or None when it is the event
    core's own order (capability ``compiled``), which needs no Python call."""
    name, params = _name_and_params(ref, DEFAULT_VICTIMS)
    entry = VICTIMS.get(name)
    if "compiled" in entry.capabilities:
        return None
    return entry.implementation, entry.validated(params)


def ordered_victims(choice: VictimChoice, now: float, preemptor: Job | None, candidates: list[Job]) -> list[Job]:
    """``choice.order(...)``, checked: every job it names is one of ``candidates``, once (a
    :class:`PolicyError` naming the policy, the moment and the job, otherwise). Without
    candidates the policy is not asked (nobody can be preempted)."""
    if not candidates:
        return []
    for_whom = f" for job {preemptor.id}" if preemptor is not None else ""
    try:
        answer = list(choice.order(now, preemptor, list(candidates)))
    except Exception as exc:  # noqa: BLE001 - the researcher's code: any failure
        raise policy_raised(choice.name, f"order() at t={now:g}{for_whom} ({len(candidates)} candidates)",
                            exc) from exc
    allowed = {id(job) for job in candidates}
    seen: set[int] = set()
    for job in answer:
        if id(job) not in allowed:
            raise PolicyError(f"{choice.name}: at t={now:g}, ordering victims{for_whom}, it named {job!r}, which "
                              f"is not one of the {len(candidates)} candidates (running jobs of lower priority)")
        if id(job) in seen:
            raise PolicyError(f"{choice.name}: at t={now:g}, ordering victims{for_whom}, it named job {job.id} "
                              f"twice")
        seen.add(id(job))
    return answer
