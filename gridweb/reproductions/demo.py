"""The demo set's reproductions: every paper's quick reproduction, public, of the demo user
(``manage.py gridweb_demo`` creates what is missing; with ``--run-now`` it executes them too,
so a first ``make run`` starts with every paper's claims on the reproductions page)."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings

from gridweb.runs.models import Status
from gridweb.sharing import Visibility
from simengine import reproductions as recipes

from .execution import create_reproduction, dispatch, execute_reproduction
from .models import Reproduction


def load_demo_reproductions(user, *, run_now: bool = False, reset: bool = False,
                            say: Callable[[str], None] = lambda text: None) -> list[tuple[Reproduction, str]]:
    """Create (and with ``run_now`` execute) the missing quick reproductions; returns
    (reproduction, what happened) for each paper."""
    if reset:
        Reproduction.objects.filter(owner=user, curated=True).delete()
    outcome = []
    for name in recipes.RECIPES:
        rep = (Reproduction.objects.filter(owner=user, curated=True, recipe=name, quick=True)
               .exclude(status__in=(Status.FAILED, Status.CANCELLED)).order_by("-pk").first())
        what = "exists"
        if rep is None:
            rep = create_reproduction(user, name, quick=True, visibility=Visibility.PUBLIC, curated=True,
                                      dispatch_now=False)
            what = "created"
            say(f"created reproduction #{rep.pk}: {rep.name}")
            if not run_now and not settings.GRIDWEB_EMBEDDED_WORKER:
                dispatch(rep.pk)
        if run_now and rep.status == Status.QUEUED:
            what = execute_reproduction(rep.pk)
            rep.refresh_from_db()
            say(f"  executed reproduction #{rep.pk}: {what}" + (f" — {rep.error}" if rep.error else ""))
        outcome.append((rep, what))
    return outcome
