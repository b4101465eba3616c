"""The Celery task of a reproduction (full-stack mode; see gridweb.reproductions.execution)."""

from __future__ import annotations

from celery import shared_task

from gridweb.runs.execution import worker_name

from . import execution


@shared_task(name=execution.EXECUTE_REPRODUCTION, bind=True, acks_late=True, reject_on_worker_lost=True)
def execute_reproduction_task(self, pk: int) -> str:
    return execution.execute_reproduction(pk, worker=worker_name(self.request.hostname))
