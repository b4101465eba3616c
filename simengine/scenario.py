"""The scenario schema: the single source of truth for what a simulation is.

A scenario names a platform (clusters, their local schedulers, file sites), a
workload (synthetic streams and trace replays), the grid's site-allocation policy
and the run control (seed, replications, stop rule, warm-up). The web form, the
REST API and the CLI all validate through :func:`load_scenario`, which reports
*every* problem at once as a :class:`~simengine.errors.ScenarioError` whose
``errors`` carry dotted field paths such as ``platform.clusters.1.processors``.

Field reference: docs/scenario.md.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import math
import os
import types
from pathlib import Path
from typing import Annotated, Any, Callable, Literal, Union, get_args, get_origin

import numpy as np
import yaml
from pydantic import (
    BaseModel,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.fields import FieldInfo

import simengine.parts  # noqa: F401  (fills the policy registries and the schema parts' checks first)
from simengine.distributions import Distribution, processor_count_max, processor_count_mean
from simengine.errors import FieldError, ScenarioError
from simengine.evolving.schema import EvolvingGenerate, EvolvingStream
from simengine.grid.schema import CoallocatedJobs, KoalaJobs
from simengine.local.failures import Failures
from simengine.local.schema import RelaxedFrame, Reservation, ReservationJob
from simengine.presets import PLATFORMS
from simengine.registry import (DEADLINE_POLICY, GRID_PLACEMENT, LOCAL_SCHEDULERS, PREEMPTION, SITE_ALLOCATION,
                                WORKFLOW_SCHEDULING, Registry)
from simengine.registry import CLAIMING, VICTIMS
from simengine.preemption import DEFAULT_VICTIMS
from simengine.schema_base import GRID_TARGET, PROBLEMS as _PROBLEMS, SCENARIO_CHECKS, known_list, scenario_check
from simengine.schema_base import StrictModel as _Model, problems as _problems
from simengine.site_allocation import is_stateful

__all__ = [
    "Scenario",
    "PolicyRef",
    "Reservation",
    "RelaxedFrame",
    "ReservationJob",
    "Cluster",
    "FileSite",
    "Platform",
    "Arrival",
    "ExactEstimate",
    "FactorEstimate",
    "SyntheticStream",
    "TraceStream",
    "CoallocatedStream",
    "KoalaStream",
    "EvolvingStream",
    "EvolvingGenerate",
    "LublinStream",
    "Workload",
    "Grid",
    "Stop",
    "Warmup",
    "RunControl",
    "GRID_TARGET",
    "load_scenario",
    "scenario_hash",
]

# --- platform -----------------------------------------------------------------------------------


#: the longest scenario name
NAME_MAX = 200

class PolicyRef(_Model):
    """A policy chosen by registry name, with its parameters.

    After validation ``params`` holds the full parameter set (defaults filled in)
    as validated by the policy's parameter model.
    """

    name: str = Field(description="Registered policy name; an unknown name is an error listing the known ones")
    params: dict[str, Any] = Field(
        {}, description="The policy's parameters, checked against its own parameter model; omitted ones take defaults")


def _check_policy(ref: PolicyRef, registry: Registry, prefix: tuple) -> list[tuple[tuple, str]]:
    if ref.name not in registry:
        known = ", ".join(registry.names()) or "(none)"
        return [((*prefix, "name"), f"unknown {registry.kind} '{ref.name}'; known: {known}")]
    entry = registry.get(ref.name)
    try:
        model = entry.params.model_validate(ref.params)
    except ValidationError as e:
        return [((*prefix, "params", *p), m) for p, m in _error_items(e, entry.params)]
    ref.params = model.model_dump(mode="json")
    return []


class Cluster(_Model):
    """One cluster: ``processors`` identical processors of relative ``speed`` run by one local scheduler."""

    name: str = Field(min_length=1, description="Unique cluster name (non-empty; 'grid' is reserved)")
    processors: int = Field(gt=0, description="Number of identical processors, > 0")
    speed: float = Field(1.0, gt=0, description="Relative speed, > 0: a job's runtime here is runtime / speed")
    scheduler: PolicyRef = Field(
        default_factory=lambda: PolicyRef(name="fcfs"),
        description="Local scheduler (LOCAL_SCHEDULERS): fcfs, easy, conservative, lwr, evolving or scojo-pect, "
                    "with its params")
    preemption: PolicyRef = Field(
        default_factory=lambda: PolicyRef(name="none"),
        description="What happens to a running job preempted by a higher-priority job or by an advance "
                    "reservation it overruns into: none (default; an overrun into a reservation is killed), "
                    "kill, requeue or suspend, the last two with params {overhead: seconds} "
                    "(PREEMPTION registry, docs/reservations.md)")
    soft_errors: float = Field(
        0.0, ge=0, lt=1,
        description="KOALA streams: the probability that a job component fails when its job starts on this "
                    "cluster (a soft error: a misconfigured node, a bug of the local resource manager; thesis "
                    "§3.2.2, §5.2.4). The whole job fails, gives its processors back and returns to its "
                    "placement queue. 0 (default): none. In [0, 1)")
    failures: Failures | None = Field(
        None, description="Resource failures and maintenance of this cluster's processors (docs/failures.md): "
                          "units of group processors fail after mtbf and are repaired after mttr, or are down "
                          "over given intervals; jobs there are requeued or lost. Empty: the cluster never fails")
    victims: PolicyRef = Field(
        default_factory=lambda: PolicyRef(name=DEFAULT_VICTIMS),
        description="Which running jobs a preemption for a waiting job takes, in what order: "
                    "lowest-priority-newest (default: lowest priority first, then the newest start) or a "
                    "Python victim choice (VICTIMS registry, docs/policies/victim-choice.md); needs a "
                    "preemption other than none, and an fcfs, easy or Python scheduler for a Python one")

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, v: str) -> str:
        if v == GRID_TARGET:
            raise ValueError(
                f"'{GRID_TARGET}' is reserved (a stream target '{GRID_TARGET}' means: let the grid choose)"
            )
        return v

    @field_validator("scheduler")
    @classmethod
    def _policy(cls, ref: PolicyRef) -> PolicyRef:
        # a field validator, so a bad scheduler is reported even when another field is bad too
        found = _check_policy(ref, LOCAL_SCHEDULERS, ())
        if found:
            raise _problems(found)
        return ref

    @field_validator("preemption", "victims")
    @classmethod
    def _preemption(cls, ref: PolicyRef, info: ValidationInfo) -> PolicyRef:
        found = _check_policy(ref, {"preemption": PREEMPTION, "victims": VICTIMS}[info.field_name], ())
        if found:
            raise _problems(found)
        return ref

    @model_serializer(mode="wrap")
    def _leave_out_no_preemption(self, handler):
        # the defaults are left out, so scenarios written before preemption (and victim choice)
        # keep their hash
        data = handler(self)
        if data.get("preemption") == {"name": "none", "params": {}}:
            del data["preemption"]
        if data.get("victims") == {"name": DEFAULT_VICTIMS, "params": {}}:
            del data["victims"]
        if data.get("soft_errors") == 0.0:
            del data["soft_errors"]
        if data.get("failures", 0) is None:
            del data["failures"]
        return data


class FileSite(_Model):
    """A site storing input files, optionally located at a cluster."""

    name: str = Field(min_length=1, description="Unique file-site name")
    cluster: str | None = Field(None, description="The cluster the site is at (must exist); empty: at no cluster")


def _first_of_each_name(items, field: str, what: str, found: list) -> dict[str, int]:
    """Name -> index of its first item; every later item with a taken name is a problem."""
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        if item.name in seen:
            found.append(((field, i, "name"), f"duplicate {what} name '{item.name}' (also {field}.{seen[item.name]})"))
        else:
            seen[item.name] = i
    return seen


class Platform(_Model):
    """The clusters (given, or taken from ``preset``), file sites and bandwidths (MB/s)."""

    preset: str | None = Field(
        None, description="A named topology (multicluster-4x32, grid-4site-zikos, das2, das2-w30, das3); "
                          "its clusters are used when clusters is omitted")
    clusters: list[Cluster] = Field(min_length=1, description="The clusters, at least one; names unique")
    file_sites: list[FileSite] = Field([], description="Sites storing input files; names unique")
    bandwidth: dict[str, dict[str, Annotated[float, Field(gt=0)]]] | None = Field(
        None, description="MB/s from one site to another (site -> site -> value > 0); keys are file-site or "
                          "cluster names; a site to itself (e.g. vu -> vu) is its intra-site bandwidth")
    intra_site_bandwidth: float | None = Field(
        None, gt=0, description="MB/s of a file transfer within a site (a file stored at the cluster that "
                                "runs the component), where bandwidth gives no value of its own; null: such "
                                "transfers take no time. The DAS presets set 150 (MODELS.md §4)")

    @model_validator(mode="before")
    @classmethod
    def _expand_preset(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("preset") is None:
            return data
        name = data["preset"]
        if not isinstance(name, str) or name not in PLATFORMS:
            known = ", ".join(sorted(PLATFORMS))
            raise _problems([(("preset",), f"unknown platform preset {name!r}; known: {known}")])
        preset = copy.deepcopy(PLATFORMS[name])
        if "clusters" in data:  # given clusters replace the preset's; its other defaults stay
            del preset["clusters"]
        return {**preset, **data}

    @model_validator(mode="after")
    def _names(self):
        found: list[tuple[tuple, str]] = []
        seen = _first_of_each_name(self.clusters, "clusters", "cluster", found)
        sites = _first_of_each_name(self.file_sites, "file_sites", "file site", found)
        for i, f in enumerate(self.file_sites):
            if f.cluster is not None and f.cluster not in seen:
                found.append(
                    (("file_sites", i, "cluster"), f"unknown cluster '{f.cluster}'; known: {known_list(seen)}")
                )
        if self.bandwidth:
            known = set(seen) | set(sites)
            for a, row in self.bandwidth.items():
                if a not in known:
                    found.append((("bandwidth", a), f"unknown site '{a}' (not a file site or cluster name)"))
                for b in row:
                    if b not in known:
                        found.append(
                            (("bandwidth", a, b), f"unknown site '{b}' (not a file site or cluster name)")
                        )
        if found:
            raise _problems(found)
        return self

    def cluster_index(self, name: str) -> int:
        """Index of the cluster called ``name`` (``KeyError`` if none)."""
        for i, c in enumerate(self.clusters):
            if c.name == name:
                return i
        raise KeyError(name)

    @property
    def processors(self) -> np.ndarray:
        """Processors per cluster, by cluster index (int64)."""
        return np.array([c.processors for c in self.clusters], dtype=np.int64)

    @property
    def total_processors(self) -> int:
        return int(sum(c.processors for c in self.clusters))


# --- workload -----------------------------------------------------------------------------------


class Arrival(_Model):
    """Poisson arrivals; give exactly one of ``rate``, ``mean_interarrival`` or ``target_load``."""

    process: Literal["poisson"] = Field("poisson", description="Arrival process: poisson (the only one)")
    rate: float | None = Field(None, gt=0, description="λ, jobs per second (> 0); give exactly one of rate, "
                                                       "mean_interarrival and target_load")
    mean_interarrival: float | None = Field(None, gt=0, description="1/λ, mean seconds between arrivals (> 0)")
    target_load: float | None = Field(
        None, gt=0, le=1.5, description="Offered load U in (0, 1.5] on the target: "
                                        "λ = U · capacity / (E[size] · E[runtime])")

    @model_validator(mode="after")
    def _exactly_one(self):
        given = [k for k in ("rate", "mean_interarrival", "target_load") if getattr(self, k) is not None]
        if len(given) != 1:
            got = f" (got {', '.join(given)})" if given else ""
            raise ValueError(f"give exactly one of rate, mean_interarrival or target_load{got}")
        return self

    def jobs_per_second(self, at_full_load: Callable[[], float]) -> float:
        """Arrival rate lambda: ``rate``, 1 / ``mean_interarrival``, or ``target_load`` times
        ``at_full_load()``, the rate at which the stream's jobs would offer load 1."""
        if self.rate is not None:
            return float(self.rate)
        if self.mean_interarrival is not None:
            return 1.0 / self.mean_interarrival
        return self.target_load * at_full_load()


