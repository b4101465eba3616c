"""Scenario fields of the co-allocation grid layer (Ballier et al., MODELS.md §3).

* :class:`CoallocatedJobs` -- the fields of a stream of global co-allocated jobs
  (``kind: coallocated`` in ``workload.streams``): Poisson arrivals, ``components`` per
  job, one ``size`` shared by every component, a ``runtime`` and a relative start
  ``deadline`` drawn uniformly on [min, max]. :mod:`simengine.scenario` mixes it into
  its ``SyntheticStream`` as ``CoallocatedStream``.
* the grid policies, registered by name: any placement of
  :data:`~simengine.registry.GRID_PLACEMENT` (``worst-fit`` by default; compiled into the
  kernel, the others called from Python) and ``rpp`` (the Repeated Placement
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

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from simengine.distributions import (
    Distribution,
    Exponential,
    Uniform,
    processor_count_max,
    processor_count_mean,
)
import simengine.grid.placement  # noqa: F401  (registers the built-in placement policies)
import simengine.preemption  # noqa: F401  (registers the preemption policies KOALA names)
from simengine.registry import DEADLINE_POLICY, GRID_PLACEMENT, PREEMPTION
from simengine.schema_base import known_list, problems as _problems, scenario_check

__all__ = [
    "StartDeadline",
    "CoallocatedJobs",
    "RPPParams",
    "grid_problems",
    "is_coallocation",
    "is_grid",
    "KoalaJobs",
    "KoalaShape",
    "KoalaFile",
    "KoalaBackground",
    "KoalaParams",
    "is_koala",
]

class StartDeadline(BaseModel):
    """Relative start deadline D - S (seconds after submission), uniform on [min, max]."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)

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

    Mixed into ``SyntheticStream`` (name, arrival, estimate, count come from there;
    ``size`` and ``runtime`` too, redeclared here only for their help text):
    ``size`` is the processors of *each* component, ``runtime`` the run time shared by
    every component, ``arrival.target_load`` the global load
    U_g = lambda E[N_c] E[S] E[runtime] / (processors of all clusters).
    """

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)

    kind: Literal["coallocated"] = Field(
        "coallocated", description="Stream kind: coallocated (global jobs whose components all start at a deadline)")
    target: Literal["grid"] = Field("grid", description="always grid: the grid scheduler places the components")
    size: Distribution = Field(description="S: processors of each component (one draw per job); must fit the "
                                           "largest cluster")
    runtime: Distribution = Field(description="Run time (s) shared by every component; must not draw negative values")
    components: Distribution | None = Field(
        None, description="components per job N_c (rounded up, at least 1); default uniform integers 2..C")
    deadline: StartDeadline = Field(description="Relative start deadline D - S: uniform on [min, max] seconds "
                                                "after submission")

    def mean_components(self) -> float:
        return processor_count_mean(self.components) if self.components is not None else math.nan

    def max_components(self) -> float:
        return processor_count_max(self.components) if self.components is not None else math.nan

    def arrival_rate(self, platform) -> float:
        """Jobs per second; with ``target_load`` U: U * capacity / (E[N_c] E[size] E[runtime])."""
        return self.arrival.jobs_per_second(
            lambda: self.capacity(platform) / (self.mean_components() * self.mean_size() * self.runtime.mean()))


# ---- policies ------------------------------------------------------------------------------------

class RPPParams(BaseModel):
    """Parameters of the Repeated Placement Policy with Wait-X and GP/LP (MODELS.md §3)."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)

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
    lp_failure: Literal["first_failed_try", "after_tries"] = Field(
        "first_failed_try", description="under LP: a placement try that fails fails the job, with no "
                                        "further tries and no attempt at D (MODELS.md §3's revised "
                                        "decision), or 'after_tries': the M_p tries and the final attempt "
                                        "as under GP (the earlier reading, kept as a sensitivity)")
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
    gp_cluster: Literal["most_idle_plus_local", "most_idle"] = Field(
        "most_idle_plus_local", description="under GP, a component that fits on no cluster's idle "
                                            "processors goes to the cluster with most idle + local-occupied "
                                            "processors (MODELS.md §3's default: Figure 7 needs it), or, "
                                            "'most_idle', the paper's literal reading: to the cluster with most "
                                            "idle processors, killing local jobs there, the job failing if "
                                            "they are too few")


