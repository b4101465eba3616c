"""Reservation admission in Cao's system: the decision RARS-HEFT takes for each workflow task when
its workflow arrives -- which cluster reserves it, and with which relaxed frame [EST, LFT]
(MODELS.md §6, docs/cao.md, docs/policies/reservation-admission.md).

A policy subclasses :class:`ReservationAdmission` and writes :meth:`~ReservationAdmission.admit`:

    admit(now, request, offers) -> Grant(cluster, est, lft)

``request`` (:class:`ReservationRequest`) is the task asking (processors, estimate, class, its
earliest start by eq. (6), its predecessors' reservations); ``offers`` holds one
:class:`ClusterOffer` per cluster: the start and finish that cluster's class plan predicts for the
task from its earliest start (§4.6's "reservation prediction"), with the plan itself
(:meth:`ClusterOffer.availability`, :meth:`ClusterOffer.jobs`) and other fits
(:meth:`ClusterOffer.fit`). The engine then queues the task on the granted cluster at its earliest
fit from max(EST, its predecessors' predicted finish + comm); compressions may slide it down to
EST; successors' earliest starts are computed from its LFT. Cao's reservations are best effort and
never refused (§4.2): a grant is required for every task.

The built-in ``earliest-lft`` (Cao's rule, eqs. 4-5, the cluster with the smallest LFT) runs
inside the compiled core (``compiled``); any other policy makes the core stop at each workflow's
arrival (core.ADMISSION_DUE) and :func:`admit_workflow` asks the policy task by task, in HEFT order.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

# (simengine.cao.core is imported where it is used: the scenario schema imports this module, and
# the compiled core's import would cost every command-line start)

import numpy as np

from simengine.cao.engine import EPS, CaoParams
from simengine.policy import PolicyError, PolicyKind, policy_raised, register
from simengine.registry import RESERVATION_ADMISSION

__all__ = ["ReservationAdmission", "ReservationRequest", "ClusterOffer", "Grant", "Predecessor", "RarsKnobs",
           "EarliestLft", "DEFAULT_ADMISSION", "admission_policy", "admit_workflow"]

#: the admission a rars-heft scenario gets unless it names another
DEFAULT_ADMISSION = "earliest-lft"


@dataclass(frozen=True)
class RarsKnobs:
    """RARS-HEFT's knobs of the run (rars-heft's params): slack portions ahead (eq. 5) and
    behind (eq. 4), the move-ahead factor, the non-type backfilling probabilities."""

    slpa: float
    slpb: float
    maf: float
    nbp_medium: float
    nbp_long: float

    @classmethod
    def of(cls, p: CaoParams) -> "RarsKnobs":
        return cls(p.slpa, p.slpb, p.maf, p.nbp_medium, p.nbp_long)


class Predecessor(NamedTuple):
    """A predecessor of the task asking, already reserved: its task index, cluster, LFT and the
    communication time of the edge."""

    task: int
    cluster: int
    lft: float
    comm: float


class ReservationRequest:
    """A workflow task asking for a reservation: ``workflow`` (index in the run), ``job_id`` (the
    workflow's), ``task`` (index in the workflow), ``submit`` (the workflow's arrival),
    ``processors``, ``estimate`` (EXC: its requested time), ``job_class`` (0 short, 1 medium,
    2 long), ``nbp`` (its class's non-type backfilling probability), ``earliest`` (ST_dep, eq. 6:
    max over predecessors of LFT + comm, or now for an entry task) and ``predecessors``."""

    __slots__ = ("workflow", "job_id", "task", "submit", "processors", "estimate", "job_class", "nbp", "earliest",
                 "predecessors")

    def __init__(self, workflow, job_id, task, submit, processors, estimate, job_class, nbp, earliest, predecessors):
        self.workflow, self.job_id, self.task, self.submit = workflow, job_id, task, submit
        self.processors, self.estimate, self.job_class, self.nbp = processors, estimate, job_class, nbp
        self.earliest, self.predecessors = earliest, predecessors

    def __repr__(self) -> str:
        return (f"ReservationRequest(job_id={self.job_id}, task={self.task}, processors={self.processors}, "
                f"estimate={self.estimate}, earliest={self.earliest})")


class ClusterOffer:
    """What one cluster offers the task: ``start`` and ``finish`` (ST, PRT: its class plan's
    earliest fit from ``request.earliest``, in real time); the plan on request."""

    __slots__ = ("cluster", "start", "finish", "_sim", "_row", "_cls")

    def __init__(self, cluster: int, start: float, finish: float, sim, row: int, cls: int):
        self.cluster, self.start, self.finish = cluster, start, finish
        self._sim, self._row, self._cls = sim, row, cls

    def fit(self, after: float) -> tuple[float, float]:
        """(start, finish) of the task's earliest fit on this cluster from ``after`` (real time)."""
        from simengine.cao import core  # (its compiled core loads only when a policy is asked)
        st, prt = core.offer(self._sim.state, self._row, self.cluster, float(after))
        return float(st), float(prt)

    def availability(self) -> tuple[np.ndarray, np.ndarray]:
        """The task's class plan here, as (times, free processors from each time on): the
        processors of the class layer not held by started or planned jobs (reservations included)."""
        from simengine.cao import core  # (its compiled core loads only when a policy is asked)
        return core.availability(self._sim.state, self.cluster, self._cls)

    def jobs(self) -> dict[str, np.ndarray]:
        """The class's jobs here: queued (in queue order, accepted reservations among them), then
        started ones: ``job`` (row), ``task`` (-1: a local job), ``processors``, ``start``, ``end``
        (planned, real time), ``started``."""
        from simengine.cao import core  # (its compiled core loads only when a policy is asked)
        j, a, b, run = core.class_jobs(self._sim.state, self.cluster, self._cls)
        return {"job": j, "task": self._sim.task[j], "processors": self._sim.n[j], "start": a, "end": b,
                "started": run}

    def __repr__(self) -> str:
        return f"ClusterOffer(cluster={self.cluster}, start={self.start}, finish={self.finish})"


