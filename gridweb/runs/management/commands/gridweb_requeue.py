"""``python manage.py gridweb_requeue [--dry-run]``: hand lost runs to the workers again.

For a full-stack site after an incident (a worker machine lost power, Redis lost its data):

* queued runs handed over before are dispatched again, and waiting ones as their owners' fair
  share allows (``execution.dispatch_waiting``);
* running runs whose execution is gone (no heartbeat for ``HEARTBEAT_STALE``, or a process of
  this machine that no longer exists) are dispatched again and restart cleanly -- what every
  Celery worker also does by itself every ``GRIDWEB_RECOVERY_SECONDS`` (gridweb.runs.tasks);
* sweeps whose points have all ended are aggregated.

Dispatching a run twice is harmless: the first delivery claims it, a second one finds it
running (and waits, then skips it once it has ended) or finished (and skips it).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from gridweb.runs import execution
from gridweb.runs.models import FINISHED, Run, Status, Sweep
from gridweb.runs.sweeps import finish_sweep


class Command(BaseCommand):
    help = "Dispatch queued runs and runs whose worker died to the Celery workers again (full-stack mode)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="only list what would be dispatched")

    def handle(self, *args, dry_run: bool = False, **options) -> None:
        if execution.embedded():
            raise CommandError("embedded mode: the web process's worker requeues runs itself when it starts")
        queued = list(Run.objects.filter(status=Status.QUEUED).order_by("pk"))
        lost = execution.lost_runs(timezone.now())
        for run in queued + lost:
            # never handed over: waiting for its owner's fair share, which the dispatch pass below gives
            waiting = run.status == Status.QUEUED and run.dispatched_at is None
            self.stdout.write(f"run {run.pk} ({run.status}{', was on ' + run.worker if run.worker else ''}): "
                              + ("waits for its turn (fair share)" if waiting
                                 else "would dispatch" if dry_run else "dispatched"))
            if not dry_run and not waiting:
                execution.dispatch(run.pk)
        if not dry_run:
            execution.dispatch_waiting()
        finished = 0
        for sweep in Sweep.objects.exclude(status__in=FINISHED):
            if not dry_run and finish_sweep(sweep.pk):
                finished += 1
        self.stdout.write(self.style.SUCCESS(
            f"{len(queued)} queued and {len(lost)} interrupted runs {'to dispatch' if dry_run else 'dispatched'}; "
            f"{finished} sweeps aggregated"))