@DEADLINE_POLICY.register(
    "rpp", RPPParams,
    "Repeated Placement Policy: tries at PT_m before the start deadline, Wait-X, GP/LP (Ballier et al.)",
    capabilities=("model",))
class RepeatedPlacement:
    """Placement tries at PT_0, PT_1, ... (at most M_p), claiming at a successful try, then one
    final attempt at D; Wait-X ignores the job until D - X; GP kills local jobs at D, LP fails."""



# ---- KOALA (Mohamed's thesis, MODELS.md §4) -------------------------------------------------------

KOALA_PRIORITIES = ("super-high", "high", "low", "super-low")


class KoalaShape(BaseModel):
    """One job shape: ``components`` components of ``size`` processors running ``runtime`` s."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)

    components: int = Field(ge=1, description="components per job of this shape, >= 1")
    size: int = Field(ge=1, description="processors of each component, >= 1")
    runtime: float | None = Field(None, ge=0, description="run time (s); null: drawn from the stream's runtime")
    weight: float = Field(1.0, gt=0, description="relative probability of this shape")


class KoalaFile(BaseModel):
    """One input file per job (every component reads it), stored at ``replicas`` file sites."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)

    size: Distribution = Field(description="file size (MB); transfer time = size / bandwidth(F, E), 0 when E = F")
    replicas: int = Field(1, ge=1, description="the file is at this many distinct file sites, chosen uniformly "
                                               "at random (without replacement) per job")
    sites: list[str] | None = Field(None, description="file sites to choose from (default: every file site of "
                                                      "the platform; a platform without file sites has one per "
                                                      "cluster, named after it)")


class KoalaBackground(BaseModel):
    """The background-load band controller (thesis §5.1.3): every ``interval`` s, in each cluster
    whose local load is below ``low``, inject background jobs on idle processors until it reaches
    ``low`` (a job is cut so the load never passes ``high``); above ``high``, kill background jobs
    (newest first) until it is at most ``high``. Background jobs bypass KOALA and may take
    processors KOALA has placed but not yet claimed."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)

    low: float = Field(0.3, ge=0, le=1, description="local load fraction in [0, 1] below which background jobs "
                                                   "are injected on idle processors")
    high: float = Field(0.4, ge=0, le=1, description="local load fraction in [low, 1] above which background "
                                                    "jobs are killed, newest first")
    interval: float = Field(60.0, gt=0, description="seconds between band checks (> 0), the first at time 0")
    size: Distribution = Field(default_factory=lambda: Uniform(low=1, high=16, integer=True),
                               description="processors of an injected job")
    runtime: Distribution = Field(default_factory=lambda: Exponential(mean=600.0),
                                  description="run time of an injected job (s)")

    @model_validator(mode="after")
    def _band(self):
        if self.high < self.low:
            raise _problems([(("high",), f"must be at least low ({self.low:g})")])
        return self


class KoalaJobs(BaseModel):
    """KOALA jobs (``kind: koala``): components of possibly different sizes, a request type, a
    priority, one input file, placed and claimed by KOALA (docs/grid.md, KOALA).

    Mixed into ``SyntheticStream``: ``size`` is the processors of a component (of the whole
    job when ``request: flexible``), ``runtime`` the job's run time; ``shapes`` replaces both.
    """

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)

    kind: Literal["koala"] = Field("koala", description="Stream kind: koala (jobs placed and claimed by KOALA's "
                                                        "policies)")
    target: Literal["grid"] = Field("grid", description="always grid: KOALA places the components")
    size: Distribution | None = Field(None, description="processors of a component (flexible: of the whole job); "
                                                        "required without shapes")
    runtime: Distribution | None = Field(None, description="the job's run time (s), shared by its components; "
                                                           "required without shapes")
    request: Literal["non-fixed", "fixed", "semi-fixed", "flexible"] = Field(
        "non-fixed", description="fixed: every component names its cluster; semi-fixed: some do; flexible: the "
                                 "total size is split by the scheduler (FCM)")
    priority: Literal["super-high", "high", "low", "super-low"] = Field(
        "high", description="placement-queue priority: super-high, high, low or super-low")
    components: Distribution | None = Field(None, description="components per job (default 1)")
    equal_sizes: bool = Field(True, description="true: one size draw per job; false: one per component")
    clusters: list[str | None] | None = Field(
        None, description="fixed / semi-fixed: the cluster of component k (null: the scheduler picks)")
    shapes: list[KoalaShape] | None = Field(None, min_length=1, description="job shapes drawn by weight "
                                                                              "(replace components/size/runtime)")
    file: KoalaFile | None = Field(None, description="one input file per job, {size (MB), replicas, sites}; "
                                                     "empty: no file")
    background: KoalaBackground | None = Field(None, description="the background band controller (one per "
                                                                 "scenario; every cluster)")

    @field_validator("runtime")
    @classmethod
    def _non_negative(cls, v):
        # replaces SyntheticStream's check of the same name: runtime may be null (shapes give it)
        if v is not None and v.min_value() < 0:
            raise ValueError(f"runtimes must not be negative (this distribution can draw {v.min_value():g})")
        return v

    def expected_work(self) -> float:
        """E[total processors x runtime] of a job."""
        if self.shapes:
            w = sum(s.weight for s in self.shapes)
            rt = self.runtime.mean() if self.runtime is not None else math.nan
            return sum(s.weight * s.components * s.size * (s.runtime if s.runtime is not None else rt)
                       for s in self.shapes) / w
        nc = 1.0 if self.request == "flexible" or self.components is None else processor_count_mean(self.components)
        return nc * processor_count_mean(self.size) * self.runtime.mean()

    def arrival_rate(self, platform) -> float:
        """Jobs per second; with ``target_load`` U: U * all processors / E[total size x runtime]."""
        return self.arrival.jobs_per_second(lambda: sum(c.processors for c in platform.clusters) / self.expected_work())


class KoalaQueueWeights(BaseModel):
    """The weighted round-robin of the placement queues (thesis §4.2)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    N_h: int = Field(1, ge=1, description="scans of the higher queues per round")
    N_l: int = Field(1, ge=1, description="scans of the lower queues per round (N_h >= N_l)")
    n1: int = Field(1, ge=1, description="super-high scans per higher scan (n1 >= n2)")
    n2: int = Field(1, ge=1, description="high scans per higher scan")
    n3: int = Field(1, ge=1, description="low scans per lower scan (n3 >= n4)")
    n4: int = Field(1, ge=1, description="super-low scans per lower scan")

    @model_validator(mode="after")
    def _order(self):
        found = [((a,), f"must be at least {b} ({getattr(self, b)})")
                 for a, b in (("N_h", "N_l"), ("n1", "n2"), ("n3", "n4")) if getattr(self, a) < getattr(self, b)]
        if found:
            raise _problems(found)
        return self


