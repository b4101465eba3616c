"""Policy registries: one per kind; a scenario names a policy and passes parameters.

A new policy is one module that defines a pydantic parameter model and registers
its implementation here; the schema, the CLI and the web forms pick it up from the
registry, nothing else changes (the scikit-learn way: estimators that all look alike).
Each entry states its capabilities (CAPABILITIES); the engine's checks read them and the
conformance suite (tests/simengine/test_registry_conformance.py) runs every entry, so a new
one is tested by being registered.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict


class NoParams(BaseModel):
    """Parameter model for a policy that takes none."""

    model_config = ConfigDict(strict=True, extra="forbid")


#: What an entry can do beyond its registry's basic contract.
CAPABILITIES = {
    "compiled": "a numba kernel (it releases the GIL)",
    "event_driven": "also simulated by the event-driven cluster (simengine/local), so it runs with advance "
                    "reservations, job priorities and preemption",
    "model": "stands for a model family of its own (simengine.models) or a part of one, not a policy "
             "object the engine calls",
    "serial": "a local scheduler of one-processor jobs only: a scenario that can send its cluster larger jobs is "
              "refused before it runs",
    "stateful": "a site-allocation policy that looks at the sites' state at each decision: simulated "
                "together with the LWR sites, in one compiled pass (simengine.grid_lwr) or event by event "
                "around a Python policy (simengine.site_state)",
}


@dataclass(frozen=True)
class Entry:
    name: str
    params: type[BaseModel]
    implementation: Any
    summary: str
    capabilities: frozenset[str] = frozenset()

    def validated(self, params: BaseModel | dict | None) -> BaseModel:
        """``params`` as this entry's parameter model (a dict or None validated, defaults filled in)."""
        return params if isinstance(params, self.params) else self.params.model_validate(params or {})


@runtime_checkable
class LocalScheduler(Protocol):
    """What LOCAL_SCHEDULERS holds: called with one cluster's jobs it returns their schedule
    (simengine.schedulers.base.ClusterSchedule); ``steps`` gives the same schedule in slices of
    simulated time (ClusterSteps), which the live Gantt drives."""

    def __call__(self, submit, runtime, estimate, size, processors, params, horizon=...): ...

    steps: Callable[..., Any]


@runtime_checkable
class SiteAllocation(Protocol):
    """What SITE_ALLOCATION holds: called as ``(jobs, processors, params, rng)`` it returns a
    cluster index per job (a static policy); a ``stateful`` one instead offers a ``stepper``
    that simulates it with the sites (simengine.site_allocation, simengine.site_state)."""

    def __call__(self, jobs, processors, params, rng): ...


@runtime_checkable
class GridPlacement(Protocol):
    """What GRID_PLACEMENT holds: a class (simengine.policy.PlacementPolicy) instantiated as
    ``(params, grid)`` once per simulation, whose ``place(job, idle)`` returns a cluster per
    component (or a (cluster, file site) pair), or None when the job does not fit now. A
    ``compiled`` one also has the ``code`` the co-allocation kernel switches on."""

    def __call__(self, params, grid): ...

    place: Callable[..., Any]


@runtime_checkable
class Preemption(Protocol):
    """What PREEMPTION holds: called with its validated parameters it returns the
    simengine.preemption.PreemptionMode the engines apply to a victim."""

    def __call__(self, params): ...


@runtime_checkable
class ReservationAdmission(Protocol):
    """What RESERVATION_ADMISSION holds: a class (simengine.cao.admission.ReservationAdmission)
    instantiated as ``(params, knobs, clusters, processors)`` once per simulation, whose
    ``admit(now, request, offers)`` grants a workflow task its reservation (a cluster and a frame).
    A ``compiled`` one is what Cao's compiled core does by itself (its fast path)."""

    def __call__(self, params, knobs, clusters, processors): ...

    admit: Callable[..., Any]


@runtime_checkable
class Claiming(Protocol):
    """What CLAIMING holds: a class (simengine.grid.claiming.ClaimingPolicy) instantiated as
    ``(params, koala)`` once per KOALA simulation, whose ``claim(now, job, grid)`` claims a placed
    job's processors at each claiming try and says what follows a try that did not claim them all."""

    def __call__(self, params, koala): ...

    claim: Callable[..., Any]


@runtime_checkable
class VictimChoice(Protocol):
    """What VICTIMS holds: a class (simengine.preemption.VictimChoice) instantiated as ``(params,
    cluster)`` once per cluster of a replication, whose ``order(now, preemptor, candidates)`` lists
    the running jobs a preemption may take, in the order it takes them. A ``compiled`` one is the
    event core's own order (simengine.preemption.order_victims), which the compiled passes apply
    themselves."""

    def __call__(self, params, cluster): ...

    order: Callable[..., Any]


