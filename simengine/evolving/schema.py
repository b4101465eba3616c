"""The evolving model's part of the scenario schema (docs/evolving.md): the ``evolving`` stream
kind and its cross-field check, registered with simengine.schema_base."""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from simengine.evolving.models import Application
from simengine.evolving.scheduler import EVOLVING_SCHEDULER
from simengine.schema_base import GRID_TARGET, Problems, StrictModel, problems, scenario_check

__all__ = ["EvolvingGenerate", "EvolvingStream", "evolving_problems", "is_evolving"]

_Range = Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=2, max_length=2)]


class EvolvingGenerate(StrictModel):
    """Klein & Perez's generator: inclusive [low, high] integer ranges (docs/evolving.md)."""

    applications: _Range = Field([15, 20], description="Number of applications: [low, high], inclusive")
    stages: _Range = Field([1, 10], description="Stages per application: [low, high], inclusive")
    duration: _Range = Field([500, 3600], description="Stage duration in seconds: [low, high], inclusive")
    nodes: _Range = Field([1, 75], description="Nodes per stage: [low, high], inclusive; high at most the "
                                               "target's processors")

    @model_validator(mode="after")
    def _ordered(self):
        found = [((k,), f"low must not exceed high (got {v[0]} > {v[1]})")
                 for k in ("applications", "stages", "duration", "nodes") if (v := getattr(self, k))[0] > v[1]]
        if found:
            raise problems(found)
        return self


class EvolvingStream(StrictModel):
    """Rigid and evolving applications (Klein & Perez), all given at time 0 to one cluster whose
    scheduler is ``evolving``: the ``applications`` themselves, or ``generate`` ranges drawn per
    replication (docs/evolving.md)."""

    kind: Literal["evolving"] = Field("evolving", description="Stream kind: evolving (rigid and evolving "
                                                              "applications, Klein & Pérez)")
    name: str = Field(min_length=1, description="Unique stream name")
    target: str = Field(description="One cluster (not grid) whose scheduler is evolving; its processors are n_max")
    applications: list[Application] | None = Field(
        None, description="The applications, each {name, stages} or a bare list of stages; give this or generate")
    generate: EvolvingGenerate | None = Field(
        None, description="Ranges the applications are drawn from, per replication; give this or applications")

    @model_validator(mode="after")
    def _exactly_one(self):
        if (self.applications is None) == (self.generate is None):
            got = "both" if self.applications is not None else "neither"
            raise problems([(("applications",), f"give exactly one of applications or generate (got {got})")])
        if self.applications is not None and not self.applications:
            raise problems([(("applications",), "must have at least one application")])
        return self


@scenario_check(order=10)
def evolving_problems(s, check_policy=None) -> Problems:
    """An evolving stream is alone in its scenario and targets one cluster scheduled by
    ``evolving``, whose processors (n_max) bound every stage; an evolving cluster takes
    only evolving streams."""
    found: list[tuple[tuple, str]] = []
    by_name = {c.name: c for c in s.platform.clusters}
    evolving = [c.name for c in s.platform.clusters if c.scheduler.name == EVOLVING_SCHEDULER]
    streams = s.workload.streams
    first = next((i for i, st in enumerate(streams) if isinstance(st, EvolvingStream)), None)
    for i, st in enumerate(streams):
        pre = ("workload", "streams", i)
        if not isinstance(st, EvolvingStream):
            if first is not None:
                found.append(((*pre, "kind"), f"a scenario with an evolving stream (streams.{first}) takes no "
                                              "other stream"))
            elif st.target in evolving or (st.target == GRID_TARGET and evolving):
                where = st.target if st.target in evolving else evolving[0]
                found.append(((*pre, "target"), f"cluster '{where}' uses the evolving scheduler, which takes "
                                                "only evolving streams"))
            continue
        if i != first:
            found.append(((*pre, "kind"), f"a scenario takes one evolving stream (another: streams.{first})"))
            continue
        if st.target == GRID_TARGET:
            found.append(((*pre, "target"), "an evolving stream targets one cluster (by name), not the grid"))
            continue
        cluster = by_name.get(st.target)
        if cluster is None:
            continue  # reported as an unknown cluster
        if cluster.scheduler.name != EVOLVING_SCHEDULER:
            found.append(((*pre, "target"), f"cluster '{cluster.name}' uses the {cluster.scheduler.name} "
                                            f"scheduler; evolving streams need scheduler '{EVOLVING_SCHEDULER}'"))
        n_max = cluster.processors
        for a, app in enumerate(st.applications or []):
            for k, stage in enumerate(app.stages):
                if stage.nodes > n_max:
                    found.append(((*pre, "applications", a, "stages", k, "nodes"),
                                  f"must be at most n_max ({n_max}, the processors of cluster "
                                  f"'{cluster.name}'); got {stage.nodes}"))
        if st.generate is not None and st.generate.nodes[1] > n_max:
            found.append(((*pre, "generate", "nodes"), f"must be at most n_max ({n_max}, the processors of "
                                                       f"cluster '{cluster.name}'); got {st.generate.nodes[1]}"))
    return found


def is_evolving(scenario: Any) -> bool:
    return any(isinstance(s, EvolvingStream) for s in scenario.workload.streams)
