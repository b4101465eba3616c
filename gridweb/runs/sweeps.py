"""Finishing a parameter sweep: when every point's run has ended, tabulate them.

``Sweep.aggregate`` is a list with one row per point, in the order of the grid
(``simengine.expand_sweep``'s order, which is the order the runs were created in)::

    {"point": 0, "run": 17, "status": "done",
     "parameters": {"workload.streams.0.arrival.target_load": 0.5},
     "metrics": {"mean_wait": {"mean": 812.4, "ci_low": 790.1, "ci_high": 834.7, "half_width": 22.3,
                               "replications": 10}, ...}}

The metrics are every metric of each run's ``summary`` (percentiles, per-cluster utilisation,
kill rates ... as the model reports them; sweeps aggregated before kept only
``simengine.sweep.TABLE_METRICS``); ``ci_low``/``ci_high`` are ``None`` when the scenario has one replication, and
``metrics`` is empty for a point that did not finish ``done``. A failed point marks the sweep
``failed`` but keeps every other point's row.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from .models import FINISHED, Run, Status, Sweep


def point_row(index: int, run: Run) -> dict[str, Any]:
    """The aggregate row of one point (see the module docstring)."""
    metrics: dict[str, dict[str, float | None]] = {}
    if run.status == Status.DONE:
        stored = (run.summary or {}).get("metrics") or {}
        for name, metric in stored.items():  # every metric the run has: the page plots and exports any
            metrics[name] = {key: metric.get(key) for key in ("mean", "ci_low", "ci_high", "half_width")
                             if key in metric}
            if "shaky" in metric:  # (results stored before the flag have none: it is worked out when shown)
                metrics[name]["shaky"] = metric["shaky"]
            metrics[name]["replications"] = len([v for v in metric.get("values") or [] if v is not None])
    return {"point": index, "run": run.pk, "status": run.status, "parameters": run.sweep_point,
            "metrics": metrics}


def sweep_status(statuses: list[str]) -> str:
    """A sweep is failed if a point failed, cancelled if a point was cancelled, else done."""
    if Status.FAILED in statuses:
        return Status.FAILED
    if Status.CANCELLED in statuses:
        return Status.CANCELLED
    return Status.DONE


def finish_sweep(sweep_id: int) -> bool:
    """Aggregate the sweep if all its runs have ended; True when it is (now) finished.

    Called by the Celery chord's callback, by the embedded worker after the points, and after
    every point's run ends (a point whose task was terminated never reaches the chord). Safe to
    call twice: the aggregate is computed from the runs each time, and written once.
    """
    with transaction.atomic():
        sweep = Sweep.objects.select_for_update().filter(pk=sweep_id).first()
        if sweep is None:
            return False
        if sweep.status in FINISHED:
            return True
        runs = list(Run.objects.filter(sweep=sweep).order_by("pk"))
        if not runs or any(run.status not in FINISHED for run in runs):
            return False
        sweep.aggregate = [point_row(i, run) for i, run in enumerate(runs)]
        sweep.status = sweep_status([run.status for run in runs])
        sweep.finished_at = timezone.now()
        sweep.save(update_fields=["aggregate", "status", "finished_at", "updated"])
    return True


def mark_sweep_running(sweep_id: int | None) -> None:
    """A sweep is running from the moment its first point starts."""
    if sweep_id is not None:
        Sweep.objects.filter(pk=sweep_id, status=Status.QUEUED).update(status=Status.RUNNING)
