"""The ``evolving`` local scheduler: a cluster that runs one evolving stream (Klein & Pérez).

Its parameters pick the algorithm of Tables 1-2 and the options of
:class:`~simengine.evolving.models.EvolvingScenario`; :mod:`simengine.evolving.run` does
the scheduling. Validation sends only evolving streams to such a cluster, so the rigid,
arriving-over-time interface every local scheduler has is only reached by the kernel
warm-up; it schedules rigid jobs by conservative backfilling (the paper's CBF baseline).
"""
from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

import simengine.schedulers  # noqa: F401  (registers conservative, used below)
from simengine.evolving.models import EvolvingScenario
from simengine.registry import LOCAL_SCHEDULERS

EVOLVING_SCHEDULER = "evolving"


class EvolvingParams(BaseModel):
    """Parameters of the ``evolving`` scheduler (docs/evolving.md)."""

    model_config = ConfigDict(strict=True, extra="forbid")
    algorithm: Literal["cbf", "nos", "mic", "mic+c", "inf", "inf+c"] = Field(
        "nos", description="cbf (rigid baseline), nos (no stretching), mic (stretch limit 2), "
                           "inf (no limit); +c: the compacting pass")
    move_first_stage: bool = Field(True, description="Move the first stage right rather than stretch it")
    release: Literal["last_acquired", "highest"] = Field(
        EvolvingScenario.model_fields["release"].default,
        description="Which nodes a shrinking application frees in the node mapping")


@LOCAL_SCHEDULERS.register(EVOLVING_SCHEDULER, EvolvingParams,
                           "Rigid and evolving applications (Klein & Pérez), for evolving streams",
                           capabilities=("model",))
def schedule(submit, runtime, estimate, size, processors, params, horizon=math.inf):
    cbf = LOCAL_SCHEDULERS.get("conservative")
    return cbf.implementation(submit, runtime, estimate, size, processors, cbf.params(), horizon)