class ExactEstimate(_Model):
    """Estimates (requested times) equal the runtimes."""

    kind: Literal["exact"] = Field("exact", description="Estimate kind: exact (the estimate is the runtime)")


class FactorEstimate(_Model):
    """Estimate = runtime x factor, one factor drawn per job (factor never below 1)."""

    kind: Literal["factor"] = Field("factor", description="Estimate kind: factor (estimate = runtime × factor)")
    factor: Distribution = Field(description="The factor, drawn once per job; must never be below 1")

    @field_validator("factor")
    @classmethod
    def _at_least_one(cls, v):
        if v.min_value() < 1:
            raise ValueError(f"factor must never be below 1 (this distribution can draw {v.min_value():g})")
        return v


Estimate = Annotated[Union[ExactEstimate, FactorEstimate], Field(discriminator="kind")]


class SyntheticStream(_Model):
    """Jobs generated from distributions, arriving as a Poisson process."""

    kind: Literal["synthetic"] = Field("synthetic", description="Stream kind: synthetic (jobs drawn from "
                                                                "distributions, Poisson arrivals)")
    name: str = Field(min_length=1, description="Unique stream name")
    target: str = Field(description="A cluster name, or grid: the site-allocation policy picks each job's cluster")
    arrival: Arrival = Field(description="Poisson arrivals: exactly one of rate, mean_interarrival and target_load")
    size: Distribution = Field(description="Processors per job: draws rounded up, at least 1; the largest must fit "
                                           "the target cluster")
    runtime: Distribution = Field(description="Run time in seconds at speed 1; must not draw negative values")
    estimate: Estimate = Field(
        default_factory=ExactEstimate,
        description="Requested time (what backfilling uses): exact (= runtime) or factor (runtime × factor ≥ 1)")
    count: int | None = Field(None, gt=0, description="Stop the stream after this many jobs (> 0); empty: "
                                                      "unbounded, then run.stop must end the run")
    priority: int = Field(
        0, description="Queue priority of this stream's jobs on their cluster: higher goes first (then "
                       "submit order); with preemption, a waiting job may preempt running jobs of strictly "
                       "lower priority (docs/reservations.md)")

    @model_serializer(mode="wrap")
    def _leave_out_default_priority(self, handler):
        # the default is left out, so scenarios written before priorities keep their hash
        data = handler(self)
        if data.get("priority") == 0:
            del data["priority"]
        return data

    @field_validator("runtime")
    @classmethod
    def _non_negative(cls, v):
        if v.min_value() < 0:
            raise ValueError(f"runtimes must not be negative (this distribution can draw {v.min_value():g})")
        return v

    def target_indices(self, platform: Platform) -> list[int]:
        """Indices of the clusters this stream's jobs can go to."""
        if self.target == GRID_TARGET:
            return list(range(len(platform.clusters)))
        return [platform.cluster_index(self.target)]

    def capacity(self, platform: Platform) -> float:
        """Processors x speed summed over the target cluster(s): the denominator of the load."""
        return float(
            sum(
                platform.clusters[i].processors * platform.clusters[i].speed
                for i in self.target_indices(platform)
            )
        )

    def mean_size(self) -> float:
        """Mean processors per job (sizes are rounded up to whole processors, at least 1)."""
        return processor_count_mean(self.size)

    def max_size(self) -> float:
        """Largest processors per job (``inf`` for an unbounded size distribution)."""
        return processor_count_max(self.size)

    def arrival_rate(self, platform: Platform) -> float:
        """Arrival rate lambda (jobs/s).

        With ``target_load`` U: lambda = U * capacity / (E[size] * E[runtime]) where the
        capacity is the sum of processors x speed of the target cluster(s) (MODELS.md §1,
        size and runtime independent).
        """
        return self.arrival.jobs_per_second(
            lambda: self.capacity(platform) / (self.mean_size() * self.runtime.mean()))