class Grant(NamedTuple):
    """A reservation: the cluster and the relaxed frame [est, lft] (now <= est <= lft)."""

    cluster: int
    est: float
    lft: float


class ReservationAdmission(PolicyKind):
    """Subclass this, set ``name`` (``Params``, ``summary``) and write :meth:`admit`. One instance
    admits the workflows of one simulation (it may keep state). ``knobs``: the run's RARS-HEFT
    knobs (:class:`RarsKnobs`); ``clusters``, ``processors``: the grid (identical clusters)."""

    kind_registry = RESERVATION_ADMISSION
    kind_methods = ("admit",)

    def __init__(self, params, knobs: RarsKnobs, clusters: int, processors: int):
        self.params, self.knobs, self.clusters, self.processors = params, knobs, clusters, processors

    def admit(self, now: float, request: ReservationRequest, offers: list[ClusterOffer]) -> Grant:
        """The reservation ``request`` gets: a :class:`Grant` (or a (cluster, est, lft) tuple)."""
        raise NotImplementedError


@register
class EarliestLft(ReservationAdmission):
    """Cao's RARS-HEFT admission: on each cluster EST = ST - EXC*SLPA - MAF*NBP*(ST - now), clamped
    to now (eq. 5), LFT = PRT + EXC*SLPB (eq. 4); the cluster with the smallest LFT (ties: the lowest)."""

    name = DEFAULT_ADMISSION
    summary = ("Cao's RARS-HEFT: frame by eqs. (4)-(5) on every cluster, the smallest LFT wins (compiled, the "
               "default)")
    capabilities = ("compiled",)

    def admit(self, now, request, offers):
        k = self.knobs
        best = None
        for o in offers:
            est = max(o.start - request.estimate * k.slpa - k.maf * request.nbp * (o.start - now), now)
            lft = o.finish + request.estimate * k.slpb
            if best is None or lft < best.lft - EPS:
                best = Grant(o.cluster, est, lft)
        return best


