"""What pages and the API call to start, cancel and inspect runs and sweeps.

``create_run`` validates through the engine's schema, stores the run as ``queued`` and
hands it to a worker once the transaction commits: a Celery task in full-stack mode, the
embedded in-process worker otherwise (``settings.GRIDWEB_EMBEDDED_WORKER``).
``create_sweep`` does the same for every point of a parameter grid (a Celery group whose
chord callback aggregates, see gridweb.runs.sweeps); ``cancel_run`` stops a run.

Bad input raises ``SpecInvalid`` whose ``errors`` map field paths to messages, and nothing
is created; a non-owner's cancel raises Django's ``PermissionDenied``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

import simengine
from simengine.grid.schema import is_coallocation
from simengine.policy_fields import named_policies
from simengine.scenario import GRID_TARGET
from simengine.sweep import point_name
from gridweb.scenarios.validation import SpecInvalid, UserLimitReached, trace_streams, validate_spec
from gridweb.sharing import Visibility, default_group
from simengine.errors import ScenarioError

from .models import FINISHED, Run, RunResult, Status, Sweep
from gridweb.scenarios.models import Scenario, TraceFile
from .sweeps import finish_sweep

#: Largest parameter grid a sweep may have (points = product of the value counts).
MAX_SWEEP_POINTS = 256


def describe_platform(scenario: simengine.Scenario) -> str:
    clusters = scenario.platform.clusters
    total = sum(c.processors for c in clusters)
    return f"{len(clusters)} cluster{'s' if len(clusters) != 1 else ''}, {total} processors"


def describe_policy(scenario: simengine.Scenario) -> str:
    """Every policy the scenario names, for the gallery's policy filter: each field that names a
    policy (simengine.policy_fields: the clusters' scheduler, preemption and victim choice, the
    grid's placement, claiming, ..., and policies named in policies' params, e.g. rars-heft's
    admission), as the validated scenario writes it (a default the engine leaves out of a scenario,
    e.g. no preemption, stays out). The grid's site allocation counts only when some stream sends
    its jobs through it (never beside co-allocated or KOALA streams: the grid layer places those and
    the other streams are local)."""
    routed = not is_coallocation(scenario) and any(s.target == GRID_TARGET for s in scenario.workload.streams)
    names = [named.name for named in named_policies(scenario.model_dump(mode="json"))
             if routed or named.path != "grid.site_allocation"]
    return ",".join(dict.fromkeys(names))


def create_run(user, spec: dict[str, Any], *, name: str | None = None, scenario=None,
               visibility: str = Visibility.PRIVATE, group=None, tags: list[str] | None = None,
               description: str = "", sweep=None, sweep_point: dict | None = None,
               curated: bool = False, dispatch_now: bool = True, idempotency_key: str = "") -> Run:
    """Validate ``spec`` (raises ``SpecInvalid``), store a queued Run and hand it over once the
    transaction commits (``execution.hand_over_new``: the fair dispatcher in full-stack mode).

    Only the row is written here, so a broker outage does not fail or slow the request: the run
    waits in the database until a dispatch pass can send it. ``dispatch_now=False``: the caller
    hands it over itself (``execution.dispatch``, or the sweep's dispatch for its points); the
    fair dispatcher leaves it alone, and only a recovery sweep sends it, if it is still queued
    ``GRIDWEB_HEARTBEAT_STALE_SECONDS`` later (``execution.resend_lost_messages``)."""
    engine_scenario = validate_spec(spec, user)
    if not curated:
        check_active_runs(user)
        check_storage(user)
    held = not dispatch_now and sweep is None
    run = Run.objects.create(
        owner=user, group=group if group is not None else default_group(user), visibility=visibility,
        name=name or engine_scenario.name or "run", description=description, tags=list(tags or []),
        scenario=scenario, spec=spec, sweep=sweep, sweep_point=sweep_point or {}, curated=curated,
        seed=engine_scenario.run.seed, scenario_hash=simengine.scenario_hash(engine_scenario),
        engine_version=simengine.__version__, policy=describe_policy(engine_scenario),
        platform=describe_platform(engine_scenario), idempotency_key=idempotency_key,
        # (held: counted as handed over, so the fair dispatcher leaves it to the caller)
        dispatched_at=timezone.now() if held else None,
    )
    if dispatch_now:
        transaction.on_commit(lambda: _hand_over_new(run.pk))
    return run


def check_active_runs(user, adding: int = 1) -> None:
    """Raise ``UserLimitReached`` when ``adding`` more runs would give ``user`` more queued or running
    runs than this server lets one user have (``settings.GRIDWEB_MAX_ACTIVE_RUNS``; a sweep's
    points count)."""
    cap = settings.GRIDWEB_MAX_ACTIVE_RUNS
    active = Run.objects.filter(owner=user, status__in=[Status.QUEUED, Status.RUNNING]).count()
    if active + adding > cap:
        what = "a run" if adding == 1 else f"{adding:,} runs"
        raise UserLimitReached({"": [f"you have {active:,} runs queued or running and this server lets one user "
                                f"have {cap:,} at once, so {what} more cannot start: wait for some to end, or "
                                "cancel some"]})


def storage_used(user) -> int:
    """Bytes ``user`` keeps on this server: stored results of their runs and their uploaded traces
    (the sizes recorded when each was stored)."""
    results = RunResult.objects.filter(run__owner=user).aggregate(total=Sum("size"))["total"] or 0
    traces = TraceFile.objects.filter(owner=user).aggregate(total=Sum("size"))["total"] or 0
    return int(results) + int(traces)


def check_storage(user) -> None:
    """Raise ``UserLimitReached`` when ``user`` already keeps as much as this server lets one user
    store (``settings.GRIDWEB_USER_STORAGE_MB``): a new run would only add to it."""
    quota = settings.GRIDWEB_USER_STORAGE_MB * 1024 * 1024
    used = storage_used(user)
    if used >= quota:
        raise UserLimitReached({"": [
            f"you store {used / 2**20:,.1f} MB of run results and traces and this server's quota per user is "
            f"{settings.GRIDWEB_USER_STORAGE_MB:,} MB (GRIDWEB_USER_STORAGE_MB), so a new run cannot start: "
            "delete some runs or traces you no longer need"]})


def _hand_over_new(run_id: int) -> None:
    from .execution import hand_over_new  # (the execution machinery imports Celery and the channel layer: loaded when a run is dispatched)

    hand_over_new(run_id)


def dispatch(run_id: int) -> None:
    """Hand a queued run to a worker (implemented in gridweb.runs.execution)."""
    from .execution import dispatch as dispatch_run  # (the execution machinery imports Celery and the channel layer: loaded when a run is dispatched)

    dispatch_run(run_id)


# --- Traces in use ----------------------------------------------------------------------------------


def trace_uses(trace, user) -> list[str]:
    """What would break if ``trace`` were deleted: saved scenarios whose trace streams name it, and
    runs still to simulate (queued or running) that read it. Each is named when ``user`` may view
    it, else counted (their names are not the trace owner's to see)."""
    def uses(spec) -> bool:
        return any(stream.get("path") == trace.stored_name for _, stream in trace_streams(spec))

    scenarios = [s for s in Scenario.objects.filter(spec__icontains=trace.stored_name).order_by("pk") if uses(s.spec)]
    runs = [r for r in Run.objects.filter(status__in=[Status.QUEUED, Status.RUNNING],
                                          spec__icontains=trace.stored_name).order_by("pk") if uses(r.spec)]
    out = [f"scenario #{s.pk} {s.name!r}" for s in scenarios if s.can_view(user)]
    out += [f"run #{r.pk} {r.name!r} ({r.status})" for r in runs if r.can_view(user)]
    hidden = len(scenarios) + len(runs) - len(out)
    if hidden:
        out.append(f"{hidden} scenario{'s' if hidden != 1 else ''} or run{'s' if hidden != 1 else ''} of other users")
    return out


# --- Cancelling -------------------------------------------------------------------------------------


class CannotCancel(Exception):
    """The run has already ended (done or failed); the message says how."""


def cancel_run(run: Run, user) -> Run:
    """Cancel ``run`` for its owner; returns the run as it now is.

    A queued run is ``cancelled`` at once (and its Celery task revoked); a running one gets
    ``cancel_requested``: the worker's progress callback stops it, and in full-stack mode its
    task is also revoked with terminate, so a long replication stops without waiting for the
    next callback (the worker's main process then ends the run ``cancelled``). Cancelling a cancelled run does
    nothing. Raises ``PermissionDenied`` for anyone but the owner (or a superuser) and
    :class:`CannotCancel` for a run that is done or failed.
    """
    if not run.can_edit(user):
        raise PermissionDenied("only the run's owner may cancel it")
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if locked.status == Status.CANCELLED:
            return locked
        if locked.status in FINISHED:
            raise CannotCancel(f"run {locked.pk} has already ended ({locked.status}); only queued or running "
                               "runs can be cancelled")
        was_queued = locked.status == Status.QUEUED
        locked.cancel_requested = True
        fields = ["cancel_requested", "updated"]
        if was_queued:
            locked.status, locked.finished_at = Status.CANCELLED, timezone.now()
            fields += ["status", "finished_at"]
        locked.save(update_fields=fields)
        task_id = locked.task_id
    transaction.on_commit(lambda: _after_cancel(locked, task_id, was_queued))
    return locked


def _after_cancel(run: Run, task_id: str, was_queued: bool) -> None:
    from . import execution  # (the execution machinery imports Celery and the channel layer: loaded when a run is dispatched)

    if task_id and not execution.embedded():
        # Queued: the worker drops the message. Running: the process running it is killed.
        execution.revoke(task_id, terminate=not was_queued)
    if was_queued:
        execution.announce_status(run)
        if run.sweep_id is not None:
            finish_sweep(run.sweep_id)
        execution.dispatch_waiting()  # its place among its owner's runs handed over is free


# --- Sweeps ---------------------------------------------------------------------------------------


def check_sharing(user, visibility: str, group) -> dict[str, list[str]]:
    """Errors of a visibility and group chosen for a new object (empty when fine)."""
    errors: dict[str, list[str]] = {}
    if visibility not in Visibility.values:
        errors["visibility"] = [f"must be one of {', '.join(Visibility.values)}, not {visibility!r}"]
    if group is not None and not getattr(user, "is_superuser", False) \
            and not user.groups.filter(pk=group.pk).exists():
        errors["group"] = [f"you are not a member of the group {group.name!r}"]
    return errors


def sweep_parameter_errors(parameters: Any) -> dict[str, list[str]]:
    """Errors of the ``{"dotted.path": [values, ...]}`` grid itself (empty when fine)."""
    if not isinstance(parameters, dict) or not parameters:
        return {"parameters": ["give at least one parameter to sweep, as {\"dotted.path\": [values, ...]}"]}
    errors: dict[str, list[str]] = {}
    points = 1
    for path, values in parameters.items():
        if not isinstance(path, str) or not path.strip():
            errors["parameters"] = ["every parameter must be a dotted field path such as run.seed"]
        elif not isinstance(values, list) or not values:
            errors[f"parameters.{path}"] = ["needs a non-empty list of values"]
        else:
            points *= len(values)
    if not errors and points > MAX_SWEEP_POINTS:
        errors["parameters"] = [f"the grid has {points} points; at most {MAX_SWEEP_POINTS} are allowed"]
    return errors


def _sweep_errors(exc: ScenarioError, parameters: dict[str, list]) -> dict[str, list[str]]:
    """The engine's sweep errors by field path.

    ``sweep.<path>`` (a bad parameter) becomes ``parameters.<path>``; a point's error
    ``[label] <path>`` stays at ``<path>`` with the point's values in the message, except when
    ``<path>`` is itself a swept parameter: then it is that parameter's (bad) value,
    ``parameters.<path>``.
    """
    errors: dict[str, list[str]] = {}
    for error in exc.errors:
        path, message = error.path, error.message
        if path == "sweep":
            key = "parameters"
        elif path.startswith("sweep."):
            key = "parameters." + path[len("sweep."):]
        elif path.startswith("[") and "] " in path:
            label, _, field = path[1:].partition("] ")
            key = f"parameters.{field}" if field in parameters else field
            message = f"{label}: {message}"
        else:
            key = path
        errors.setdefault(key, []).append(message)
    return errors


def create_sweep(user, spec: dict[str, Any], parameters: dict[str, list], *, name: str | None = None,
                 visibility: str = Visibility.PRIVATE, group=None, tags: list[str] | None = None,
                 description: str = "", scenario=None, idempotency_key: str = "") -> Sweep:
    """Validate every point of the grid, then store a Sweep and one queued Run per point, and
    fan them out once the transaction commits (see ``execution.dispatch_sweep``).

    Raises ``SpecInvalid`` (errors by field path: the base scenario's own paths, or
    ``parameters.<path>`` for a swept value) and creates nothing when any point is invalid.
    """
    errors = check_sharing(user, visibility, group) | sweep_parameter_errors(parameters)
    if errors:
        raise SpecInvalid(errors)
    base = validate_spec(spec, user)
    try:
        points = simengine.expand_sweep(base, parameters)
    except ScenarioError as exc:
        raise SpecInvalid(_sweep_errors(exc, parameters)) from exc
    check_active_runs(user, len(points))
    check_storage(user)
    sweep_name = name or base.name or "sweep"
    with transaction.atomic():
        sweep = Sweep.objects.create(
            owner=user, group=group if group is not None else default_group(user), visibility=visibility,
            name=sweep_name, description=description, tags=list(tags or []), scenario=scenario, spec=spec,
            parameters=parameters, idempotency_key=idempotency_key,
        )
        for point, point_scenario in points:
            label = ", ".join(f"{k}={v}" for k, v in point.items())
            create_run(user, point_scenario.model_dump(mode="json"), name=point_name(sweep_name, label, Run._meta.get_field("name").max_length),
                       scenario=scenario, visibility=visibility, group=sweep.group, tags=tags,
                       sweep=sweep, sweep_point=point, dispatch_now=False)
        transaction.on_commit(lambda: _dispatch_sweep(sweep.pk))
    return sweep


def _dispatch_sweep(sweep_id: int) -> None:
    from .execution import dispatch_sweep  # (the execution machinery imports Celery and the channel layer: loaded when a run is dispatched)

    dispatch_sweep(sweep_id)