class TraceStream(_Model):
    """Jobs replayed from a workload trace (SWF or GWF)."""

    kind: Literal["trace"] = Field("trace", description="Stream kind: trace (jobs replayed from an SWF or GWF file)")
    name: str = Field(min_length=1, description="Unique stream name")
    path: str = Field(min_length=1, description="The trace file (.swf or .gwf, optionally .gz/.bz2/.xz); "
                                                "relative paths are resolved against the scenario's directory")
    format: Literal["swf", "gwf", "batsim"] | None = Field(
        None, description="swf, gwf or batsim (a Batsim JSON workload); leave empty to tell it from the file name")
    target: str = Field(description="A cluster name, or grid: the site allocation (or site_map) picks each "
                                    "job's cluster")
    site_map: dict[str, str] | None = Field(
        None, description="GWF trace site -> cluster name, so each job runs at its site's cluster (with "
                          "target grid); without it the grid's site allocation places the jobs")
    time_scale: float = Field(1.0, gt=0, description="Submit times are multiplied by this (>0); "
                                                     "not together with target_load")
    target_load: float | None = Field(
        None, gt=0, le=1.5, description="Rescale submit times so the offered load on the target is this, in "
                                        "(0, 1.5]; not together with time_scale")
    limit: int | None = Field(None, gt=0, description="Replay only the first this many jobs")
    priority: int = Field(
        0, description="Queue priority of this stream's jobs on their cluster: higher goes first (then "
                       "submit order); see docs/reservations.md")
    skip_untimed: bool = Field(
        False, description="Batsim workloads: leave out the jobs whose profile gives no run time (types Batsim "
                           "times on its platform model, e.g. ParallelTaskProfile), and say how many, instead of "
                           "refusing the workload")
    enforce_walltime: bool | None = Field(
        None, description="Kill this stream's jobs at their requested time (walltime) when they run longer: empty "
                          "follows run.enforce_walltime, except for a Batsim workload, whose jobs are killed there "
                          "as Batsim kills them (docs/traces.md)")
    cancelled: Literal["keep", "drop", "withdraw"] = Field(
        "keep", description="SWF/GWF jobs the trace marks cancelled (status 5) that never ran (run time 0 or "
                            "unknown): keep (replayed as jobs of run time 0, as before), drop them, or withdraw them "
                            "(submitted, and withdrawn from the queue at the submission plus the trace's wait -- "
                            "killed then if they started: clusters simulated event by event, docs/traces.md). "
                            "Cancelled jobs that ran are replayed with the time they ran either way; the run's notes "
                            "count them")

    _resolved: str | None = PrivateAttr(None)

    @model_serializer(mode="wrap")
    def _leave_out_default_priority(self, handler):
        data = handler(self)  # the defaults are left out, so older scenarios keep their hash
        if data.get("priority") == 0:
            del data["priority"]
        if data.get("skip_untimed") is False:
            del data["skip_untimed"]
        if data.get("cancelled") == "keep":
            del data["cancelled"]
        if data.get("enforce_walltime") is None:
            data.pop("enforce_walltime", None)
        return data

    @model_validator(mode="after")
    def _file(self, info: ValidationInfo):
        found: list[tuple[tuple, str]] = []
        base = Path((info.context or {}).get("base_dir") or os.getcwd())
        p = Path(self.path).expanduser()
        if not p.is_absolute():
            p = base / p
        p = Path(os.path.normpath(p))
        if not p.is_file():
            found.append((("path",), f"file not found: {p}"))
        self._resolved = str(p)
        if self.format is None:
            stem = p.name.lower()
            for ext in (".gz", ".bz2", ".xz"):
                stem = stem.removesuffix(ext)
            suffix = Path(stem).suffix.lstrip(".")
            if suffix in ("swf", "gwf", "json"):
                self.format = "batsim" if suffix == "json" else suffix
            else:
                found.append(
                    (("format",), "cannot tell the trace format from the file name; set format to swf, gwf or batsim")
                )
        if self.target_load is not None and self.time_scale != 1.0:
            found.append((("time_scale",), "give time_scale or target_load, not both"))
        if self.skip_untimed and self.format not in (None, "batsim"):
            found.append((("skip_untimed",), f"applies to Batsim workloads only; this trace is {self.format.upper()}, "
                                             "whose every job has a run time"))
        if found:
            raise _problems(found)
        return self

    @property
    def resolved_path(self) -> str:
        """The trace file's absolute path (relative ``path`` resolved against the scenario's directory)."""
        return self._resolved or os.path.abspath(self.path)


