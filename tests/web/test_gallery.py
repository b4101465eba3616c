"""The gallery: every run the user may view, and filters (author, tag, policy, platform, date,
free text) that really narrow it; a private run never shows to anyone but its owner."""

from __future__ import annotations

import io
import re
from datetime import datetime, timedelta
from datetime import timezone as tz
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from gridweb.runs.models import Run, Status
from gridweb.sharing import Visibility

pytestmark = pytest.mark.django_db


def make_run(owner, name: str, *, visibility=Visibility.PUBLIC, tags=(), policy="easy",
             platform="1 cluster, 64 processors", created: datetime | None = None, curated=False, group=None,
             status=Status.DONE) -> Run:
    run = Run.objects.create(owner=owner, name=name, visibility=visibility, tags=list(tags), policy=policy,
                             platform=platform, spec={"name": name}, curated=curated, group=group, status=status)
    if created is not None:  # ``created`` is set on insert; move it afterwards
        Run.objects.filter(pk=run.pk).update(created=created)
    return run


def gallery_ids(client: Client, **params) -> set[int]:
    response = client.get(reverse("runs:gallery"), params)
    assert response.status_code == 200
    return {int(i) for i in re.findall(r'<article class="run-card[^"]*" data-run="(\d+)"', response.content.decode())}


@pytest.fixture
def people(django_user_model):
    lab = Group.objects.create(name="lab")
    alice = django_user_model.objects.create_user("alice", password="pw-alice-123")
    bob = django_user_model.objects.create_user("bob", password="pw-bob-123")
    carol = django_user_model.objects.create_user("carol", password="pw-carol-123")
    alice.groups.add(lab)
    carol.groups.add(lab)
    return {"alice": alice, "bob": bob, "carol": carol, "lab": lab}


@pytest.fixture
def runs(people):
    alice, bob, lab = people["alice"], people["bob"], people["lab"]
    day = lambda d: datetime(2026, 3, d, 12, tzinfo=tz.utc)  # noqa: E731
    return {
        "secret": make_run(alice, "alice secret EASY study", visibility=Visibility.PRIVATE, tags=["ml", "secret"],
                           created=day(2)),
        "lab": make_run(alice, "lab FCFS baseline", visibility=Visibility.GROUP, group=lab, tags=["baseline"],
                        policy="fcfs", platform="4 clusters, 128 processors", created=day(5)),
        "alice_public": make_run(alice, "DAS-2 replay", tags=["ml", "das2"], policy="easy",
                                 platform="1 cluster, 64 processors", created=day(10)),
        "bob_grid": make_run(bob, "Zikos random grid", tags=["zikos"], policy="lwr,random",
                             platform="4 clusters, 80 processors", created=day(20)),
        "bob_easy2": make_run(bob, "bob easy variant", tags=["ML-2"], policy="easy2",
                              platform="2 clusters, 96 processors", created=day(25)),
        "curated": make_run(bob, "curated recipe", curated=True, tags=["demo"], policy="conservative",
                            created=day(1)),
    }