def _members(protocol: type) -> list[str]:
    """What ``protocol`` requires: its methods (a call included) and annotated attributes."""
    own = vars(protocol)
    return [m for m, v in own.items() if callable(v) and (m == "__call__" or not m.startswith("_"))] \
        + list(own.get("__annotations__", {}))


class Registry:
    """Name -> (parameter model, implementation) for one kind of policy. ``protocol``: what an
    implementation must offer (checked when it registers, unless its entry is a ``model``);
    without one, every entry must be a ``model``: such a policy is a part of a model family
    (simengine.models), and a new one is a new model, not a new entry."""

    def __init__(self, kind: str, protocol: type | None = None):
        self.kind, self.protocol = kind, protocol
        self._entries: dict[str, Entry] = {}

    def register(self, name: str, params: type[BaseModel] = NoParams, summary: str = "",
                 capabilities: tuple[str, ...] = ()) -> Callable:
        unknown = set(capabilities) - set(CAPABILITIES)
        if unknown:
            raise ValueError(f"{self.kind} {name!r}: unknown capabilities {sorted(unknown)}; known: "
                             f"{', '.join(CAPABILITIES)}")

        def decorate(implementation: Any) -> Any:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            if "model" not in capabilities:
                if self.protocol is None:
                    raise TypeError(f"{self.kind} {name!r}: a {self.kind} is part of a model family; register "
                                    f"it with capabilities=('model',) beside its model (simengine.models)")
                if not isinstance(implementation, self.protocol):
                    lacks = ", ".join("a call" if m == "__call__" else f".{m}" for m in _members(self.protocol)
                                      if not hasattr(implementation, m))
                    raise TypeError(f"{self.kind} {name!r}: its implementation lacks {lacks} "
                                    f"({self.protocol.__module__}.{self.protocol.__name__})")
            doc = summary or (implementation.__doc__ or "").strip().split("\n")[0]
            self._entries[name] = Entry(name, params, implementation, doc, frozenset(capabilities))
            return implementation

        return decorate

    def get(self, name: str) -> Entry:
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "(none)"
            raise KeyError(f"unknown {self.kind} {name!r}; known: {known}") from None

    def names(self) -> list[str]:
        return sorted(self._entries)

    def with_capability(self, capability: str) -> list[str]:
        """The names of the entries that have ``capability``."""
        if capability not in CAPABILITIES:
            raise KeyError(f"unknown capability {capability!r}")
        return [name for name in self.names() if capability in self._entries[name].capabilities]

    def __contains__(self, name: str) -> bool:
        return name in self._entries


LOCAL_SCHEDULERS = Registry("local scheduler", LocalScheduler)
SITE_ALLOCATION = Registry("site allocation policy", SiteAllocation)
#: Grid layer (simengine.grid): where a global job's components go (placement), and how start
#: deadlines are met (placement tries, claiming, Wait-X, GP/LP: the deadline policy, a model part).
GRID_PLACEMENT = Registry("placement policy", GridPlacement)
DEADLINE_POLICY = Registry("deadline policy")
#: What happens to a running job another job (or an advance reservation) preempts:
#: none, kill, requeue, suspend (simengine.preemption, docs/reservations.md).
PREEMPTION = Registry("preemption policy", Preemption)
#: How workflow grid jobs are made and placed with reservations: none, rars-heft (Cao's
#: relaxed reservations, simengine.cao.scheduler, docs/cao.md).
WORKFLOW_SCHEDULING = Registry("workflow scheduling policy")
#: Which cluster and which relaxed frame [EST, LFT] each workflow task's reservation gets
#: (rars-heft's ``admission``; simengine.cao.admission, docs/policies/reservation-admission.md).
RESERVATION_ADMISSION = Registry("reservation admission policy", ReservationAdmission)

#: every registry, in the order `python -m simengine schedulers` lists them
REGISTRIES = (LOCAL_SCHEDULERS, SITE_ALLOCATION, GRID_PLACEMENT, DEADLINE_POLICY, PREEMPTION, WORKFLOW_SCHEDULING,
              RESERVATION_ADMISSION)
#: KOALA: how a placed job's processors are claimed before its start time (simengine.grid.claiming,
#: docs/policies/claiming.md)
CLAIMING = Registry("claiming policy", Claiming)
REGISTRIES += (CLAIMING,)
#: Which running jobs a preemption takes, in what order: a cluster's ``victims`` (simengine.preemption,
#: docs/policies/victim-choice.md)
VICTIMS = Registry("victim choice", VictimChoice)
REGISTRIES += (VICTIMS,)
