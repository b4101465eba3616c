"""Celery tasks of the site: ``ping`` checks the wiring (simulations are gridweb.runs.tasks)."""

from celery import shared_task


@shared_task(name="gridweb.ping")
def ping(payload: str = "pong") -> str:
    """Return ``payload``: proves a worker (or the eager runner) executes tasks."""
    return payload
