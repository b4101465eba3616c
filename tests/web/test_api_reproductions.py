"""The REST API's reproductions (docs/api.md): list and read what you may view, re-run a paper."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from gridweb.reproductions import execution
from gridweb.reproductions.execution import create_reproduction, execute_reproduction
from gridweb.reproductions.models import Reproduction
from gridweb.runs.models import Status
from gridweb.sharing import Visibility
from simengine import reproductions as recipes

pytestmark = pytest.mark.django_db(transaction=True)


def api(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def test_list_and_read_what_you_may_view(alice, carol, bob, lab):
    shared = create_reproduction(alice, "klein", quick=True, visibility=Visibility.GROUP, group=lab,
                                 dispatch_now=False)
    assert execute_reproduction(shared.pk) == Status.DONE
    private = Reproduction.objects.create(owner=alice, recipe="cao", name="mine")
    got = api(carol).get("/api/reproductions/").json()
    assert [r["id"] for r in got["results"]] == [shared.pk]
    assert api(alice).get("/api/reproductions/?recipe=cao").json()["results"][0]["id"] == private.pk
    bad = api(alice).get("/api/reproductions/?recipe=nope")
    assert bad.status_code == 400 and "recipe" in bad.json()["errors"]
    one = api(carol).get(f"/api/reproductions/{shared.pk}/").json()
    assert one["status"] == "done" and one["command"] == "python -m simengine reproduce klein --quick"
    assert len(one["claims"]) == sum(one["tally"].values()) > 0 and one["claims"][0]["verdict"] in (
        recipes.PASS, recipes.FAIL, recipes.NOT_REPRODUCIBLE)
    files = {f["name"]: f["url"] for f in one["files"]}
    assert "claims.csv" in files and files["claims.csv"].endswith(f"/api/reproductions/{shared.pk}/files/claims.csv")
    download = api(carol).get(files["claims.csv"])
    assert download.status_code == 200
    assert b"".join(download.streaming_content).decode().splitlines()[0] == ",".join(recipes.COLUMNS)
    assert api(bob).get(files["claims.csv"]).status_code == 404
    assert api(carol).get(f"/api/reproductions/{shared.pk}/files/nothere.csv").status_code == 404
    assert api(bob).get(f"/api/reproductions/{shared.pk}/").status_code == 404
    assert api(carol).get(f"/api/reproductions/{private.pk}/").status_code == 404


def test_rerun_a_paper(carol, lab, monkeypatch):
    dispatched = []
    monkeypatch.setattr(execution, "dispatch", dispatched.append)
    assert api(None).post("/api/reproductions/", {"recipe": "klein"}, format="json").status_code in (401, 403)
    made = api(carol).post("/api/reproductions/", {"recipe": "koala-w30", "quick": False, "visibility": "group"},
                           format="json")
    assert made.status_code == 201, made.json()
    rep = Reproduction.objects.get(pk=made.json()["id"])
    assert (rep.owner, rep.recipe, rep.quick, rep.group, rep.status) == (carol, "koala-w30", False, lab, "queued")
    assert dispatched == [rep.pk]
    again = api(carol).post("/api/reproductions/", {"recipe": "klein"}, format="json")
    assert again.status_code == 400 and "already have 1 reproduction" in again.json()["errors"]["recipe"][0]
    Reproduction.objects.filter(pk=rep.pk).update(status=Status.DONE)
    bad = api(carol).post("/api/reproductions/", {"recipe": "nope", "quick": "maybe"}, format="json")
    assert bad.status_code == 400 and set(bad.json()["errors"]) == {"recipe", "quick"}
    assert Reproduction.objects.count() == 1


def test_a_reproduction_asked_for_while_the_broker_is_down_is_answered_and_sent_by_the_recovery_sweep(
        alice, monkeypatch):
    from gridweb.runs import execution as run_execution

    def broker_down(name, args, task_id):
        raise OSError("Connection refused")

    # full-stack mode (Celery tasks), with Redis away
    for module in (execution, run_execution):
        monkeypatch.setattr(module, "embedded", lambda: False)
        monkeypatch.setattr(module, "send_task", broker_down)
    recipe = sorted(recipes.RECIPES)[0]

    response = api(alice).post("/api/reproductions/", {"recipe": recipe, "quick": True}, format="json")

    assert response.status_code == 201, response.content  # (was a 500, the row left queued and never sent)
    rep = Reproduction.objects.get(pk=response.json()["id"])
    assert rep.status == Status.QUEUED and rep.task_id == ""
    assert run_execution.recover_lost_runs() == []  # still down: it keeps waiting
    assert Reproduction.objects.get(pk=rep.pk).task_id == ""

    sent = []
    for module in (execution, run_execution):
        monkeypatch.setattr(module, "send_task", lambda name, args, task_id: sent.append((name, args[0], task_id)))
    run_execution.recover_lost_runs()  # Redis is back: the next sweep sends it, once
    run_execution.recover_lost_runs()

    rep.refresh_from_db()
    assert sent == [(execution.EXECUTE_REPRODUCTION, rep.pk, rep.task_id)] and rep.task_id
