"""Scenario fields of the co-allocation grid layer (Ballier et al., MODELS.md §3).

* :class:`CoallocatedJobs` -- the fields of a stream of global co-allocated jobs
  (``kind: coallocated`` in ``workload.streams``): Poisson arrivals, ``components`` per
  job, one ``size`` shared by every component, a ``runtime`` and a relative start
  ``deadline`` drawn uniformly on [min, max]. :mod:`simengine.scenario` mixes it into
  its ``SyntheticStream`` as ``CoallocatedStream``.
* the grid policies, registered by name: ``worst-fit`` in
  :data:`~simengine.registry.GRID_PLACEMENT` and ``rpp`` (the Repeated Placement
  Policy with Wait-X and GP/LP) in :data:`~simengine.registry.DEADLINE_POLICY`. Every
  decision MODELS.md §3 takes where the paper is silent is a parameter here, with the
  decision as its default.
* :func:`grid_problems` -- the checks that relate a co-allocated stream to the rest of
  the scenario (component sizes against clusters, local schedulers, stop rule), run by
  the scenario's cross-check; it also fills in the default policies.

This module never imports :mod:`simengine.scenario` (which imports it).
Field reference: docs/grid.md.
"""
from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from simengine.distributions import Distribution, Uniform, processor_count_max, processor_count_mean
from simengine.registry import DEADLINE_POLICY, GRID_PLACEMENT

__all__ = [
    "StartDeadline",
    "CoallocatedJobs",
    "WorstFitParams",
    "RPPParams",
    "grid_problems",
    "is_coallocation",
    "PLACEMENT_CODES",
]

#: The error type :func:`simengine.scenario.load_scenario` unpacks into one error per
#: (sub-path, message) problem (``simengine.scenario._PROBLEMS``).
_PROBLEMS = "scenario_problems"


def _problems(items: list[tuple[tuple, str]]) -> PydanticCustomError:
    message = "; ".join(f"{'.'.join(map(str, p))}: {m}" if p else m for p, m in items)
    return PydanticCustomError(_PROBLEMS, "{message}", {"message": message, "problems": items})


class StartDeadline(BaseModel):
    """Relative start deadline D - S (seconds after submission), uniform on [min, max]."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    min: float = Field(description="D_min: shortest time from submission to the required start (s), >= 0")
    max: float = Field(description="D_max: longest time from submission to the required start (s), >= min")

    @model_validator(mode="after")
    def _not_in_the_past(self):
        found = []
        if self.min < 0:
            found.append((("min",), f"a start deadline in the past: D_min must be at least 0 s after "
                                    f"submission (got {self.min:g})"))
        if self.max < self.min:
            found.append((("max",), f"D_max ({self.max:g}) must be at least D_min ({self.min:g})"))
        if found:
            raise _problems(found)
        return self

    def mean(self) -> float:
        return (self.min + self.max) / 2.0


class CoallocatedJobs(BaseModel):
    """Global co-allocated jobs: equal components that must all start at the job's start deadline.

    Mixed into ``SyntheticStream`` (name, arrival, size, runtime, count come from there):
    ``size`` is the processors of *each* component, ``runtime`` the run time shared by
    every component, ``arrival.target_load`` the global load
    U_g = lambda E[N_c] E[S] E[runtime] / (processors of all clusters).
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    kind: Literal["coallocated"] = "coallocated"
    target: Literal["grid"] = Field("grid", description="always grid: the grid scheduler places the components")
    components: Distribution | None = Field(
        None, description="components per job N_c (rounded up, at least 1); default uniform integers 2..C")
    deadline: StartDeadline

    def mean_components(self) -> float:
        return processor_count_mean(self.components) if self.components is not None else math.nan

    def max_components(self) -> float:
        return processor_count_max(self.components) if self.components is not None else math.nan

    def arrival_rate(self, platform) -> float:
        """Jobs per second; with ``target_load`` U: U * capacity / (E[N_c] E[size] E[runtime])."""
        a = self.arrival
        if a.rate is not None:
            return float(a.rate)
        if a.mean_interarrival is not None:
            return 1.0 / a.mean_interarrival
        return a.target_load * self.capacity(platform) / (
            self.mean_components() * self.mean_size() * self.runtime.mean())


# ---- policies ------------------------------------------------------------------------------------

#: placement policy name -> the code the kernel switches on (a new policy adds a code and a branch)
PLACEMENT_CODES = {"worst-fit": 0}


class WorstFitParams(BaseModel):
    """Parameters of Worst-Fit placement."""

    model_config = ConfigDict(extra="forbid")

    tie_break: Literal["lowest_index"] = Field(
        "lowest_index", description="clusters with equally many idle processors: the lowest index wins")


@GRID_PLACEMENT.register(
    "worst-fit", WorstFitParams,
    "Worst-Fit: each component in turn to the cluster with the most idle processors (all or nothing)")
class WorstFit:
    """Components one at a time to the cluster with the most idle processors, the counts
    updated after each; several components may share a cluster; all or nothing."""

    code = PLACEMENT_CODES["worst-fit"]