class KoalaPreemption(BaseModel):
    """The preemption policy KOALA's Incremental Claiming Policy applies to its victims: an entry of the
    ``PREEMPTION`` registry (docs/reservations.md). ``suspend`` is not offered: a co-allocated job that gave
    its processors back has no checkpoint left on them to resume from."""

    model_config = ConfigDict(strict=True, extra="forbid")

    name: Literal["none", "kill", "requeue"] = Field(
        "requeue", description="none: never preempt; kill: the victim ends (status killed); requeue: it goes back "
                               "to its placement queue and later runs from scratch")
    params: dict[str, Any] = Field(default_factory=dict, description="the policy's parameters (requeue: overhead)")

    @model_validator(mode="before")
    @classmethod
    def _from_bool(cls, v):
        # scenarios written before the registry existed said `preemption: true | false`
        if isinstance(v, bool):
            return {"name": "requeue" if v else "none"}
        return v

    @model_validator(mode="after")
    def _params(self):
        entry = PREEMPTION.get(self.name)
        try:
            self.params = entry.params.model_validate(self.params).model_dump(mode="json")
        except ValidationError as e:
            raise _problems([(("params", *err["loc"]), err["msg"]) for err in e.errors()]) from None
        return self


class KoalaParams(BaseModel):
    """KOALA's placement queues and claiming (thesis §4.2, §4.4; MODELS.md §4)."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)

    scan_interval: float = Field(60.0, gt=0, description="time between scans of the placement queues (s); "
                                                         "each scan takes one queue in the weighted round-robin")
    first_scan: float = Field(0.0, ge=0, description="time of the first scan; a job waits for the next scan")
    weights: KoalaQueueWeights = Field(KoalaQueueWeights(), description="N_h, N_l, n1..n4 of the weighted round-robin")
    promote_after: int | None = Field(None, ge=1, description="P: a high or low job moves one level up after P "
                                                              "failed placement tries; null: never")
    max_place_tries: int | None = Field(None, ge=1, description="MAX_PLACE_TRIES: the job fails after this many "
                                                                "placement tries; null: never")
    L: float = Field(0.75, ge=0, le=1, description="initial L: JCT_0 = JPT + L FTT, "
                                                   "JCT_{n+1} = JCT_n + L (JST - JCT_n)")
    l_step: float = Field(0.25, ge=0, le=1, description="L decreases by this when the job goes back to placement")
    l_floor: float = Field(0.0, ge=0, le=1, description="lower bound of L")
    min_gap: float = Field(1.0, gt=0, description="back to placement when JST - JCT_{n+1} is below this (s)")
    threshold: float = Field(1.0, ge=0, le=1, description="ICP threshold T: claim when at least this fraction of "
                                                          "the components can be started; 1 = all or nothing, "
                                                          "0 = whatever can be claimed at each try (thesis §5.2)")
    preemption: KoalaPreemption = Field(
        KoalaPreemption(), description="what the ICP does to lower-priority KOALA jobs holding the processors it "
                                       "needs (newest JST first): a preemption policy of simengine.preemption; "
                                       "requeue sends them back to their placement queue")
    max_claim_tries: int | None = Field(None, ge=1, description="the job fails after this many claiming tries; "
                                                                "null: never")
    exclude_after: int | None = Field(None, ge=1, description="KOALA no longer places on a cluster once this many "
                                                              "of its job components in a row had a soft error "
                                                              "(platform.clusters[].soft_errors; thesis §3.2.2); "
                                                              "null: never")


@DEADLINE_POLICY.register(
    "koala", KoalaParams,
    "KOALA: weighted round-robin placement queues, claiming at JCT with the Incremental Claiming Policy",
    capabilities=("model",))
class KoalaClaiming:
    """Placement queues scanned at an interval, claiming at JCT_n (L), ICP with threshold T."""


def _no_walltime_kills(s, why: str) -> list:
    """A trace stream asking for kills at the walltime, which the grid models do not model (a Batsim
    workload's default kill is not applied there: docs/traces.md)."""
    return [(("workload", "streams", i, "enforce_walltime"), why) for i, st in enumerate(s.workload.streams)
            if getattr(st, "enforce_walltime", None)]


def is_koala(scenario: Any) -> bool:
    """True when the scenario has a stream of KOALA jobs."""
    return any(isinstance(s, KoalaJobs) for s in scenario.workload.streams)


def file_sites(platform) -> tuple[list[str], list[int]]:
    """Names of the file sites and the cluster each is at (-1: none); a platform without file
    sites has one per cluster, named after it."""
    if platform.file_sites:
        idx = {c.name: k for k, c in enumerate(platform.clusters)}
        return ([f.name for f in platform.file_sites],
                [idx[f.cluster] if f.cluster is not None else -1 for f in platform.file_sites])
    return [c.name for c in platform.clusters], list(range(len(platform.clusters)))


def bandwidth(platform, site: str, cluster: str) -> float | None:
    """MB/s from file site ``site`` to cluster ``cluster`` (the matrix is read both ways)."""
    b = platform.bandwidth or {}
    v = b.get(site, {}).get(cluster)
    return v if v is not None else b.get(cluster, {}).get(site)


def koala_problems(s: Any, check_policy) -> list[tuple[tuple, str]]:
    """Problems of a scenario with KOALA streams; fills in the default policies."""
    found: list[tuple[tuple, str]] = []
    clusters = s.platform.clusters
    names = [c.name for c in clusters]
    procs = {c.name: c.processors for c in clusters}
    largest = max(procs.values())
    sites, site_cluster = file_sites(s.platform)
    backgrounds = 0
    for i, st in enumerate(s.workload.streams):
        pre = ("workload", "streams", i)
        if isinstance(st, CoallocatedJobs):
            found.append(((*pre, "kind"), "KOALA streams and co-allocated streams with start deadlines cannot be "
                                          "mixed in one scenario"))
            continue
        if not isinstance(st, KoalaJobs):
            if st.target == "grid":
                found.append(((*pre, "target"), "with KOALA streams the other streams are local jobs: give a "
                                               "cluster name"))
            continue
        backgrounds += st.background is not None
        if st.shapes:
            for k, sh in enumerate(st.shapes):
                if sh.size > largest and st.request != "flexible":
                    found.append(((*pre, "shapes", k, "size"), f"components of {sh.size} processors are larger "
                                                               f"than every cluster (largest: {largest})"))
                if sh.runtime is None and st.runtime is None:
                    found.append(((*pre, "shapes", k, "runtime"), "give a runtime here or the stream's runtime"))
        else:
            for f in ("size", "runtime"):
                if getattr(st, f) is None:
                    found.append(((*pre, f), "required (or give shapes)"))
            if st.size is not None:
                top = processor_count_max(st.size)
                limit = sum(procs.values()) if st.request == "flexible" else largest
                what = "jobs" if st.request == "flexible" else "components"
                if top > limit:
                    found.append(((*pre, "size"), f"{what} of up to {top:g} processors are larger than every "
                                                  f"cluster (largest: {largest})" if st.request != "flexible" else
                                  f"flexible jobs of up to {top:g} processors are larger than the whole platform "
                                  f"({limit})"))
        if st.runtime is not None and st.runtime.min_value() < 0:
            found.append(((*pre, "runtime"), "runtimes must not be negative"))
        if st.components is not None and math.isinf(processor_count_max(st.components)):
            found.append(((*pre, "components"), "the distribution of components per job is unbounded"))
        if st.request in ("fixed", "semi-fixed"):
            if not st.clusters:
                found.append(((*pre, "clusters"), f"a {st.request} job names the cluster of its components: "
                                                  "give clusters"))
            else:
                most = (max(sh.components for sh in st.shapes) if st.shapes else
                        processor_count_max(st.components) if st.components is not None else 1)
                if len(st.clusters) < most:
                    found.append(((*pre, "clusters"), f"names {len(st.clusters)} clusters but jobs have up to "
                                                      f"{most:g} components"))
                size_top = (max(sh.size for sh in st.shapes) if st.shapes else
                            processor_count_max(st.size) if st.size is not None else 0)
                for k, c in enumerate(st.clusters):
                    if c is None:
                        if st.request == "fixed":
                            found.append(((*pre, "clusters", k), "a fixed job names every component's cluster"))
                    elif c not in procs:
                        found.append(((*pre, "clusters", k), f"unknown cluster '{c}'; known: {known_list(names)}"))
                    elif size_top > procs[c]:
                        found.append(((*pre, "clusters", k), f"components of up to {size_top:g} processors do not "
                                                             f"fit cluster '{c}' ({procs[c]} processors)"))
        elif st.clusters:
            found.append(((*pre, "clusters"), f"only fixed and semi-fixed jobs name clusters (request is "
                                              f"{st.request})"))
        if st.file is not None:
            chosen = st.file.sites if st.file.sites is not None else sites
            for k, f in enumerate(st.file.sites or []):
                if f not in sites:
                    found.append(((*pre, "file", "sites", k), f"unknown file site '{f}'; known: {known_list(sites)}"))
            if st.file.replicas > len(chosen):
                found.append(((*pre, "file", "replicas"), f"more replicas than file sites ({len(chosen)})"))
            if st.file.size.min_value() < 0:
                found.append(((*pre, "file", "size"), "file sizes must not be negative"))
            for f in chosen:
                if f not in sites:
                    continue
                at = site_cluster[sites.index(f)]
                for e, c in enumerate(clusters):
                    if e != at and bandwidth(s.platform, f, c.name) is None:
                        found.append((("platform", "bandwidth"), f"no bandwidth from file site '{f}' to cluster "
                                                                 f"'{c.name}' (KOALA needs every pair)"))
        if st.arrival.target_load is not None and not st.expected_work() > 0:
            found.append(((*pre, "arrival", "target_load"), "needs jobs with positive expected work"))
    g = s.grid
    never = (g.deadline_policy is None or g.deadline_policy.params.get("max_place_tries") is None) \
        and s.run.stop.horizon is None
    for i, st in enumerate(s.workload.streams):
        if isinstance(st, KoalaJobs) and never:
            if st.shapes:
                top = max(sh.components * sh.size for sh in st.shapes)
            elif st.size is not None:
                nc = 1 if st.request == "flexible" or st.components is None else processor_count_max(st.components)
                top = nc * processor_count_max(st.size)
            else:
                continue
            if top > sum(procs.values()):
                found.append((("workload", "streams", i), f"jobs of up to {top:g} processors are larger than the "
                                                          "whole platform and would wait forever: give "
                                                          "run.stop.horizon or max_place_tries"))
    if backgrounds > 1:
        found.append((("workload", "streams"), "give the background band on one KOALA stream only"))
    for k, c in enumerate(clusters):
        if c.scheduler.name != "fcfs":
            found.append((("platform", "clusters", k, "scheduler", "name"),
                          f"KOALA's clusters run strict FCFS local schedulers here; got '{c.scheduler.name}'"))
        if c.speed != 1.0:
            found.append((("platform", "clusters", k, "speed"), "KOALA models identical processors: speed must be 1"))
    run = s.run
    if run.stop.completions is not None:
        found.append((("run", "stop", "completions"), "KOALA runs end when every KOALA job is done or at "
                                                      "run.stop.horizon"))
    elif run.stop.horizon is None and any(isinstance(st, KoalaJobs) and st.count is None
                                          for st in s.workload.streams):
        found.append((("run", "stop"), "give horizon: a KOALA stream has no count, so the run would never end"))
    if run.warmup.completions:
        found.append((("run", "warmup", "completions"), "KOALA runs measure after a warm-up time: use "
                                                        "run.warmup.time"))
    if run.enforce_walltime:
        found.append((("run", "enforce_walltime"), "not modelled by KOALA runs"))
    found += _no_walltime_kills(s, "not modelled by KOALA runs")
    for field, registry, default in (("placement", GRID_PLACEMENT, "worst-fit"),
                                     ("deadline_policy", DEADLINE_POLICY, "koala")):
        ref = getattr(g, field)
        if ref is None:
            ref = type(g.site_allocation)(name=default)
            found += check_policy(ref, registry, ("grid", field))
            setattr(g, field, ref)
    if g.deadline_policy.name != "koala":
        found.append((("grid", "deadline_policy", "name"), f"KOALA streams are claimed by the 'koala' policy; got "
                                                           f"'{g.deadline_policy.name}'"))
    return found

# ---- cross-checks --------------------------------------------------------------------------------

def is_coallocation(scenario: Any) -> bool:
    """True when the scenario has a stream of co-allocated jobs or KOALA jobs (the grid layer runs it)."""
    return any(isinstance(s, (CoallocatedJobs, KoalaJobs)) for s in scenario.workload.streams)


@scenario_check(order=90)
def grid_problems(s: Any, check_policy) -> list[tuple[tuple, str]]:
    """Problems of a scenario with co-allocated streams, as (path, message); fills in
    ``components`` (uniform 2..C) and the grid's default placement and deadline policy.

    ``check_policy(ref, registry, prefix)`` is the scenario's policy check.
    """
    if is_koala(s):
        return koala_problems(s, check_policy)
    found: list[tuple[tuple, str]] = [
        (("platform", "clusters", k, "soft_errors"), "soft errors are simulated for KOALA jobs only (a stream of "
                                                      "kind koala); give 0 or leave it out")
        for k, c in enumerate(s.platform.clusters) if c.soft_errors > 0]
    if not is_coallocation(s):
        return found
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
    found += _no_walltime_kills(s, "not modelled by the co-allocation grid layer (local jobs run their runtime)")
    g = s.grid
    for field, registry, default in (("placement", GRID_PLACEMENT, "worst-fit"),
                                     ("deadline_policy", DEADLINE_POLICY, "rpp")):
        ref = getattr(g, field)
        if ref is None:
            ref = type(g.site_allocation)(name=default)
            found += check_policy(ref, registry, ("grid", field))
            setattr(g, field, ref)
        elif field == "deadline_policy" and ref.name != "rpp":
            found.append((("grid", field, "name"), f"co-allocated jobs with start deadlines support rpp only "
                                                   f"(got '{ref.name}', KOALA's)"))
    return found


def is_grid(scenario: Any) -> bool:
    """Co-allocated streams without KOALA's (those are :mod:`simengine.grid.koala_run`'s)."""
    return is_coallocation(scenario) and not is_koala(scenario)
