"""Admitting new runs and sweeps through the API (issue 34): a retried request with the same
``Idempotency-Key`` creates nothing new, and a user over the storage quota is refused with a
message naming the quota and what they use. Embedded mode, the real database."""

from __future__ import annotations

import json

import pytest

from gridweb.runs import execution
from gridweb.runs.models import Run, RunResult, Status, Sweep
from gridweb.runs.services import create_run, storage_used
from gridweb.scenarios.validation import UserLimitReached
from tests.web.conftest import client_for
from tests.web.test_run_execution import small_spec

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def idle_worker():
    assert execution.embedded_worker().wait_idle(120)
    yield
    assert execution.embedded_worker().wait_idle(120), "the embedded worker did not finish its queue"


def post(client, path: str, body: dict, key: str | None = None):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return client.post(path, json.dumps(body), content_type="application/json", **headers)


# --- Idempotency-Key ----------------------------------------------------------------------------


def test_a_retried_run_post_with_the_same_key_answers_the_same_run(alice, bob):
    spec = small_spec(seed=31, replications=1)
    first = post(client_for(alice), "/api/runs/", {"spec": spec}, "retry-me-1")
    again = post(client_for(alice), "/api/runs/", {"spec": spec}, "retry-me-1")
    bobs = post(client_for(bob), "/api/runs/", {"spec": spec}, "retry-me-1")
    without_key = post(client_for(alice), "/api/runs/", {"spec": spec})

    assert first.status_code == 201 and again.status_code == 200, (first.json(), again.json())
    assert again.json()["id"] == first.json()["id"]
    assert bobs.status_code == 201 and bobs.json()["id"] != first.json()["id"]  # each user's keys are their own
    assert without_key.status_code == 201
    assert Run.objects.filter(owner=alice).count() == 2 and Run.objects.filter(owner=bob).count() == 1


def test_a_key_used_for_another_request_body_is_refused_naming_the_header(alice):
    post(client_for(alice), "/api/runs/", {"spec": small_spec(seed=32, replications=1)}, "k-32")

    response = post(client_for(alice), "/api/runs/", {"spec": small_spec(seed=33, replications=1)}, "k-32")

    assert response.status_code == 422
    message = response.json()["detail"]
    assert "Idempotency-Key 'k-32' was already used for run" in message and "different request body" in message
    assert Run.objects.filter(owner=alice).count() == 1


@pytest.mark.parametrize("key", ["", "has space", "x" * 201, "caf\u00e9"])
def test_a_malformed_idempotency_key_is_refused_naming_the_header(alice, key):
    response = post(client_for(alice), "/api/runs/", {"spec": small_spec(seed=34, replications=1)}, key)

    assert response.status_code == 400
    assert "visible ASCII characters" in response.json()["errors"]["Idempotency-Key"][0]
    assert not Run.objects.exists()


def test_a_retried_sweep_post_with_the_same_key_answers_the_same_sweep(alice):
    body = {"spec": small_spec(seed=35, replications=1), "parameters": {"run.seed": [1, 2]}}
    first = post(client_for(alice), "/api/sweeps/", body, "sweep-35")
    again = post(client_for(alice), "/api/sweeps/", body, "sweep-35")

    assert first.status_code == 201 and again.status_code == 200, (first.json(), again.json())
    assert again.json()["id"] == first.json()["id"]
    assert Sweep.objects.count() == 1 and Run.objects.count() == 2


# --- Storage quota ------------------------------------------------------------------------------


def stored_result(user, megabytes: float) -> Run:
    """A done run of ``user`` whose stored result takes ``megabytes`` (as recorded when stored)."""
    run = Run.objects.create(owner=user, spec={}, name="big", status=Status.DONE)
    RunResult.objects.create(run=run, location=f"results/{run.pk}", size=int(megabytes * 2**20))
    return run


def test_a_user_over_the_storage_quota_is_refused_a_new_run_with_quota_and_use_named(alice, bob, settings):
    settings.GRIDWEB_USER_STORAGE_MB = 5
    stored_result(alice, 3.0)
    stored_result(alice, 2.5)
    assert storage_used(alice) == int(5.5 * 2**20)

    response = post(client_for(alice), "/api/runs/", {"spec": small_spec(seed=36, replications=1)})

    assert response.status_code == 400
    (message,) = response.json()["errors"][""]
    assert "you store 5.5 MB of run results and traces" in message
    assert "quota per user is 5 MB (GRIDWEB_USER_STORAGE_MB)" in message
    assert "delete some runs or traces" in message
    assert not Run.objects.filter(owner=alice, status=Status.QUEUED).exists()
    with pytest.raises(UserLimitReached):  # the pages' path (services) refuses it the same way
        create_run(alice, small_spec(seed=36, replications=1))
    # sweeps too, and other users are not affected
    sweep = post(client_for(alice), "/api/sweeps/", {"spec": small_spec(seed=37, replications=1),
                                                      "parameters": {"run.seed": [1, 2]}})
    assert sweep.status_code == 400 and "GRIDWEB_USER_STORAGE_MB" in sweep.json()["errors"][""][0]
    assert post(client_for(bob), "/api/runs/", {"spec": small_spec(seed=36, replications=1)}).status_code == 201


def test_a_user_under_the_storage_quota_may_start_runs(alice, settings):
    settings.GRIDWEB_USER_STORAGE_MB = 5
    stored_result(alice, 4.9)

    assert post(client_for(alice), "/api/runs/", {"spec": small_spec(seed=38, replications=1)}).status_code == 201