class RPPParams(BaseModel):
    """Parameters of the Repeated Placement Policy with Wait-X and GP/LP (MODELS.md §3)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    lp: float = Field(0.7, gt=0, le=1, description="L_p in (0, 1]: tries at PT_0 = S' + L_p (D - S'), "
                                                   "PT_{m+1} = PT_m + L_p (D - PT_m)")
    mp: int = Field(10, ge=0, description="M_p: at most this many placement tries before the deadline")
    final_attempt: bool = Field(True, description="after the M_p tries, one last attempt at exactly D "
                                                  "(GP kills there, LP fails); false: the job fails after "
                                                  "its last try")
    wait_x: float | None = Field(None, ge=0, description="Wait-X: ignore the job until D - X, "
                                                         "S' = max(S, D - X); null = infinity (pure RPP)")
    priority: Literal["GP", "LP"] = Field("GP", description="GP: at D kill local jobs to make room; "
                                                            "LP: never kill, the job fails")
    kill_order: Literal["latest_started_first", "earliest_started_first"] = Field(
        "latest_started_first", description="which local jobs GP kills first; it stops as soon as the "
                                            "shortfall is covered, only in the clusters that lack processors")
    killed_jobs: Literal["drop", "requeue"] = Field(
        "drop", description="killed local jobs are dropped, or requeued at the head of their queue")
    claims_bypass_local_queue: bool = Field(
        True, description="claims (tries before D) take idle processors even when local jobs are queued; "
                          "false: before D, a cluster with queued local jobs offers no idle processors")
    local_jobs_use_claimed: Literal[False] = Field(
        False, description="local jobs never run on claimed processors (fixed)")
    gp_cluster: Literal["most_idle_plus_local"] = Field(
        "most_idle_plus_local", description="under GP, a component that fits on no cluster's idle "
                                            "processors goes to the cluster with most idle + local-occupied")


@DEADLINE_POLICY.register(
    "rpp", RPPParams,
    "Repeated Placement Policy: tries at PT_m before the start deadline, Wait-X, GP/LP (Ballier et al.)")
class RepeatedPlacement:
    """Placement tries at PT_0, PT_1, ... (at most M_p), claiming at a successful try, then one
    final attempt at D; Wait-X ignores the job until D - X; GP kills local jobs at D, LP fails."""


# ---- cross-checks --------------------------------------------------------------------------------

def is_coallocation(scenario: Any) -> bool:
    """True when the scenario has a stream of co-allocated jobs (the grid layer runs it)."""
    return any(isinstance(s, CoallocatedJobs) for s in scenario.workload.streams)


def grid_problems(s: Any, check_policy) -> list[tuple[tuple, str]]:
    """Problems of a scenario with co-allocated streams, as (path, message); fills in
    ``components`` (uniform 2..C) and the grid's default placement and deadline policy.

    ``check_policy(ref, registry, prefix)`` is the scenario's policy check.
    """
    if not is_coallocation(s):
        return []
    found: list[tuple[tuple, str]] = []
    clusters = s.platform.clusters
    C = len(clusters)
    largest = max(c.processors for c in clusters)
    for i, st in enumerate(s.workload.streams):
        pre = ("workload", "streams", i)
        if not isinstance(st, CoallocatedJobs):
            if st.target == "grid":
                found.append(((*pre, "target"), "with co-allocated streams the other streams are local jobs: "
                                               "give a cluster name (the grid layer places co-allocated jobs only)"))
            continue
        top = st.max_size()
        if math.isinf(top):
            found.append(((*pre, "size"), "the component size distribution is unbounded: components can be "
                                          f"larger than every cluster (largest: {largest})"))
        elif top > largest:
            found.append(((*pre, "size"), f"components of up to {top:.0f} processors are larger than every "
                                          f"cluster (largest: {largest}); a component runs in one cluster"))
        if st.components is None:
            if C < 2:
                found.append(((*pre, "components"), "give components: the default, uniform integers 2..C, "
                                                    "needs at least 2 clusters"))
            else:
                st.components = Uniform(low=2, high=C, integer=True)
        elif math.isinf(st.max_components()):
            found.append(((*pre, "components"), "the distribution of components per job is unbounded"))
        if st.arrival.target_load is not None and st.components is not None:
            if not st.mean_components() * st.mean_size() * st.runtime.mean() > 0:
                found.append(((*pre, "arrival", "target_load"), "needs a runtime distribution with a positive mean"))
    for k, c in enumerate(clusters):
        if c.scheduler.name != "fcfs":
            found.append((("platform", "clusters", k, "scheduler", "name"),
                          f"the co-allocation grid layer runs strict FCFS local schedulers; got '{c.scheduler.name}'"))
        if c.speed != 1.0:
            found.append((("platform", "clusters", k, "speed"),
                          "the co-allocation grid layer models identical processors: speed must be 1"))
    run = s.run
    if run.stop.completions is not None:
        found.append((("run", "stop", "completions"), "co-allocation runs stop at a horizon: give "
                                                      "run.stop.horizon instead"))
    elif run.stop.horizon is None and any(isinstance(st, CoallocatedJobs) and st.count is None
                                          for st in s.workload.streams):
        found.append((("run", "stop"), "give horizon: a co-allocated stream has no count, so the run "
                                       "would never end"))
    if run.warmup.completions:
        found.append((("run", "warmup", "completions"), "co-allocation runs measure after a warm-up time: "
                                                        "use run.warmup.time"))
    if run.enforce_walltime:
        found.append((("run", "enforce_walltime"), "not modelled by the co-allocation grid layer "
                                                   "(local jobs run their runtime)"))
    g = s.grid
    for field, registry, default in (("placement", GRID_PLACEMENT, "worst-fit"),
                                     ("deadline_policy", DEADLINE_POLICY, "rpp")):
        ref = getattr(g, field)
        if ref is None:
            ref = type(g.site_allocation)(name=default)
            found += check_policy(ref, registry, ("grid", field))
            setattr(g, field, ref)
    return found