class CoallocatedStream(CoallocatedJobs, SyntheticStream):
    """Global co-allocated jobs with start deadlines, placed by the grid (fields: simengine.grid.schema)."""


class KoalaStream(KoalaJobs, SyntheticStream):
    """KOALA jobs placed and claimed by KOALA's policies (fields: simengine.grid.schema)."""


class LublinStream(_Model):
    """Rigid jobs from the Lublin-Feitelson model: sizes, runtimes and daily-cycle arrivals with
    lublin99.c's parameters (simengine/lublin.py, docs/workloads-lublin.md)."""

    kind: Literal["lublin"] = Field("lublin", description="Stream kind: lublin (the Lublin-Feitelson workload "
                                                          "model)")
    name: str = Field(min_length=1, description="Unique stream name")
    target: str = Field(description="A cluster name, or grid: the site-allocation policy picks each job's cluster; "
                                    "no lwr clusters")
    count: int = Field(gt=0, description="Jobs to draw (a horizon cuts them short)")
    processors: int | None = Field(
        None, ge=1, description="Machine size the model draws sizes for (log2 = uhi; no job is larger); "
                                "default: the target cluster's processors (grid: the largest cluster)")
    job_types: Literal["both", "batch", "interactive", "typeless"] = Field(
        "both", description="both: batch and interactive arrival processes merged (lublin99.c default); "
                            "typeless: the whole-sample fit (Cao's workloads)")
    start_hour: float = Field(0.0, ge=0, lt=24, description="Hour of the day at time 0 (daily cycle)")
    time_scale: float = Field(1.0, gt=0, description="Multiply submit times by this factor")
    target_load: float | None = Field(
        None, gt=0, description="Rescale submit times so the stream offers this load to its target "
                                "(work over capacity x last submit)")
    estimate: Estimate = Field(
        default_factory=ExactEstimate,
        description="Requested time (what backfilling uses): exact (= runtime) or factor (runtime × factor ≥ 1)")

    @model_validator(mode="after")
    def _one_scaling(self):
        if self.target_load is not None and self.time_scale != 1.0:
            raise _problems([(("time_scale",), "give time_scale or target_load, not both")])
        return self

    def model_processors(self, platform: Platform) -> int:
        """The machine size sizes are drawn for."""
        if self.processors is not None:
            return self.processors
        if self.target == GRID_TARGET:
            return max(c.processors for c in platform.clusters)
        return platform.clusters[platform.cluster_index(self.target)].processors


Stream = Annotated[Union[SyntheticStream, TraceStream, CoallocatedStream, KoalaStream, EvolvingStream,
                         LublinStream],
                   Field(discriminator="kind")]


