"""Cao's model's part of the scenario schema (docs/cao.md): the cross-field check of scojo-pect
clusters and rars-heft workflows, registered with simengine.schema_base (their parameter models
are registered with the policies, simengine.cao.scheduler)."""
from __future__ import annotations

from typing import Any

from simengine.cao.scheduler import RARS_HEFT, SCOJO_PECT
from simengine.schema_base import Problems, known_list, scenario_check

__all__ = ["cao_problems", "is_cao"]


@scenario_check(order=30)
def cao_problems(s, check_policy=None) -> Problems:
    """Cao's system (simengine.cao.run) runs all clusters together: when one uses scojo-pect,
    every one does, with the same processors, parameters and speed 1; its streams are synthetic,
    trace or lublin ones. rars-heft needs scojo-pect clusters. (Reservations, priorities and
    preemption are refused by simengine.local.schema: scojo-pect is not a queue scheduler.)"""
    found: list[tuple[tuple, str]] = []
    clusters = s.platform.clusters
    cao = [i for i, c in enumerate(clusters) if c.scheduler.name == SCOJO_PECT]
    wf = s.grid.workflow_scheduling
    if wf.name == RARS_HEFT and len(cao) < len(clusters):
        other = next(c for c in clusters if c.scheduler.name != SCOJO_PECT)
        found.append((("grid", "workflow_scheduling", "name"),
                      f"{RARS_HEFT} needs every cluster to use the {SCOJO_PECT} scheduler; cluster '{other.name}' "
                      f"uses {other.scheduler.name}"))
    if wf.name == RARS_HEFT and wf.params.get("streams") is not None:
        names = [st.name for st in s.workload.streams]
        for k, name in enumerate(wf.params["streams"]):
            if name not in names:
                found.append((("grid", "workflow_scheduling", "params", "streams", k),
                              f"unknown stream '{name}'; known: {known_list(names)}"))
    if not cao:
        return found
    ref = clusters[cao[0]]
    for i, c in enumerate(clusters):
        pre = ("platform", "clusters", i)
        if c.scheduler.name != SCOJO_PECT:
            found.append(((*pre, "scheduler", "name"),
                          f"cluster '{ref.name}' uses {SCOJO_PECT}, so every cluster must (Cao's system simulates "
                          f"the clusters together); got '{c.scheduler.name}'"))
            continue
        if c.processors != ref.processors:
            found.append(((*pre, "processors"), f"{SCOJO_PECT} clusters must all have the same processors "
                                                f"(cluster '{ref.name}': {ref.processors}); got {c.processors}"))
        if c.scheduler.params != ref.scheduler.params:
            found.append(((*pre, "scheduler", "params"), f"{SCOJO_PECT} clusters share one calendar: their "
                                                         f"params must equal cluster '{ref.name}''s"))
        if c.speed != 1.0:
            found.append(((*pre, "speed"), f"must be 1 on {SCOJO_PECT} clusters (a workflow task may run on "
                                           f"any of them); got {c.speed:g}"))
    for i, st in enumerate(s.workload.streams):
        if st.kind not in ("synthetic", "trace", "lublin"):
            found.append((("workload", "streams", i, "kind"), f"{SCOJO_PECT} clusters take synthetic, trace and "
                                                              f"lublin streams; got '{st.kind}'"))
    return found


def is_cao(scenario: Any) -> bool:
    """Does the scenario run Cao's system (its clusters use ``scojo-pect``; validation makes it all of them)?"""
    return any(c.scheduler.name == SCOJO_PECT for c in scenario.platform.clusters)
