"""Cao's system in the scenario schema (MODELS.md §6, docs/cao.md).

* ``scojo-pect``, a local scheduler (LOCAL_SCHEDULERS): SCOJO-PECT's time slices per class
  with suspend/resume and conservative backfilling per class layer. Its parameters are
  :class:`~simengine.cao.engine.CaoParams`' per-cluster fields with Cao's defaults.
* ``rars-heft``, a workflow scheduling policy (WORKFLOW_SCHEDULING, the scenario's
  ``grid.workflow_scheduling``): a fraction of the eligible jobs become 5-task workflows
  (:func:`simengine.cao.workflows.split_workflows`) placed with relaxed reservations by
  RARS-HEFT; ``none`` (the default) makes none.

Both are run by :mod:`simengine.cao.run` (``simengine.run`` dispatches there when every
cluster uses ``scojo-pect``); validation keeps such clusters away from every other path, so
the rigid, arriving-over-time interface every local scheduler has is only reached by the
kernels' warm-up, and schedules by conservative backfilling.
"""
from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_serializer, model_validator

import simengine.schedulers  # noqa: F401  (registers conservative, used below)
from simengine.cao.admission import DEFAULT_ADMISSION  # (registers the built-in admission)
from simengine.cao.engine import CaoParams
from simengine.cao.workflows import COMM_RANGE
from simengine.registry import LOCAL_SCHEDULERS, NoParams, RESERVATION_ADMISSION, WORKFLOW_SCHEDULING

__all__ = ["SCOJO_PECT", "RARS_HEFT", "ScojoPectParams", "RarsHeftParams", "cao_params"]

SCOJO_PECT = "scojo-pect"
RARS_HEFT = "rars-heft"

_D = CaoParams()  # Cao's values, the defaults below