class Workload(_Model):
    streams: list[Stream] = Field(
        min_length=1, description="The job streams, at least one, names unique: synthetic, trace, coallocated, "
                                  "koala, evolving or lublin (by kind)")

    @model_validator(mode="after")
    def _unique(self):
        seen: dict[str, int] = {}
        found = []
        for i, s in enumerate(self.streams):
            if s.name in seen:
                found.append(
                    (
                        ("streams", i, "name"),
                        f"duplicate stream name '{s.name}' (also streams.{seen[s.name]})",
                    )
                )
            else:
                seen[s.name] = i
        if found:
            raise _problems(found)
        return self


# --- grid and run control -----------------------------------------------------------------------


class Grid(_Model):
    site_allocation: PolicyRef = Field(
        default_factory=lambda: PolicyRef(name="random"),
        description="Picks the cluster of each job of grid-target streams (SITE_ALLOCATION): random, deferred, "
                    "sb_deferred or another registered one (python -m simengine schedulers)")
    # co-allocated streams (simengine.grid): default worst-fit and rpp when such a stream exists
    placement: PolicyRef | None = Field(
        None, description="Where co-allocated (or KOALA) job components go (GRID_PLACEMENT); default worst-fit "
                          "(docs/grid.md)")
    deadline_policy: PolicyRef | None = Field(
        None, description="How start deadlines are met (DEADLINE_POLICY): rpp (default; Repeated Placement, "
                          "Wait-X, GP/LP) or koala")
    claiming: PolicyRef | None = Field(
        None, description="How KOALA claims a placed job's processors before its start time (CLAIMING): icp "
                          "(default; the Incremental Claiming Policy with the koala deadline policy's threshold, L "
                          "and preemption; docs/policies/claiming.md)")
    workflow_scheduling: PolicyRef = Field(
        default_factory=lambda: PolicyRef(name="none"),
        description="Workflow grid jobs: none (default) or rars-heft (Cao: a fraction of the eligible jobs "
                    "become 5-task workflows placed with relaxed reservations; needs scojo-pect clusters, "
                    "docs/cao.md)")

    @model_validator(mode="after")
    def _policy(self):
        found = _check_policy(self.site_allocation, SITE_ALLOCATION, ("site_allocation",))
        found += _check_policy(self.workflow_scheduling, WORKFLOW_SCHEDULING, ("workflow_scheduling",))
        for field, registry in (("placement", GRID_PLACEMENT), ("deadline_policy", DEADLINE_POLICY)):
            if getattr(self, field) is not None:
                found += _check_policy(getattr(self, field), registry, (field,))
        if self.claiming is not None:
            found += _check_policy(self.claiming, CLAIMING, ("claiming",))
        if found:
            raise _problems(found)
        return self

    @model_serializer(mode="wrap")
    def _leave_out_unset(self, handler):
        # unset co-allocation policies are left out, so other scenarios keep their hash
        data = handler(self)
        for field in ("placement", "deadline_policy"):
            if data.get(field, 0) is None:
                del data[field]
        if data.get("workflow_scheduling") == {"name": "none", "params": {}}:
            del data["workflow_scheduling"]  # the default, left out so older scenarios keep their hash
        if data.get("claiming", 0) in (None, {"name": "icp", "params": {}}):
            del data["claiming"]  # unset or the default: KOALA scenarios written before it keep their hash
        return data


class Stop(_Model):
    """The run stops at ``horizon`` seconds or after ``completions`` jobs, whichever comes first."""

    horizon: float | None = Field(None, gt=0, description="End the run at this time (s, > 0)")
    completions: int | None = Field(None, gt=0, description="End the run after this many completed jobs (> 0)")


class Warmup(_Model):
    """Warm-up: jobs completing before the ``completions``-th completion, or submitted
    before ``time``, are left out of the metrics."""

    completions: int = Field(0, ge=0, description="Leave the first this many completions out of the metrics "
                                                  "(≥ 0, below stop.completions)")
    time: float = Field(0.0, ge=0, description="Leave jobs submitted before this time (s, ≥ 0) out of the metrics; "
                                               "below stop.horizon")


class RunControl(_Model):
    seed: int = Field(1, ge=0, le=2**63 - 1, description="Seed (0 to 2^63 - 1) all randomness derives from")
    replications: int = Field(1, ge=1, description="Independent replications to run (≥ 1), each with its own "
                                                   "random streams")
    stop: Stop = Field(default_factory=Stop, description="When the run ends: at horizon or after completions, "
                                                         "whichever comes first")
    warmup: Warmup = Field(default_factory=Warmup, description="Jobs left out of the metrics at the start: the "
                                                               "first completions, or submitted before time")
    enforce_walltime: bool = Field(False, description="Kill jobs at their estimate when the runtime is longer "
                                                      "(a trace stream may say otherwise for its jobs; a Batsim "
                                                      "workload's jobs are killed there unless it does)")
    keep_jobs: Literal["all", "first"] = Field(
        "all", description="Job rows kept in the result: all (every replication) or first (replication 0 only); "
                           "metrics cover all")

    @model_serializer(mode="wrap")
    def _leave_out_default_keep_jobs(self, handler):
        # the default is left out, so scenarios written before the option keep their hash
        data = handler(self)
        if data.get("keep_jobs") == "all":
            del data["keep_jobs"]
        return data


