"""A reproduction executed by a Celery worker of the live full-stack site (PostgreSQL, Redis, two
worker processes): the task ``gridweb.execute_reproduction`` runs the recipe in a prefork child
(one process: it may not start a pool) and stores its claims and files."""

from __future__ import annotations

import time

import psycopg
import pytest

pytestmark = pytest.mark.slow

CREATE = """
import json
from django.contrib.auth.models import User
from gridweb.reproductions.execution import create_reproduction
user, _ = User.objects.get_or_create(username="reproducer")
rep = create_reproduction(user, "koala-w50", quick=True)
print(json.dumps(rep.pk))
"""


def test_a_reproduction_runs_on_a_celery_worker(full_stack_site):
    pk = full_stack_site.python_json(CREATE)
    database_url = full_stack_site.env["DATABASE_URL"]
    deadline = time.monotonic() + 180
    while True:
        with psycopg.connect(database_url) as conn:
            status, stage, worker, tally, files, error, task_id = conn.execute(
                "SELECT status, stage, worker, tally, files, error, task_id FROM reproductions_reproduction "
                "WHERE id = %s", [pk]).fetchone()
        if status in ("done", "failed", "cancelled"):
            break
        assert time.monotonic() < deadline, f"reproduction still {status} ({stage})"
        time.sleep(0.2)
    assert status == "done", error
    assert task_id and "@" in worker and not worker.startswith("embedded")
    assert sum(tally.values()) == 5 and "claims.csv" in files and "w50-utilisation.html" in files
    assert stage.startswith(f"done: {tally['PASS']} passed, {tally['FAIL']} failed"), stage