class ScojoPectParams(BaseModel):
    """Parameters of the ``scojo-pect`` scheduler (Cao's Table 4; docs/cao.md)."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)
    interval: float = Field(_D.interval, gt=0, description="Length of one round of slices (s)")
    short_limit: float = Field(_D.short_limit, gt=0, description="Short jobs: estimate below this (s)")
    medium_limit: float = Field(_D.medium_limit, gt=0, description="Medium jobs: estimate below this (s); "
                                                                    "long otherwise")
    short_slice_max: float = Field(_D.short_slice_max, ge=0, description="Cap on the dynamic short slice (s)")
    medium_share: float = Field(_D.medium_share, gt=0, lt=1,
                                description="Medium slice's share of the interval after the short slice; "
                                            "long gets the rest")
    overhead: float = Field(_D.overhead, ge=0, description="Added to a job's remaining time at each "
                                                           "preemption (suspend at a slice end) (s)")
    cross_slice_backfill: bool = Field(_D.cross_slice_backfill,
                                       description="Let waiting jobs of other classes backfill into a slice "
                                                   "when that delays nobody")

    @model_validator(mode="after")
    def _consistent(self):
        # CaoParams' own cross-field rules, reported on this model's fields
        try:
            CaoParams(**self.model_dump())
        except ValueError as e:
            raise ValueError(str(e).replace("cao.", "")) from None
        return self


def _admission_names(schema: dict) -> None:
    # read when the schema is made (the builder, the API), so installed policies are listed too
    schema["enum"] = RESERVATION_ADMISSION.names()


class AdmissionRef(BaseModel):
    """A reservation admission policy (RESERVATION_ADMISSION) by name, with its parameters
    (defaults filled in once validated)."""

    model_config = ConfigDict(strict=True, extra="forbid")
    name: str = Field(DEFAULT_ADMISSION, description="Registered reservation admission policy",
                      json_schema_extra=_admission_names)
    params: dict[str, Any] = Field({}, description="The policy's parameters, checked against its own model")

    @model_validator(mode="after")
    def _known(self):
        if self.name not in RESERVATION_ADMISSION:
            raise ValueError(f"unknown {RESERVATION_ADMISSION.kind} '{self.name}'; known: "
                             f"{', '.join(RESERVATION_ADMISSION.names())}")
        model = RESERVATION_ADMISSION.get(self.name).params
        try:
            self.params = model.model_validate(self.params).model_dump(mode="json")
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(x) for x in first["loc"])
            raise ValueError(f"params{'.' + where if where else ''}: {first['msg']}") from None
        return self


class RarsHeftParams(BaseModel):
    """Parameters of ``rars-heft``: which jobs become workflows and RARS-HEFT's knobs
    (thesis §4.4-4.11, Figures 22-27; docs/cao.md)."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)
    fraction: float = Field(0.4, ge=0, le=1, description="Share of the eligible jobs (runtime in (6000, "
                                                         "60000) s, > 10 processors) turned into 5-task "
                                                         "workflows")
    streams: list[str] | None = Field(None, description="Names of the streams whose eligible jobs may become "
                                                        "workflows (default: every stream)")
    comm: list[float] = Field(list(COMM_RANGE), min_length=2, max_length=2,
                              description="Communication time per edge, uniform on [low, high] (s)")
    slpa: float = Field(_D.slpa, ge=0, description="Slack portion ahead, eq. (5)")
    slpb: float = Field(_D.slpb, ge=0, description="Slack portion behind, eq. (4)")
    maf: float = Field(_D.maf, ge=0, description="Move-ahead factor, eq. (5)")
    nbp_medium: float = Field(_D.nbp_medium, ge=0, description="Non-type backfilling probability, medium tasks")
    nbp_long: float = Field(_D.nbp_long, ge=0, description="Non-type backfilling probability, long tasks")
    propagation: bool = Field(True, description="Propagation heuristics (Algorithm 2) on task completion")
    propagation_replan: Literal["queue", "gaps"] = Field(
        _D.propagation_replan,
        description="When propagation lowers a task's EST: re-plan its class's queue in queue order (queue) "
                    "or only let it move into holes (gaps)")
    late_task: Literal["behind", "replan"] = Field(
        _D.late_task,
        description="A task due before its predecessors finish: re-placed behind every other slot (behind) "
                    "or kept at its queue position with the class re-planned (replan)")
    admission: AdmissionRef = Field(
        default_factory=AdmissionRef,
        description="Which cluster and frame [EST, LFT] each task's reservation gets (RESERVATION_ADMISSION): "
                    "earliest-lft (Cao's eqs. 4-5, smallest LFT; the default) or a policy written in Python "
                    "(docs/policies/reservation-admission.md)")

    @model_validator(mode="after")
    def _comm(self):
        lo, hi = self.comm
        if not 0 <= lo <= hi:
            raise ValueError(f"comm must be [low, high] with 0 <= low <= high; got [{lo:g}, {hi:g}]")
        return self

    @model_serializer(mode="wrap")
    def _leave_out_default_admission(self, handler):
        # the default is left out, so scenarios written before admission policies keep their hash
        data = handler(self)
        if data.get("admission") == {"name": DEFAULT_ADMISSION, "params": {}}:
            del data["admission"]
        return data


@LOCAL_SCHEDULERS.register(SCOJO_PECT, ScojoPectParams,
                           "SCOJO-PECT (Cao): time slices per job class, suspend/resume, conservative "
                           "backfilling per class; every cluster of the scenario must use it",
                           capabilities=("model",))
def schedule(submit, runtime, estimate, size, processors, params, horizon=math.inf):
    cbf = LOCAL_SCHEDULERS.get("conservative")
    return cbf.implementation(submit, runtime, estimate, size, processors, cbf.params(), horizon)


@WORKFLOW_SCHEDULING.register("none", NoParams, "No workflow grid jobs", capabilities=("model",))
def no_workflows():
    return None


@WORKFLOW_SCHEDULING.register(RARS_HEFT, RarsHeftParams,
                              "Cao's workflows (5 tasks from eligible jobs) with relaxed reservations "
                              "placed by RARS-HEFT; needs scojo-pect clusters", capabilities=("model",))
def rars_heft():
    return None


def cao_params(scheduler: dict, workflow: dict | None, clusters: int, processors: int) -> CaoParams:
    """The engine's :class:`CaoParams` from a validated ``scojo-pect`` params dict and the
    ``rars-heft`` one (None: defaults; workflows then make no difference)."""
    kw = dict(scheduler)
    if workflow is not None:
        kw.update({k: workflow[k] for k in ("slpa", "slpb", "maf", "nbp_medium", "nbp_long", "propagation",
                                        "propagation_replan", "late_task")})
    return CaoParams(clusters=clusters, processors=processors, **kw)