class Scenario(_Model):
    """A complete simulation: platform, workload, grid policy and run control."""

    name: str = Field("scenario", max_length=NAME_MAX,
                      description=f"A label for the scenario (at most {NAME_MAX} characters)")
    description: str = Field("", max_length=100_000, description="Free text about the scenario")
    platform: Platform = Field(description="Clusters and their local schedulers, file sites and bandwidths")
    workload: Workload = Field(description="The job streams")
    grid: Grid = Field(default_factory=Grid, description="Grid-level policies: site allocation, co-allocation "
                                                         "placement and deadlines, workflows")
    run: RunControl = Field(default_factory=RunControl, description="Run control: seed, replications, stop rule, "
                                                                    "warm-up, kept job rows")
    reservations: list[Reservation] = Field(
        default_factory=list,
        description="Advance reservations on the clusters (docs/reservations.md); each gets a job row in "
                    "the 'reservations' stream (index = number of workload streams)")

    @model_serializer(mode="wrap")
    def _leave_out_no_reservations(self, handler):
        data = handler(self)  # left out when empty, so older scenarios keep their hash
        if data.get("reservations") == []:
            del data["reservations"]
        return data

    #: the directory relative file paths were resolved against (load_scenario's ``base_dir``)
    _base_dir: str | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _cross_checks(self, info: ValidationInfo):
        found = [problem for _, check in SCENARIO_CHECKS for problem in check(self, _check_policy)]
        if found:
            raise _problems(found)
        self._base_dir = (info.context or {}).get("base_dir")
        return self

    def to_json(self, indent: int | None = 2) -> str:
        """The validated scenario as JSON (loadable again with :func:`load_scenario`)."""
        return self.model_dump_json(indent=indent)


@scenario_check(order=50)
def _core_problems(s: Scenario, check_policy=None) -> list[tuple[tuple, str]]:
    """The core streams (targets, sizes, loads) and the run's stop rule; the model packages'
    parts check the rest (simengine.schema_base)."""
    found: list[tuple[tuple, str]] = []
    clusters = s.platform.clusters
    by_name = {c.name: c for c in clusters}
    largest = max(c.processors for c in clusters)
    known = known_list([GRID_TARGET, *by_name])
    endless = []
    for i, st in enumerate(s.workload.streams):
        pre = ("workload", "streams", i)
        if st.target != GRID_TARGET and st.target not in by_name:
            found.append(((*pre, "target"), f"unknown cluster '{st.target}'; known: {known}"))
            continue
        if isinstance(st, EvolvingStream):  # checked by simengine.evolving.schema
            continue
        if isinstance(st, (CoallocatedStream, KoalaStream)):  # checked by simengine.grid.schema
            continue
        if isinstance(st, LublinStream):
            found += _lublin_problems(st, pre, clusters, by_name)
            continue
        if isinstance(st, TraceStream):
            for site, cname in (st.site_map or {}).items():
                if cname not in by_name:
                    found.append(
                        ((*pre, "site_map", site), f"unknown cluster '{cname}'; known: {known_list(by_name)}")
                    )
            continue
        if st.count is None:
            endless.append(st.name)
        receivers = clusters if st.target == GRID_TARGET else [by_name[st.target]]
        top = st.max_size()
        top_text = f"{top:.0f}"
        size_found = len(found)
        if math.isinf(top):
            found.append(
                (
                    (*pre, "size"),
                    "the size distribution is unbounded: jobs can be larger than every cluster "
                    f"(largest: {largest})",
                )
            )
        elif st.target == GRID_TARGET and top > largest:
            found.append(
                (
                    (*pre, "size"),
                    f"jobs of up to {top_text} processors are larger than every cluster (largest: {largest})",
                )
            )
        elif st.target != GRID_TARGET and top > receivers[0].processors:
            found.append(
                (
                    (*pre, "size"),
                    f"jobs of up to {top_text} processors are larger than cluster '{st.target}' "
                    f"({receivers[0].processors} processors)",
                )
            )
        serial = _serial_clusters(receivers)
        if top > 1 and serial:
            found.append(
                (
                    (*pre, "size"),
                    f"{serial}, but this stream's jobs can need up to {top_text} processors",
                )
            )
        if st.arrival.target_load is not None and len(found) == size_found:  # (a size that fits: its mean)
            work = st.mean_size() * st.runtime.mean()
            if not work > 0:
                found.append(
                    ((*pre, "arrival", "target_load"), "needs a runtime distribution with a positive mean")
                )
    alloc = s.grid.site_allocation.name
    if is_stateful(alloc):
        others = [f"'{c.name}' ({c.scheduler.name})" for c in clusters if c.scheduler.name != "lwr"]
        if others:
            found.append(
                (
                    ("grid", "site_allocation", "name"),
                    f"'{alloc}' reads the sites' remaining work and needs every cluster to use the lwr "
                    f"scheduler; not lwr: {known_list(others)}",
                )
            )
    stop, warm = s.run.stop, s.run.warmup
    if endless and stop.horizon is None and stop.completions is None:
        names = known_list([f"'{n}'" for n in endless])
        found.append(
            (
                ("run", "stop"),
                f"give horizon or completions: stream {names} has no count, so the run would never end",
            )
        )
    if stop.completions is not None and warm.completions >= stop.completions:
        found.append(
            (("run", "warmup", "completions"), f"must be less than run.stop.completions ({stop.completions})")
        )
    if stop.horizon is not None and warm.time >= stop.horizon:
        found.append((("run", "warmup", "time"), f"must be less than run.stop.horizon ({stop.horizon:g})"))
    return found


def _lublin_problems(st: LublinStream, pre: tuple, clusters, by_name) -> list[tuple[tuple, str]]:
    """A Lublin stream's machine size fits its target; lwr clusters run serial jobs only."""
    receivers = clusters if st.target == GRID_TARGET else [by_name[st.target]]
    room = max(c.processors for c in receivers)
    if st.processors is not None and st.processors > room:
        where = "every cluster" if st.target == GRID_TARGET else f"cluster '{st.target}'"
        return [((*pre, "processors"), f"jobs of up to {st.processors} processors are larger than {where} "
                                       f"({room} processors)")]
    serial = _serial_clusters(receivers)
    if serial:
        return [((*pre, "target"), f"{serial}; Lublin-Feitelson jobs are parallel")]
    return []