def admission_policy(ref: dict | None, p: CaoParams) -> ReservationAdmission | None:
    """The policy instance a run asks (``ref``: rars-heft's validated ``admission``; None: the
    default), or None when the compiled core admits by itself."""
    ref = ref or {"name": DEFAULT_ADMISSION, "params": {}}
    entry = RESERVATION_ADMISSION.get(ref["name"])
    if "compiled" in entry.capabilities:
        return None
    return entry.implementation(entry.validated(ref.get("params")), RarsKnobs.of(p), p.clusters, p.processors)


def admit_workflow(sim, policy: ReservationAdmission) -> None:
    """Admit the tasks of the workflow the core stopped for (ADMISSION_DUE), in HEFT order: each
    task's request and offers to ``policy``, its grant to the core; then the clusters dispatch."""
    from simengine.cao import core  # (its compiled core loads only when a policy is asked)
    s = sim.state
    w, now = core.admission_begin(s)
    w, now = int(w), float(now)
    first = int(sim.workflow_first[w])
    name = policy.name
    for r in range(int(sim.workflow_tasks[w])):
        row = int(sim.wf_order[first - sim.nlocal + r])
        st_dep, exc, cls, nbp = core.task_request(s, row)
        st, prt = core.offers(s, row, st_dep)
        preds = tuple(Predecessor(int(sim.task[q]), int(sim.cluster[q]), float(sim.lft[q]), float(c))
                      for q, c in sim.preds_of(row))
        task = int(sim.task[row])
        request = ReservationRequest(w, int(sim.job_id[row]), task, float(sim.submit[row]), int(sim.n[row]),
                                     float(exc), int(cls), float(nbp), float(st_dep), preds)
        offers = [ClusterOffer(ci, a, b, sim, row, int(cls)) for ci, (a, b) in enumerate(zip(st.tolist(), prt.tolist()))]
        try:
            got = policy.admit(now, request, offers)
        except Exception as exc_:  # noqa: BLE001 - the researcher's code: any failure
            raise policy_raised(name, f"admit() for task {task} of workflow {request.job_id} at t={now:g}",
                                exc_) from exc_
        ci, est, lft = _checked(name, got, request, now, sim.params.clusters)
        core.grant(s, row, ci, est, lft, float(st[ci]))
    core.admission_end(s)


def _checked(name: str, got, request: ReservationRequest, now: float, clusters: int) -> tuple[int, float, float]:
    where = f"task {request.task} of workflow {request.job_id} at t={now:g}"
    if got is None:
        raise PolicyError(f"{name}: refused {where}; Cao's reservations are best effort and never refused "
                          f"(grant a later frame instead)")
    try:
        ci, est, lft = got
    except (TypeError, ValueError):
        raise PolicyError(f"{name}: answered {got!r} for {where}, not a Grant(cluster, est, lft)") from None
    if not (isinstance(ci, (int, np.integer)) and not isinstance(ci, bool) and 0 <= ci < clusters):
        raise PolicyError(f"{name}: {where} was granted cluster {ci!r}, not a cluster index 0..{clusters - 1}")
    try:
        est, lft = float(est), float(lft)
    except (TypeError, ValueError):
        raise PolicyError(f"{name}: {where} was granted the frame [{est!r}, {lft!r}], not two numbers") from None
    if not (math.isfinite(est) and math.isfinite(lft) and now <= est <= lft):
        raise PolicyError(f"{name}: {where} was granted the frame [{est:g}, {lft:g}]; a frame must have "
                          f"now ({now:g}) <= est <= lft, both finite")
    return int(ci), est, lft