def client_for(user=None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def test_everyone_sees_exactly_the_runs_they_may_view(people, runs):
    public = {runs[k].pk for k in ("alice_public", "bob_grid", "bob_easy2", "curated")}
    assert gallery_ids(client_for()) == public
    assert gallery_ids(client_for(people["bob"])) == public
    assert gallery_ids(client_for(people["carol"])) == public | {runs["lab"].pk}
    assert gallery_ids(client_for(people["alice"])) == {run.pk for run in runs.values()}


def test_sweep_points_stay_on_their_sweep_unless_asked_for(people, runs):
    """A 30-point sweep filled the gallery with 30 cards; its points now live on its page."""
    from gridweb.runs.models import Sweep

    sweep = Sweep.objects.create(owner=people["alice"], name="load sweep", visibility=Visibility.PUBLIC,
                                 spec={"name": "s"}, parameters={"run.seed": [1, 2, 3]})
    points = {Run.objects.create(owner=people["alice"], name=f"point {k}", visibility=Visibility.PUBLIC,
                                 spec={"name": "s"}, sweep=sweep, sweep_point={"run.seed": k}, status=Status.DONE).pk
              for k in (1, 2, 3)}
    alone = {runs[k].pk for k in ("alice_public", "bob_grid", "bob_easy2", "curated")}
    visitor = client_for()
    assert gallery_ids(visitor) == alone
    page = visitor.get(reverse("runs:gallery")).content.decode()
    assert 'id="hidden-points"' in page and "3 runs of parameter" in page
    assert gallery_ids(visitor, points="on") == alone | points
    assert gallery_ids(visitor, q="point") == set() and gallery_ids(visitor, q="point", points="on") == points
    assert 'id="hidden-points"' not in visitor.get(reverse("runs:gallery"), {"points": "on"}).content.decode()


def test_an_outsider_never_sees_a_private_run_whatever_the_filter(people, runs):
    secret = runs["secret"]
    for client in (client_for(people["bob"]), client_for(people["carol"]), client_for()):
        for params in ({}, {"q": "secret"}, {"author": "alice"}, {"tag": "secret"}, {"tag": "ml"},
                       {"policy": "easy"}, {"platform": "64 processors"}, {"status": "done"},
                       {"date_from": "2026-03-01", "date_to": "2026-03-03"}):
            assert secret.pk not in gallery_ids(client, **params), params
            body = client.get(reverse("runs:gallery"), params).content.decode()
            assert "alice secret EASY study" not in body


def test_author_filter(people, runs):
    alice = client_for(people["alice"])
    assert gallery_ids(alice, author="bob") == {runs[k].pk for k in ("bob_grid", "bob_easy2", "curated")}
    assert gallery_ids(alice, author="ALICE") == {runs[k].pk for k in ("secret", "lab", "alice_public")}
    response = alice.get(reverse("runs:gallery"), {"author": "nobody"})
    assert 'data-field="author"' in response.content.decode()
    assert gallery_ids(alice, author="nobody") == set()


def test_tag_filter_matches_whole_tags_case_insensitively(people, runs):
    alice = client_for(people["alice"])
    # "ml" is not "ML-2": whole tags only
    assert gallery_ids(alice, tag="ml") == {runs["secret"].pk, runs["alice_public"].pk}
    assert gallery_ids(alice, tag="ML") == {runs["secret"].pk, runs["alice_public"].pk}
    assert gallery_ids(alice, tag="ml-2") == {runs["bob_easy2"].pk}
    assert gallery_ids(alice, tag="zikos") == {runs["bob_grid"].pk}


def test_policy_filter_matches_one_of_the_runs_policies(people, runs):
    alice = client_for(people["alice"])
    assert gallery_ids(alice, policy="easy") == {runs["secret"].pk, runs["alice_public"].pk}  # not easy2
    assert gallery_ids(alice, policy="random") == {runs["bob_grid"].pk}
    assert gallery_ids(alice, policy="LWR") == {runs["bob_grid"].pk}


def test_platform_filter(people, runs):
    alice = client_for(people["alice"])
    assert gallery_ids(alice, platform="4 clusters") == {runs["lab"].pk, runs["bob_grid"].pk}
    assert gallery_ids(alice, platform="64 processors") == {runs["secret"].pk, runs["alice_public"].pk,
                                                           runs["curated"].pk}


def test_date_range_filter(people, runs):
    alice = client_for(people["alice"])
    assert gallery_ids(alice, date_from="2026-03-05", date_to="2026-03-20") == {
        runs["lab"].pk, runs["alice_public"].pk, runs["bob_grid"].pk}
    assert gallery_ids(alice, date_from="2026-03-21") == {runs["bob_easy2"].pk}
    assert gallery_ids(alice, date_to=(datetime(2026, 3, 2) + timedelta(days=0)).date().isoformat()) == {
        runs["secret"].pk, runs["curated"].pk}
    response = alice.get(reverse("runs:gallery"), {"date_from": "2026-03-20", "date_to": "2026-03-01"})
    assert 'data-field="date_to"' in response.content.decode()
    assert gallery_ids(alice, date_from="2026-03-20", date_to="2026-03-01") == set()


def test_free_text_search_and_combined_filters(people, runs):
    alice = client_for(people["alice"])
    assert gallery_ids(alice, q="replay") == {runs["alice_public"].pk}
    assert gallery_ids(alice, q="bob") == {runs[k].pk for k in ("bob_grid", "bob_easy2", "curated")}
    assert gallery_ids(alice, author="alice", tag="ml", policy="easy") == {runs["secret"].pk,
                                                                           runs["alice_public"].pk}
    assert gallery_ids(alice, author="bob", tag="ml") == set()


def test_curated_runs_are_pinned_in_their_own_section(people, runs):
    body = client_for().get(reverse("runs:gallery")).content.decode()
    curated_section = body.split('id="curated"', 1)[1].split('id="runs"', 1)[0]
    rest = body.split('id="runs"', 1)[1]
    assert f'data-run="{runs["curated"].pk}"' in curated_section
    assert f'data-run="{runs["curated"].pk}"' not in rest
    assert f'data-run="{runs["bob_grid"].pk}"' in rest


def test_cards_link_to_the_permalink_and_offer_compare(people, runs):
    body = client_for().get(reverse("runs:gallery")).content.decode()
    run = runs["bob_grid"]
    assert reverse("runs:run", args=[run.pk]) in body
    assert f'<input type="checkbox" name="runs" value="{run.pk}" form="compare-form">' in body
    assert 'action="/compare/"' in body


def test_demo_runs_are_curated_public_replays_of_the_shipped_traces(transactional_db):
    from django.core.management import call_command

    from gridweb.runs.demo import DEMO_DIR, DEMO_USER, RECIPES, SHOWCASES
    from gridweb.scenarios.models import TraceFile
    from simengine.traces import read_swf

    call_command("gridweb_demo", stdout=io.StringIO())  # embedded mode: created, left queued
    first = set(Run.objects.values_list("pk", flat=True))
    call_command("gridweb_demo", stdout=io.StringIO())  # again: nothing new
    assert set(Run.objects.values_list("pk", flat=True)) == first

    runs = Run.objects.filter(owner__username=DEMO_USER)
    traces = TraceFile.objects.filter(owner__username=DEMO_USER)
    shipped = sorted(p.name for p in DEMO_DIR.glob("*.swf.gz"))
    assert len(shipped) == 4 and traces.count() == 4 and runs.count() == 4 + len(RECIPES) + len(SHOWCASES)
    assert all(run.curated and run.visibility == Visibility.PUBLIC for run in runs)
    assert all(t.visibility == Visibility.PUBLIC for t in traces)
    assert sorted(traces.values_list("original_name", flat=True)) == shipped
    # each trace replayed under EASY on a cluster of the trace's own size (its MaxProcs header)
    replays = [run for run in runs if "trace" in run.tags]
    assert len(replays) == 4
    for run in replays:
        stream = run.spec["workload"]["streams"][0]
        trace = traces.get(stored_name=stream["path"])
        cluster = run.spec["platform"]["clusters"][0]
        assert cluster["scheduler"]["name"] == "easy"
        assert cluster["processors"] == read_swf(DEMO_DIR / trace.original_name, limit=1).max_procs
    assert runs.filter(spec__platform__preset="grid-4site-zikos").count() == 2
    # visitors find them in the gallery's curated section
    body = Client().get(reverse("runs:gallery")).content.decode()
    curated_section = body.split('id="curated"', 1)[1].split('id="runs"', 1)[0]
    assert all(f'data-run="{run.pk}"' in curated_section for run in runs)


#: the paper's tag on a recipe run -> the ``python -m simengine reproduce`` name its description gives
REPRODUCE_COMMAND = {"zikos": "zikos", "ballier": "ballier", "koala": "koala-w30"}


def recipe_runs() -> dict[str, list[Run]]:
    """The curated reproduction runs of the demo user, by the paper's tag."""
    from gridweb.runs.demo import DEMO_USER

    found: dict[str, list[Run]] = {paper: [] for paper in REPRODUCE_COMMAND}
    for run in Run.objects.filter(owner__username=DEMO_USER, curated=True).order_by("pk"):
        for paper in found:
            if paper in run.tags:
                found[paper].append(run)
    return found


def test_demo_has_curated_reproduction_runs_that_name_their_paper_and_reproduce_command(transactional_db):
    from django.core.management import call_command

    from simengine.reproductions import RECIPES as ENGINE_RECIPES
    from simengine.scenario import CoallocatedStream, load_scenario

    call_command("gridweb_demo", stdout=io.StringIO())
    recipes = recipe_runs()
    assert len(recipes["zikos"]) == 2 and len(recipes["ballier"]) == 2 and len(recipes["koala"]) == 1
    for paper, runs in recipes.items():
        command = REPRODUCE_COMMAND[paper]
        assert command in ENGINE_RECIPES  # the command the descriptions name exists
        for run in runs:
            assert run.curated and run.visibility == Visibility.PUBLIC and "reproduction" in run.tags
            assert f"python -m simengine reproduce {command}" in run.description
            assert re.search(r"(figure|claim|conclusion)", run.description, re.IGNORECASE)
            load_scenario(run.spec)  # a valid scenario of the current engine
            # modest runs: the full reproduction is the command, not the demo
            assert run.spec["run"]["replications"] <= 10

    zikos_policies = sorted(run.spec["grid"]["site_allocation"]["name"] for run in recipes["zikos"])
    assert zikos_policies == ["random", "sb_deferred"]
    # side by side: everything but the site allocation (and the name) is the same scenario
    random_run, sb_run = sorted(recipes["zikos"], key=lambda r: r.spec["grid"]["site_allocation"]["name"])
    strip = lambda spec: {k: v for k, v in spec.items() if k not in ("grid", "name", "description")}  # noqa: E731
    assert strip(random_run.spec) == strip(sb_run.spec)
    assert "Zikos" in random_run.description and "PMEO 2010" in sb_run.description

    for run in recipes["ballier"]:
        scenario = load_scenario(run.spec)
        assert scenario.platform.clusters and [c.processors for c in scenario.platform.clusters] == [32] * 4
        assert any(isinstance(s, CoallocatedStream) for s in scenario.workload.streams)
        assert "RR-5815" in run.description and "Ballier" in run.description
        assert scenario.run.stop.horizon is not None and scenario.run.stop.horizon <= 200_000
    waits = sorted(str(run.spec["grid"]["deadline_policy"]["params"]["wait_x"]) for run in recipes["ballier"])
    assert waits == ["10", "None"]

    # KOALA: the W30 setting of examples/koala-w30.yaml (Close-to-Files), described as such
    (koala,) = recipes["koala"]
    scenario = load_scenario(koala.spec)
    example = load_scenario(Path(__file__).resolve().parents[2] / "examples" / "koala-w30.yaml")
    assert [c.processors for c in scenario.platform.clusters] == [144, 56, 56, 64, 64]
    for part in ("workload", "grid"):
        assert getattr(scenario, part).model_dump(mode="json") == getattr(example, part).model_dump(mode="json")
    assert scenario.platform.bandwidth == example.platform.bandwidth
    assert koala.spec["grid"]["placement"]["name"] == "close-to-files"
    assert "Mohamed" in koala.description and "W30" in koala.description
    for shown in ("transfer", "claimed", "background"):  # what the Gantt shows, in the description's words
        assert shown in koala.description


@pytest.mark.slow
def test_the_curated_reproduction_runs_show_the_claims_they_describe(transactional_db):
    """Executed, the recipe runs show what their descriptions say: SB-Deferred's mean response
    time below Random's, Wait-10's success rate above pure RPP's and far less wasted time."""
    from gridweb.runs.demo import load_demo
    from gridweb.runs.execution import execute_run

    load_demo()
    recipes = recipe_runs()
    for run in recipes["zikos"] + recipes["ballier"]:
        assert execute_run(run.pk) == Status.DONE, run.error
        run.refresh_from_db()
    (koala,) = recipes["koala"]
    assert execute_run(koala.pk) == Status.DONE, koala.error
    koala.refresh_from_db()

    def metric(run: Run, name: str) -> dict:
        return run.summary["metrics"][name]

    by_policy = {run.spec["grid"]["site_allocation"]["name"]: run for run in recipes["zikos"]}
    sb, rnd = metric(by_policy["sb_deferred"], "mean_response"), metric(by_policy["random"], "mean_response")
    assert sb["mean"] < rnd["mean"]
    by_wait = {run.spec["grid"]["deadline_policy"]["params"]["wait_x"]: run for run in recipes["ballier"]}
    wait10, pure = by_wait[10], by_wait[None]
    assert metric(wait10, "global_success_rate")["ci_low"] > metric(pure, "global_success_rate")["ci_high"]
    assert metric(pure, "processor_wasted_time")["mean"] > 10 * metric(wait10, "processor_wasted_time")["mean"]

    # KOALA: the Gantt has the file transfers and the claimed-but-idle processors before the runs,
    # and the background jobs of the band (stream -1) beside them
    from gridweb.runs.exports import result_of, segments_columns

    kinds = set(segments_columns(koala)["kind_name"])
    assert {"transfer", "claimed", "run"} <= kinds
    jobs = result_of(koala).jobs
    assert (jobs["stream"] == -1).any() and (jobs["stream"] == 0).any()
    assert 0 < metric(koala, "pwt_utilisation")["mean"] < metric(koala, "koala_load")["mean"]
