"""Celery tasks of runs and sweeps (full-stack mode; see gridweb.runs.execution).

``gridweb.execute_run`` is acknowledged late and rejected (requeued) when its worker process
is lost, so a run whose worker dies is delivered again; ``execute_run`` then restarts it
cleanly or, if another execution may still be alive, the task looks again a minute later.

A worker killed whole (its main process too) leaves its message unacknowledged until Redis's
visibility timeout (hours): every worker's main process therefore runs a recovery thread that
hands lost runs to the workers again every ``GRIDWEB_RECOVERY_SECONDS``
(``execution.recover_lost_runs``), sends again queued runs whose message the broker lost, and
hands waiting runs over (fair share: ``execution.dispatch_waiting``), e.g. after a broker outage.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from celery import shared_task
from celery.signals import task_revoked, worker_init, worker_ready, worker_shutdown
from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections

from simengine import models

from . import execution
from .sweeps import finish_sweep

log = logging.getLogger(__name__)

DATABASE_RETRY_SECONDS = 60
BUSY_RETRY_SECONDS = 60  # another execution may still be running the run: look again this much later


@shared_task(name=execution.EXECUTE_RUN, bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def execute_run_task(self, run_id: int) -> str:
    """Execute one run on this worker; the outcome (done, failed, cancelled, skipped) is returned."""
    try:
        outcome = execution.execute_run(run_id, worker=execution.worker_name(self.request.hostname))
    except (InterfaceError, OperationalError) as exc:
        # The database is unreachable, so not even the failure could be recorded: try again later
        # (the run, still "running" under this process, then restarts cleanly).
        raise self.retry(exc=exc, countdown=DATABASE_RETRY_SECONDS) from exc
    if outcome == execution.BUSY:
        raise self.retry(countdown=BUSY_RETRY_SECONDS)
    return outcome


@shared_task(name=execution.AGGREGATE_SWEEP)
def aggregate_sweep_task(sweep_id: int) -> bool:
    """Tabulate a sweep's points once they have all ended: the chord callback of sweeps sent by
    earlier versions (a sweep is now aggregated when its last point ends, execution._after_end)."""
    return finish_sweep(sweep_id)


@task_revoked.connect
def end_run_of_terminated_task(sender: Any = None, request: Any = None, terminated: bool = False,
                               **_: Any) -> None:
    """A run's task was revoked with terminate (a cancelled running run): its process is gone,
    so the worker's main process ends the run here (``cancelled``) and tells the watchers."""
    # Revoked before it started: cancel_run already ended the queued run.
    if getattr(sender, "name", None) != execution.EXECUTE_RUN or request is None or not terminated:
        return
    args = getattr(request, "args", None) or ()
    if not args:
        return
    try:
        close_old_connections()
        execution.end_terminated_run(int(args[0]))
    except Exception:  # noqa: BLE001 - never break the worker's main loop
        log.exception("could not end the run of revoked task %s", getattr(request, "id", "?"))
    finally:
        close_old_connections()


@worker_init.connect
def warm_up_engine(**_: Any) -> None:
    """In the worker's main process, before its pool starts: load the engine's compiled parts,
    which the pool's processes inherit, so a run's first rectangles do not wait for them."""
    started = time.perf_counter()
    models.warm_up()
    log.info("engine warmed up in %.1f s", time.perf_counter() - started)


_recovery_stop = threading.Event()


@worker_ready.connect
def start_recovery(**_: Any) -> None:
    """In the worker's main process: look for lost runs now and every GRIDWEB_RECOVERY_SECONDS."""
    _recovery_stop.clear()

    def sweep() -> None:
        while True:
            try:
                close_old_connections()
                execution.recover_lost_runs()
            except Exception:  # noqa: BLE001 - the database may be away for a while; try again later
                log.exception("recovery sweep failed")
            finally:
                close_old_connections()
            if _recovery_stop.wait(settings.GRIDWEB_RECOVERY_SECONDS):
                return

    threading.Thread(target=sweep, name="gridweb-recovery", daemon=True).start()


@worker_shutdown.connect
def stop_recovery(**_: Any) -> None:
    _recovery_stop.set()
