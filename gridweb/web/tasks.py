"""Celery tasks of the site. Simulation tasks come later; ``ping`` checks the wiring."""

from celery import shared_task


@shared_task(name="gridweb.ping")
def ping(payload: str = "pong") -> str:
    """Return ``payload``: proves a worker (or the eager runner) executes tasks."""
    return payload