def _serial_clusters(clusters) -> str:
    """Which of ``clusters`` use a scheduler of one-processor jobs only (its "serial" capability),
    as the errors say it ("cluster 'a' uses the lwr scheduler, which runs one-processor jobs
    only"); "" if none."""
    serial = [c for c in clusters if c.scheduler.name in LOCAL_SCHEDULERS
              and "serial" in LOCAL_SCHEDULERS.get(c.scheduler.name).capabilities]
    if not serial:
        return ""
    if len({c.scheduler.name for c in serial}) > 1:
        named = [f"'{c.name}' ({c.scheduler.name})" for c in serial]
        return f"clusters {known_list(named)} use schedulers that run one-processor jobs only"
    names = [f"'{c.name}'" for c in serial]
    who = f"cluster {names[0]} uses" if len(names) == 1 else f"clusters {known_list(names)} use"
    return f"{who} the {serial[0].scheduler.name} scheduler, which runs one-processor jobs only"


# --- errors: pydantic locations -> dotted field paths ---------------------------------------------


def _strip(tp: Any) -> tuple[Any, str | None]:
    """Remove Annotated and Optional wrappers; return the core type and any discriminator."""
    disc = None
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            args = get_args(tp)
            for meta in args[1:]:
                if isinstance(meta, FieldInfo) and isinstance(meta.discriminator, str):
                    disc = meta.discriminator
            tp = args[0]
            continue
        if origin in (Union, types.UnionType):
            members = [a for a in get_args(tp) if a is not type(None)]
            if len(members) == 1:
                tp = members[0]
                continue
        return tp, disc


def _model_field(model: type[BaseModel], key: Any) -> FieldInfo | None:
    if not isinstance(key, str):
        return None
    for name, f in model.model_fields.items():
        if key == name or key == f.alias:
            return f
    return None


def _union_tags(tp: Any, disc: str | None) -> dict[str, Any]:
    """tag -> member for a discriminated union of models."""
    out: dict[str, Any] = {}
    if get_origin(tp) not in (Union, types.UnionType):
        return out
    for member in get_args(tp):
        if isinstance(member, type) and issubclass(member, BaseModel):
            for name, f in member.model_fields.items():
                if (disc is None or disc in (name, f.alias)) and get_origin(f.annotation) is Literal:
                    for tag in get_args(f.annotation):
                        out[tag] = member
    return out


def _walk(root: type[BaseModel], loc: tuple) -> tuple[list, Any, str | None, type[BaseModel] | None]:
    """Follow ``loc`` through the model types, dropping union tags.

    Returns (path, type at the end, its discriminator, the innermost model seen).
    """
    path: list = []
    tp: Any = root
    disc: str | None = None
    parent: type[BaseModel] | None = None
    for el in loc:
        if el == "[key]":
            continue
        if tp is not None:
            tp, d = _strip(tp)
            disc = d or disc
            tags = _union_tags(tp, disc)
            if isinstance(el, str) and el in tags:
                tp, disc = tags[el], None
                continue
        path.append(el)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            parent = tp
            f = _model_field(tp, el)
            tp, disc = (
                (f.annotation, f.discriminator if isinstance(f.discriminator, str) else None)
                if f
                else (None, None)
            )
        elif get_origin(tp) is list:
            tp, disc = get_args(tp)[0], None
        elif get_origin(tp) is dict:
            tp, disc = get_args(tp)[1], None
        else:
            tp, disc = None, None
    if tp is not None:
        tp, d = _strip(tp)
        disc = d or disc
    return path, tp, disc, parent


def _reword(err: dict, tp: Any, disc: str | None, parent: type[BaseModel] | None) -> str:
    kind, msg, ctx = err["type"], err["msg"], err.get("ctx") or {}
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        name = str(err["loc"][-1]) if err["loc"] else "?"
        text = f"unknown field '{name}'"
        if parent is not None:
            fields = [f.alias or n for n, f in parent.model_fields.items()]
            close = difflib.get_close_matches(name, fields, n=1, cutoff=0.6)
            if close:
                text += f"; did you mean '{close[0]}'?"
            text += f" (allowed: {', '.join(fields)})"
        return text
    if kind == "union_tag_invalid":
        field = str(ctx.get("discriminator", "kind")).strip("'")
        known = str(ctx.get("expected_tags", "")).replace("'", "")
        return f"unknown {field} '{ctx.get('tag')}'; known: {known}"
    if kind == "union_tag_not_found":
        field = ctx.get("discriminator", "'kind'").strip("'")
        tags = ", ".join(_union_tags(tp, disc))
        return f"'{field}' is required" + (f" (one of: {tags})" if tags else "")
    if kind in ("value_error", "assertion_error"):
        return msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if kind == "too_short" and "min_length" in ctx:
        n = ctx["min_length"]
        return f"must have at least {n} item{'s' if n != 1 else ''}"
    if kind == "string_too_short" and ctx.get("min_length") == 1:
        return "must not be empty"
    if msg.startswith("Input should be "):
        return "must be " + msg.removeprefix("Input should be ")
    return msg


#: Problems a ScenarioError lists; past them one more says how many were left out (a body of 100,000
#: unknown keys made 100,000 messages, each with a did-you-mean search: 10 s and a 10 MB answer).
MAX_ERRORS = 100


def _error_items(exc: ValidationError, root: type[BaseModel]) -> list[tuple[tuple, str]]:
    """Every problem in ``exc`` (the first :data:`MAX_ERRORS`) as (path elements, message), tags
    dropped, messages reworded."""
    out: list[tuple[tuple, str]] = []
    left_out = 0
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        if err["type"] == _PROBLEMS:
            for sub, message in err["ctx"]["problems"]:
                if len(out) >= MAX_ERRORS:
                    left_out += 1
                    continue
                path, *_ = _walk(root, loc + tuple(sub))
                out.append((tuple(path), message))
            continue
        if len(out) >= MAX_ERRORS:
            left_out += 1
            continue
        path, tp, disc, parent = _walk(root, loc)
        out.append((tuple(path), _reword(err, tp, disc, parent)))
    if left_out:
        out.append(((), f"and {left_out:,} more problems (the first {MAX_ERRORS} are listed)"))
    seen: set = set()
    unique = []
    for item in out:
        if item not in seen:
            seen.add(item)
            unique.append(item)
    return unique


