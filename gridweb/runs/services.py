"""What pages and the API call to start, cancel and inspect runs and sweeps.

``create_run`` validates through the engine's schema, stores the run as ``queued`` and
hands it to a worker once the transaction commits: a Celery task in full-stack mode, the
embedded in-process worker otherwise (``settings.GRIDWEB_EMBEDDED_WORKER``).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

import simengine
from gridweb.scenarios.validation import validate_spec
from gridweb.sharing import Visibility, default_group

from .models import Run


def describe_platform(scenario: simengine.Scenario) -> str:
    clusters = scenario.platform.clusters
    total = sum(c.processors for c in clusters)
    return f"{len(clusters)} cluster{'s' if len(clusters) != 1 else ''}, {total} processors"


def describe_policy(scenario: simengine.Scenario) -> str:
    """Local schedulers (and grid policies) by name, for the gallery's policy filter."""
    names = [c.scheduler.name for c in scenario.platform.clusters]
    grid = getattr(scenario, "grid", None)
    for attr in ("site_allocation", "placement", "claiming"):
        policy = getattr(grid, attr, None) if grid is not None else None
        if policy is not None and getattr(policy, "name", None):
            names.append(policy.name)
    return ",".join(dict.fromkeys(names))


def create_run(user, spec: dict[str, Any], *, name: str | None = None, scenario=None,
               visibility: str = Visibility.PRIVATE, group=None, tags: list[str] | None = None,
               description: str = "", sweep=None, sweep_point: dict | None = None,
               curated: bool = False, dispatch_now: bool = True) -> Run:
    """Validate ``spec`` (raises ``SpecInvalid``), store a queued Run and dispatch it."""
    engine_scenario = validate_spec(spec, user)
    run = Run.objects.create(
        owner=user, group=group if group is not None else default_group(user), visibility=visibility,
        name=name or engine_scenario.name or "run", description=description, tags=list(tags or []),
        scenario=scenario, spec=spec, sweep=sweep, sweep_point=sweep_point or {}, curated=curated,
        seed=engine_scenario.run.seed, scenario_hash=simengine.scenario_hash(engine_scenario),
        engine_version=simengine.__version__, policy=describe_policy(engine_scenario),
        platform=describe_platform(engine_scenario),
    )
    if dispatch_now:
        transaction.on_commit(lambda: dispatch(run.pk))
    return run


def dispatch(run_id: int) -> None:
    """Hand a queued run to a worker (implemented in gridweb.runs.execution)."""
    from .execution import dispatch as dispatch_run

    dispatch_run(run_id)
