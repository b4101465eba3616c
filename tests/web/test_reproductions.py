"""Reproductions as gallery objects (gridweb.reproductions): a recipe executed on a worker keeps its
claims with verdicts, its figures and data; who may see and re-run one; the demo set; the home page."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from gridweb.reproductions import execution
from gridweb.reproductions.execution import create_reproduction, execute_reproduction, open_file
from gridweb.reproductions.models import Reproduction
from gridweb.runs.models import Status
from gridweb.sharing import Visibility
from simengine import reproductions as recipes
from simengine.version import ENGINE_VERSION
from tests.web.conftest import client_for

pytestmark = pytest.mark.django_db(transaction=True)


def done_reproduction(user, recipe="klein", visibility=Visibility.PRIVATE, group=None) -> Reproduction:
    rep = create_reproduction(user, recipe, quick=True, visibility=visibility, group=group, dispatch_now=False)
    assert execute_reproduction(rep.pk, "test@host:1") == Status.DONE
    rep.refresh_from_db()
    return rep


def test_an_executed_reproduction_keeps_its_claims_figures_and_data(alice):
    rep = done_reproduction(alice)
    assert rep.status == Status.DONE and rep.engine_version == ENGINE_VERSION and rep.progress == 1.0
    assert rep.command == "python -m simengine reproduce klein --quick"
    # the claims are the recipe's claims.csv, verdicts and marks included, and the tally counts them
    with open_file(rep, "claims.csv") as fh:
        text = fh.read().decode()
    assert text.splitlines()[0] == ",".join(recipes.COLUMNS)
    stored = text.splitlines()[1:]
    assert len(rep.claims) == len(stored) > 0
    assert {c["verdict"] for c in rep.claims} <= {recipes.PASS, recipes.FAIL, recipes.NOT_REPRODUCIBLE}
    assert sum(rep.tally.values()) == len(rep.claims)
    assert rep.tally[recipes.PASS] == sum(c["verdict"] == recipes.PASS for c in rep.claims)
    # each figure is the recipe's standalone Bokeh page, named by its <title>
    assert {f["file"] for f in rep.figures} == {"table1.html", "table2.html", "gantt_test0.html"}
    assert all(f["title"] for f in rep.figures)
    assert "done in" in rep.log and rep.stage.startswith("done: ")
    # the page shows them; the files are served in frames of the same site, the data as downloads
    client = client_for(alice)
    body = client.get(reverse("reproductions:detail", args=[rep.pk])).content.decode()
    assert rep.claims[0]["claim"] in body and "table1.html" in body and rep.command in body
    page = client.get(reverse("reproductions:file", args=[rep.pk, "table1.html"]))
    assert page.status_code == 200 and page["X-Frame-Options"] == "SAMEORIGIN"
    assert b"Bokeh" in b"".join(page.streaming_content)
    data = client.get(reverse("reproductions:file", args=[rep.pk, "table1.csv"]))
    assert data.status_code == 200 and "attachment" in data["Content-Disposition"]
    for bad in ("nothere.html", "..%2Fsecret.csv", "claims.txt"):
        assert client.get(f"/reproductions/{rep.pk}/files/{bad}").status_code == 404


def test_progress_and_log_reach_the_row_while_the_recipe_runs(alice, monkeypatch):
    seen = []

    def recipe(out, quick, log, progress):
        for k in range(3):
            progress(k, 3, "configurations")
            log(f"line {k}")
            row = Reproduction.objects.get(pk=rep.pk)
            seen.append((row.status, row.stage, row.progress, row.log))
        recipes.write_claims([recipes.Claim("c", "p", "m", True)], out / "claims.csv")
        (out / "fig01.html").write_text("<html><head><title>Figure 1 &amp; more</title></head></html>")
        return [recipes.Claim("c", "p", "m", True)]

    monkeypatch.setattr(execution, "SAVE_EVERY", 0.0)
    monkeypatch.setattr(recipes, "get", lambda name: recipe)
    rep = create_reproduction(alice, "klein", quick=True, dispatch_now=False)
    assert execute_reproduction(rep.pk) == Status.DONE
    assert seen[-1] == (Status.RUNNING, "configurations: 2 of 3", pytest.approx(2 / 3), "line 0\nline 1\nline 2")
    rep.refresh_from_db()
    assert rep.figures == [{"file": "fig01.html", "title": "Figure 1 & more"}]
    assert rep.tally == {recipes.PASS: 1, recipes.FAIL: 0, recipes.NOT_REPRODUCIBLE: 0}
    assert execute_reproduction(rep.pk) == "skipped"  # done once: a second delivery does nothing


def test_a_failing_recipe_fails_the_reproduction_with_its_reason(alice, monkeypatch):
    def recipe(out, quick, log, progress):
        log("starting")
        raise ValueError("configuration 3: no such placement")

    monkeypatch.setattr(recipes, "get", lambda name: recipe)
    rep = create_reproduction(alice, "klein", quick=True, dispatch_now=False)
    assert execute_reproduction(rep.pk) == Status.FAILED
    rep.refresh_from_db()
    assert rep.status == Status.FAILED and "no such placement" in rep.error and "starting" in rep.log
    assert rep.location == "" and rep.claims == []


def test_who_may_see_a_reproduction(alice, carol, bob, lab):
    private = done_reproduction(alice)
    shared = Reproduction.objects.create(owner=alice, recipe="klein", name="k", visibility=Visibility.GROUP,
                                         group=lab, status=Status.DONE, files=private.files,
                                         location=private.location, claims=private.claims, tally=private.tally)
    public = Reproduction.objects.create(owner=alice, recipe="klein", name="k", visibility=Visibility.PUBLIC)
    urls = lambda rep: [reverse("reproductions:detail", args=[rep.pk]),  # noqa: E731
                        reverse("reproductions:status", args=[rep.pk]),
                        reverse("reproductions:file", args=[rep.pk, "table1.html"])]
    for url in urls(private):
        assert client_for(alice).get(url).status_code == 200
        assert client_for(carol).get(url).status_code == 404  # private: not even the group
        assert client_for(bob).get(url).status_code == 404
        assert client_for(None).get(url).status_code == 404
    for url in urls(shared):
        assert client_for(carol).get(url).status_code == 200
        assert client_for(bob).get(url).status_code == 404
    assert client_for(None).get(reverse("reproductions:detail", args=[public.pk])).status_code == 200
    listing = client_for(bob).get(reverse("reproductions:list")).content.decode()
    assert f'/reproductions/{public.pk}/' in listing and f'/reproductions/{private.pk}/' not in listing


def test_a_group_member_reruns_a_paper_one_at_a_time(carol, lab, monkeypatch):
    dispatched = []
    monkeypatch.setattr(execution, "dispatch", dispatched.append)
    anonymous = client_for(None).post(reverse("reproductions:rerun"), {"recipe": "klein", "quick": "1"})
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    client = client_for(carol)
    response = client.post(reverse("reproductions:rerun"), {"recipe": "koala-w50", "quick": "1",
                                                             "visibility": "group", "group": lab.pk})
    rep = Reproduction.objects.get(owner=carol)
    assert response.status_code == 302 and response["Location"] == reverse("reproductions:detail", args=[rep.pk])
    assert (rep.recipe, rep.quick, rep.visibility, rep.group, rep.status) == ("koala-w50", True, "group", lab,
                                                                              Status.QUEUED)
    assert dispatched == [rep.pk]
    again = client.post(reverse("reproductions:rerun"), {"recipe": "klein", "quick": "0", "visibility": "private"},
                        follow=True)
    assert "already have 1 reproduction queued or running" in again.content.decode()
    bad = client.post(reverse("reproductions:rerun"), {"recipe": "nope", "quick": "1", "visibility": "private"},
                      follow=True)
    assert "recipe: Select a valid choice" in bad.content.decode()
    assert Reproduction.objects.filter(owner=carol).count() == 1


def test_the_demo_set_holds_every_papers_quick_reproduction(transactional_db):
    call_command("gridweb_demo", stdout=io.StringIO())  # embedded mode: created, left queued
    call_command("gridweb_demo", stdout=io.StringIO())  # again: nothing new
    reps = Reproduction.objects.filter(curated=True)
    assert sorted(reps.values_list("recipe", flat=True)) == sorted(recipes.RECIPES)
    assert all(r.quick and r.visibility == Visibility.PUBLIC and r.status == Status.QUEUED for r in reps)
    # the embedded worker executes them when it starts (it recovers queued work)
    assert sorted(execution.recover()) == sorted(reps.values_list("pk", flat=True))


def test_the_home_page_says_how_many_claims_each_paper_passes(alice):
    """Each paper: the full run shipped with GridWeb (docs/reproductions/NAME-claims.csv, the
    tables of docs/reproductions.md), and the newest reproduction here, a quick one saying so."""
    from simengine.reproductions import doc

    rep = done_reproduction(alice, visibility=Visibility.PUBLIC)
    body = client_for(None).get("/").content.decode()
    for name in recipes.RECIPES:
        shipped = recipes.read_claims(doc.evidence(name))
        passed = sum(c.verdict == recipes.PASS for c in shipped)
        line = body.split(f'data-recipe="{name}"', 1)[1].split("</li>", 1)[0]
        assert f"{passed} of {len(shipped)} claims pass" in line.split("data-shipped>", 1)[1].split("</span>")[0]
    line = body.split('data-recipe="klein"', 1)[1].split("</li>", 1)[0]
    assert f'title="here: {rep.tally[recipes.PASS]} of {len(rep.claims)} claims pass' in line
    assert "in a quick run" in line and f"/reproductions/{rep.pk}/" in line
    assert "not reproduced here yet" in body.split('data-recipe="cao"', 1)[1].split("</li>", 1)[0]


def test_the_newest_full_reproduction_stands_for_the_paper(alice):
    from gridweb.reproductions.views import latest_per_paper

    quick = done_reproduction(alice, visibility=Visibility.PUBLIC)
    full = Reproduction.objects.create(owner=alice, recipe="klein", name="k", quick=False, status=Status.DONE,
                                       visibility=Visibility.PUBLIC, tally={recipes.PASS: 1},
                                       finished_at=quick.finished_at.replace(year=2020))
    klein = {p["name"]: p for p in latest_per_paper(None)}["klein"]
    assert klein["latest"] == full and "quick" not in klein["tally"]  # older, but full


def test_an_interrupted_reproduction_is_failed_when_the_worker_starts_again(alice):
    rep = Reproduction.objects.create(owner=alice, recipe="klein", name="k", status=Status.RUNNING,
                                      worker="embedded@nowhere-else:1")
    queued = Reproduction.objects.create(owner=alice, recipe="klein", name="k2")
    # another machine's worker without a heartbeat: gone
    assert execution.recover() == [queued.pk]
    rep.refresh_from_db()
    assert rep.status == Status.FAILED and rep.error.startswith("interrupted")


def test_a_delivery_after_a_lost_worker_takes_the_reproduction_again(alice, monkeypatch):
    """acks_late: a task whose worker process died is delivered again; the reproduction, still
    'running' under the dead process, is taken by the new delivery -- but not while the recorded
    execution is alive (here: this process, executing it)."""
    import os
    import socket

    monkeypatch.setattr(recipes, "get", lambda name: lambda out, quick, log, progress: [])
    dead = 2 ** 22 + 12345  # above the machine's pid range: no such process
    rep = Reproduction.objects.create(owner=alice, recipe="klein", name="k", status=Status.RUNNING,
                                      worker=f"celery@{socket.gethostname()}:{dead}")
    assert execute_reproduction(rep.pk, "celery@again:1") == Status.DONE
    rep.refresh_from_db()
    assert rep.worker == "celery@again:1" and rep.status == Status.DONE
    alive = Reproduction.objects.create(owner=alice, recipe="klein", name="k2", status=Status.RUNNING,
                                        worker=f"embedded@{socket.gethostname()}:{os.getpid()}")
    monkeypatch.setattr(execution, "_active", {alive.pk})
    assert execute_reproduction(alive.pk) == "skipped"
    assert Reproduction.objects.get(pk=alive.pk).status == Status.RUNNING