def field_errors(exc: ValidationError, root: type[BaseModel] | None = None) -> list[FieldError]:
    """Convert a ``ValidationError`` raised by ``root`` (default :class:`Scenario`) to FieldErrors."""
    return [FieldError(".".join(map(str, p)), m) for p, m in _error_items(exc, root or Scenario)]


# --- loading ------------------------------------------------------------------------------------

_SUFFIXES = (".json", ".yaml", ".yml")


def _looks_like_path(text: str) -> bool:
    if "\n" in text or text.lstrip().startswith(("{", "[")):
        return False
    return text.strip().lower().endswith(_SUFFIXES) or Path(text).is_file()


def _parse_text(text: str, label: str | None, json_first: bool) -> Any:
    try:
        return _parse_json_or_yaml(text, label, json_first)
    except RecursionError:  # (both parsers recurse once per level: 5,000 nested brackets crashed the CLI)
        raise ScenarioError("nested too deeply to read (a scenario nests about ten levels)", source=label) from None


def _parse_json_or_yaml(text: str, label: str | None, json_first: bool) -> Any:
    if json_first:
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            if label and label.lower().endswith(".json"):
                raise ScenarioError(
                    f"invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}", source=label
                ) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        context = getattr(e, "context", None)
        detail = f"{problem} ({context})" if context else problem
        raise ScenarioError(f"invalid YAML{where}: {detail}", source=label) from None


#: The largest whole number a scenario may hold anywhere: the engine keeps counts, sizes and seeds
#: as 64-bit integers (a 10^400 count overflowed converting to float after validation: a 500).
INT_MAX = 2**63 - 1


def huge_numbers(data: Any) -> list[FieldError]:
    """A field error for every whole number in ``data`` (a parsed document) past :data:`INT_MAX`,
    naming its path; one pass over the document, before the schema converts any of them."""
    found: list[FieldError] = []
    stack: list[tuple[Any, tuple]] = [(data, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, list):
            try:  # a list of numbers (a choice's values): min and max in C, not a Python loop
                if -INT_MAX <= min(node) and max(node) <= INT_MAX:
                    continue
            except (TypeError, ValueError):  # (not all numbers, or empty)
                pass
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            if isinstance(value, (dict, list)):
                stack.append((value, (*path, key)))
            elif type(value) is int and not -INT_MAX <= value <= INT_MAX:
                digits = len(str(abs(value))) if abs(value) < 10**4000 else "thousands of"
                found.append(FieldError(".".join(map(str, (*path, key))),
                                        f"too large: a whole number of {digits} digits (at most "
                                        f"{INT_MAX:,}; a quantity that is not a count can be written 1e20)"))
    found.sort(key=lambda e: e.path)
    return found


def load_scenario(source: Any, *, base_dir: str | os.PathLike | None = None) -> Scenario:
    """Load and validate a scenario.

    Parameters
    ----------
    source : path, dict, str or Scenario
        A ``.json``/``.yaml``/``.yml`` file (``str`` or ``os.PathLike``), an already parsed
        dict, or the JSON/YAML text itself. A ``Scenario`` is returned unchanged.
    base_dir : path, optional
        Directory that relative trace paths are resolved against. Default: the
        scenario file's directory, or the current directory for dicts and text.

    Raises
    ------
    ScenarioError
        Listing every problem found, each with a dotted field path; for a file that
        does not exist or does not parse, naming the file (and line).
    """
    if isinstance(source, Scenario):
        return source
    label: str | None = None
    if isinstance(source, bytes):
        source = source.decode("utf-8")
    if isinstance(source, os.PathLike) or (isinstance(source, str) and _looks_like_path(source)):
        path = Path(source)
        label = str(path)
        if not path.is_file():
            raise ScenarioError("file not found", source=label)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ScenarioError(f"cannot read the file: {e}", source=label) from None
        data = _parse_text(text, label, json_first=path.suffix.lower() == ".json")
        if base_dir is None:
            base_dir = path.resolve().parent
    elif isinstance(source, str):
        data = _parse_text(source, None, json_first=source.lstrip().startswith("{"))
    else:
        data = source
    if not isinstance(data, dict):
        raise ScenarioError(
            f"a scenario must be a mapping of fields, not {type(data).__name__}", source=label
        )
    huge = huge_numbers(data)
    if huge:
        raise ScenarioError(huge, source=label)
    # n_max: evolving stages are bounded by their target cluster's processors (simengine.evolving.schema)
    context = {"base_dir": str(base_dir) if base_dir is not None else os.getcwd(), "n_max": math.inf}
    try:
        return Scenario.model_validate(data, context=context)
    except ValidationError as e:
        raise ScenarioError(field_errors(e), source=label) from None


def trace_base_dir(scenario: Scenario) -> str | None:
    """The directory the scenario's relative file paths (traces, down-interval files) were
    resolved against: what ``load_scenario(json, base_dir=...)`` needs to reload the scenario
    from its JSON in another process (None: it names no file). (Not a trace's own directory:
    ``../demo/x.swf`` resolved from there is another file.)"""
    if not (any(getattr(s, "resolved_path", None) for s in scenario.workload.streams)
            or any(c.failures is not None and c.failures.down_file for c in scenario.platform.clusters)):
        return None
    return scenario._base_dir or os.getcwd()


def scenario_hash(scenario: Scenario) -> str:
    """sha256 (hex) of the canonical JSON of the validated scenario (sorted keys, no spaces)."""
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    text = json.dumps(
        scenario.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
