"""Starting a parameter sweep from the browser: the form at ``/sweeps/new/?scenario=<id>``.

Through Django's test client (embedded mode): who may open and post it (anonymous visitors,
owners, group members, outsiders; CSRF), a valid form creating one run per point of the grid
that the embedded worker then executes, every kind of bad input shown beside the row or field it
concerns with nothing created, the parameter suggestions, the links to the form, and the JSON
the sweep page polls. Then one test in a real browser (headless Chromium, embedded live server)
that fills the form, submits it and watches the sweep page until its points are done and the
aggregated plot is drawn.
"""

from __future__ import annotations

import html
import json
import os
import re
import threading
import time

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

import simengine
from gridweb.runs import execution
from gridweb.runs.models import Run, Status, Sweep
from gridweb.runs.sweep_form import parse_values, range_values
from gridweb.scenarios.models import Scenario
from gridweb.sharing import Visibility
from simengine.registry import LOCAL_SCHEDULERS
from tests.conftest import ROOT
from tests.web.conftest import client_for

LOAD = "workload.streams.0.arrival.target_load"
SCHEDULER = "platform.clusters.0.scheduler.name"
SCREENSHOTS = ROOT / "artifacts" / "screenshots"


def small_spec(name: str = "one cluster", completions: int = 600) -> dict:
    """One EASY cluster fed by a synthetic stream: a point runs in about a second."""
    return {
        "name": name,
        "platform": {"clusters": [{"name": "main", "processors": 32, "scheduler": {"name": "easy"}}]},
        "workload": {"streams": [{
            "kind": "synthetic", "name": "users", "target": "main", "arrival": {"target_load": 0.7},
            "size": {"kind": "uniform", "low": 1, "high": 16, "integer": True},
            "runtime": {"kind": "exponential", "mean": 600}}]},
        "run": {"seed": 4, "replications": 1, "stop": {"completions": completions}, "warmup": {"completions": 50}},
    }


def make_scenario(owner, visibility=Visibility.PRIVATE, group=None, **spec_changes) -> Scenario:
    spec = small_spec(**spec_changes)
    return Scenario.objects.create(owner=owner, name=spec["name"], spec=spec, visibility=visibility, group=group)


def form_url(scenario: Scenario) -> str:
    return reverse("runs:sweep_new") + f"?scenario={scenario.pk}"


def form_data(*rows: tuple[str, str], **fields) -> dict[str, str]:
    """A posted form: ``rows`` are (path, values); ``fields`` the rest (name, replications, ...)."""
    data = {"name": "my sweep", "visibility": "private", "tags": ""}
    for i, (path, values) in enumerate(rows):
        data[f"param-{i}-path"], data[f"param-{i}-values"] = path, values
    data.update({key.replace("_", "-"): value for key, value in fields.items()})
    return data


def error_beside(page: str, key: str) -> str:
    """The text of the error element ``[data-error-for=key]`` (a row: ``param-<i>``; a field: its name)."""
    match = re.search(rf'data-error-for="{re.escape(key)}">(.*?)</(td|span|p)>', page, re.S)
    assert match, f"no error element for {key}"
    return html.unescape(re.sub(r"<[^>]+>", " ", match.group(1))).strip()


def nothing_created() -> bool:
    return not Sweep.objects.exists() and not Run.objects.exists()


# --- Who may open and post the form ------------------------------------------------------------------


@pytest.mark.django_db
def test_anonymous_visitors_are_sent_to_the_login_page_and_create_nothing(alice):
    scenario = make_scenario(alice, visibility=Visibility.PUBLIC)
    client = client_for()
    for response in (client.get(form_url(scenario)), client.post(form_url(scenario), form_data((LOAD, "0.5, 0.8")))):
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert client.get(reverse("runs:sweep_new")).status_code == 302
    assert nothing_created()


@pytest.mark.django_db
def test_an_outsider_gets_404_for_a_private_or_group_scenario_and_creates_nothing(alice, bob, lab):
    private = make_scenario(alice)
    shared = make_scenario(alice, visibility=Visibility.GROUP, group=lab)
    outsider = client_for(bob)
    for scenario in (private, shared):
        assert outsider.get(form_url(scenario)).status_code == 404
        assert outsider.post(form_url(scenario), form_data((LOAD, "0.5, 0.8"))).status_code == 404
    assert outsider.get(reverse("runs:sweep_new") + "?scenario=999999").status_code == 404
    assert outsider.get(reverse("runs:sweep_new") + "?scenario=x").status_code == 404
    # the page that picks a scenario lists only what bob may view
    pick = outsider.get(reverse("runs:sweep_new")).content.decode()
    assert f'value="{private.pk}"' not in pick and "no-scenarios" in pick
    assert nothing_created()


@pytest.mark.django_db
def test_group_members_and_anyone_for_a_public_scenario_may_sweep_it(alice, bob, carol, lab):
    shared = make_scenario(alice, visibility=Visibility.GROUP, group=lab)
    public = make_scenario(alice, visibility=Visibility.PUBLIC, name="public one")
    assert client_for(carol).get(form_url(shared)).status_code == 200
    assert f'value="{shared.pk}"' in client_for(carol).get(reverse("runs:sweep_new")).content.decode()
    response = client_for(bob).post(form_url(public), form_data((LOAD, "0.5, 0.8"), name="bob's sweep"))
    assert response.status_code == 302
    sweep = Sweep.objects.get()
    # the sweep (and its runs) belong to whoever started it, private as asked
    assert sweep.owner == bob and sweep.scenario == public and sweep.visibility == Visibility.PRIVATE
    assert {run.owner for run in sweep.runs.all()} == {bob}


@pytest.mark.django_db
def test_csrf_is_enforced(alice):
    scenario = make_scenario(alice)
    client = client_for(alice, csrf=True)
    assert client.post(form_url(scenario), form_data((LOAD, "0.5, 0.8"))).status_code == 403
    assert nothing_created()
    page = client.get(form_url(scenario)).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    response = client.post(form_url(scenario), {**form_data((LOAD, "0.5, 0.8")), "csrfmiddlewaretoken": token})
    assert response.status_code == 302 and Sweep.objects.count() == 1


# --- A valid form --------------------------------------------------------------------------------------


@pytest.fixture
def idle_worker():
    """The embedded worker (one per process, it outlives tests) is idle before and after."""
    assert execution.embedded_worker().wait_idle(120)
    yield
    assert execution.embedded_worker().wait_idle(120), "the embedded worker did not finish its queue"


@pytest.mark.django_db(transaction=True)
def test_a_valid_form_creates_one_run_per_point_and_the_embedded_worker_runs_them(alice, lab, idle_worker):
    scenario = make_scenario(alice)
    response = client_for(alice).post(form_url(scenario), form_data(
        (LOAD, "0.5, 0.85"), (SCHEDULER, "fcfs, easy"),
        name="load x scheduler", tags="study, sweep", visibility="group", group=str(lab.pk),
        replications="2", seed="11"))

    sweep = Sweep.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("runs:sweep", args=[sweep.pk])
    assert (sweep.name, sweep.owner, sweep.scenario, sweep.visibility, sweep.group) == \
        ("load x scheduler", alice, scenario, Visibility.GROUP, lab)
    assert sweep.tags == ["study", "sweep"]
    # numbers are read as numbers, names as text; the grid is their cartesian product
    assert sweep.parameters == {LOAD: [0.5, 0.85], SCHEDULER: ["fcfs", "easy"]}
    runs = list(sweep.runs.order_by("pk"))
    assert len(runs) == 2 * 2
    assert sorted((r.sweep_point[LOAD], r.sweep_point[SCHEDULER]) for r in runs) == \
        sorted((load, name) for load in (0.5, 0.85) for name in ("fcfs", "easy"))
    for run in runs:
        assert run.spec["run"]["replications"] == 2 and run.spec["run"]["seed"] == 11  # the overrides
        assert run.spec["workload"]["streams"][0]["arrival"]["target_load"] == run.sweep_point[LOAD]
        assert run.visibility == Visibility.GROUP and run.owner == alice
    assert scenario.spec["run"]["seed"] == 4  # the scenario itself is unchanged

    deadline = time.monotonic() + 120
    while Sweep.objects.get(pk=sweep.pk).status not in (Status.DONE, Status.FAILED):
        assert time.monotonic() < deadline, "the sweep did not finish"
        time.sleep(0.1)
    sweep.refresh_from_db()
    assert sweep.status == Status.DONE and len(sweep.aggregate) == 4
    assert all(row["metrics"]["mean_wait"]["ci_low"] is not None for row in sweep.aggregate)  # 2 replications
    status = client_for(alice).get(reverse("runs:sweep_status", args=[sweep.pk])).json()
    assert status["finished"] and status["finished_points"] == 4 and status["counts"]["done"] == 4
    # the API says which worker process ran each point (here this process's embedded worker), read-only
    api = client_for(alice)
    embedded_worker = f"embedded@{os.uname().nodename}:{os.getpid()}"
    assert {api.get(f"/api/runs/{run.pk}/").json()["worker"] for run in runs} == {embedded_worker}
    response = api.patch(f"/api/runs/{runs[0].pk}/", {"worker": "elsewhere", "name": "renamed"},
                         content_type="application/json")
    assert response.status_code == 200 and response.json()["worker"] == embedded_worker
    assert Run.objects.get(pk=runs[0].pk).worker == embedded_worker


@pytest.mark.django_db
def test_a_range_gives_the_values_from_start_to_stop(alice):
    scenario = make_scenario(alice)
    data = form_data((SCHEDULER, "fcfs, easy"))
    data.update({"param-1-path": LOAD, "param-1-values": "", "param-1-start": "0.5", "param-1-stop": "0.9",
                 "param-1-step": "0.1"})
    assert client_for(alice).post(form_url(scenario), data).status_code == 302
    sweep = Sweep.objects.get()
    assert sweep.parameters[LOAD] == [0.5, 0.6, 0.7, 0.8, 0.9]  # as typed, no 0.6000000000000001
    assert sweep.runs.count() == 2 * 5


def test_values_are_read_as_typed():
    assert parse_values("1, 2.5, easy, true, '3', 1e3") == [1, 2.5, "easy", True, "3", 1000.0]
    assert range_values("1", "10", "3") == [1, 4, 7, 10]
    assert range_values("1", "0", "-0.25") == [1, 0.75, 0.5, 0.25, 0]
    assert range_values("0.1", "0.3", "0.1") == [0.1, 0.2, 0.3]
    for bad, reason in ((("1", "2", "0"), "must not be 0"), (("1", "2", "-1"), "never gets"),
                        (("a", "2", "1"), "start must be a number"), (("0", "1", "0.0001"), "at most")):
        with pytest.raises(ValueError, match=reason):
            range_values(*bad)
    with pytest.raises(ValueError, match="value 2 of 3 is empty"):
        parse_values("1,,2")
    with pytest.raises(ValueError, match="given twice"):
        parse_values("0.5, 0.5")


# --- Bad input: the error beside what it concerns, nothing created -------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(("rows", "fields", "where", "expected"), [
    # a path the scenario does not have: beside its row
    ([(LOAD, "0.5, 0.8"), ("run.sed", "1, 2")], {}, "param-1", "unknown field 'sed'"),
    ([("platform.clusters.3.processors", "8, 16")], {}, "param-0", "no item 3"),
    # a value the engine refuses, naming it
    ([(LOAD, "0.5, 0.8"), ("platform.clusters.0.processors", "16, 0")], {}, "param-1",
     "platform.clusters.0.processors = 0: must be greater than 0"),
    ([(SCHEDULER, "easy, nosuch")], {}, "param-0", "unknown local scheduler 'nosuch'"),
    ([(LOAD, "0.5, high")], {}, "param-0", "must be a valid number"),
    # a value that breaks another field (the size of a job against the cluster): still its row
    ([("workload.streams.0.size.high", "8, 64")], {}, "param-0", "larger than cluster 'main'"),
    # the rows themselves
    ([(LOAD, "")], {}, "param-0", "give the values"),
    ([(LOAD, "0.5,,0.8")], {}, "param-0", "value 2 of 3 is empty"),
    ([("", "1, 2")], {}, "param-0", "give the dotted path"),
    ([(LOAD, "0.5"), (LOAD, "0.8")], {}, "param-1", "already swept in row 1"),
    ([("run.seed", ",".join(map(str, range(17)))), (LOAD, ",".join(str(x / 100) for x in range(40, 56)))], {},
     "parameters", "the grid has 272 points"),
    ([], {}, "parameters", "add at least one parameter"),
    # the other fields
    ([(LOAD, "0.5, 0.8")], {"replications": "0"}, "replications", "greater than or equal to 1"),
    ([(LOAD, "0.5, 0.8")], {"name": ""}, "name", "required"),
    ([(LOAD, "0.5, 0.8")], {"visibility": "everyone"}, "visibility", "not one of the available choices"),
    ([(LOAD, "0.5, 0.8")], {"visibility": "group"}, "group", "choose the group"),
])
def test_a_bad_form_shows_the_error_beside_its_row_or_field_and_creates_nothing(alice, rows, fields, where,
                                                                              expected):
    scenario = make_scenario(alice)
    response = client_for(alice).post(form_url(scenario), form_data(*rows, **fields))

    assert response.status_code == 400
    page = response.content.decode()
    assert expected in error_beside(page, where)
    assert nothing_created()
    # what was typed is kept, and the other rows carry no error
    for i, (path, values) in enumerate(rows):
        assert f'name="param-{i}-path" id="param-{i}-path"' in page
        assert f'value="{html.escape(path)}"' in page
        if f"param-{i}" != where:
            assert error_beside(page, f"param-{i}") == ""


@pytest.mark.django_db
def test_a_group_the_user_is_not_in_is_refused(alice, bob):
    other = Group.objects.create(name="other lab")
    scenario = make_scenario(bob)
    response = client_for(bob).post(form_url(scenario), form_data((LOAD, "0.5"), visibility="group",
                                                                  group=str(other.pk)))
    assert response.status_code == 400
    assert "not a member" in error_beside(response.content.decode(), "group")
    assert nothing_created()


@pytest.mark.django_db
def test_a_bad_override_is_shown_beside_its_field(alice):
    scenario = make_scenario(alice)
    response = client_for(alice).post(form_url(scenario), form_data((LOAD, "0.5, 0.8"), seed="-1"))
    assert response.status_code == 400
    assert "greater than or equal to 0" in error_beside(response.content.decode(), "seed")
    assert nothing_created()


# --- What the form offers ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_form_suggests_the_scenarios_sweepable_parameters(alice):
    scenario = make_scenario(alice)
    page = client_for(alice).get(form_url(scenario)).content.decode()
    datalist = page.split('<datalist id="sweep-parameter-paths">', 1)[1].split("</datalist>", 1)[0]
    suggested = set(re.findall(r'<option value="([^"]+)"', datalist))
    assert {SCHEDULER, LOAD, "run.seed", "run.replications", "platform.clusters.0.processors",
            "workload.streams.0.size.high", "workload.streams.0.runtime.mean",
            "run.stop.completions"} <= suggested
    # names others refer to, and discriminators, are not offered
    assert not {"name", "platform.clusters.0.name", "workload.streams.0.name", "workload.streams.0.kind",
                "workload.streams.0.size.kind"} & suggested
    # the current values are shown; a policy's name offers the registry's names
    assert re.search(rf'<option value="{re.escape(LOAD)}">number, now 0.7</option>', datalist)
    config = json.loads(html.unescape(page.split('<script id="sweep-form-config" type="application/json">', 1)[1]
                                      .split("</script>", 1)[0]))
    assert config["suggestions"][SCHEDULER]["choices"] == list(LOCAL_SCHEDULERS.names())
    assert config["suggestions"][SCHEDULER]["value"] == "easy"
    # a new form: one empty row, the scenario's name and replications as starting points
    assert 'id="param-row-0"' in page and 'id="param-row-1"' not in page
    assert 'value="one cluster sweep"' in page and 'placeholder="1 (the scenario\'s)"' in page


@pytest.mark.django_db
def test_pages_link_to_the_form(alice, bob):
    scenario = make_scenario(alice, visibility=Visibility.PUBLIC)
    url = form_url(scenario)
    assert url in client_for(alice).get(reverse("scenarios:detail", args=[scenario.pk])).content.decode()
    assert url in client_for(bob).get(reverse("scenarios:detail", args=[scenario.pk])).content.decode()
    assert 'id="link-new-sweep"' in client_for(alice).get(reverse("runs:sweeps")).content.decode()
    builder = client_for(alice).get(reverse("scenarios:edit", args=[scenario.pk])).content.decode()
    assert 'id="link-sweep"' in builder and f'data-href-base="{reverse("runs:sweep_new")}?scenario="' in builder


# --- The sweep page follows its points -------------------------------------------------------------------


@pytest.mark.django_db
def test_the_status_json_follows_the_points_and_is_private_like_the_sweep(alice, bob):
    from gridweb.runs.execution import execute_run
    from gridweb.runs.services import create_sweep

    scenario = make_scenario(alice)
    sweep = create_sweep(alice, scenario.spec, {"run.seed": [1, 2]}, scenario=scenario)  # not dispatched
    url = reverse("runs:sweep_status", args=[sweep.pk])
    assert client_for(bob).get(url).status_code == 404 and client_for().get(url).status_code == 404

    status = client_for(alice).get(url).json()
    assert (status["status"], status["finished"], status["finished_points"]) == ("queued", False, 0)
    assert [p["status"] for p in status["points"]] == ["queued", "queued"]
    page = client_for(alice).get(reverse("runs:sweep", args=[sweep.pk])).content.decode()
    assert 'data-finished="0"' in page and f'data-status-url="{url}"' in page and "sweep_detail.js" in page

    first, second = sweep.runs.order_by("pk")
    assert execute_run(first.pk) == Status.DONE
    status = client_for(alice).get(url).json()
    assert status["finished_points"] == 1 and not status["finished"]
    assert execute_run(second.pk) == Status.DONE
    status = client_for(alice).get(url).json()
    assert status["finished"] and status["status"] == "done" and status["counts"]["done"] == 2
    page = client_for(alice).get(reverse("runs:sweep", args=[sweep.pk])).content.decode()
    assert 'data-finished="1"' in page and 'data-finished-points="2"' in page


# --- In a browser -----------------------------------------------------------------------------------------


@pytest.fixture
def browser_user(transactional_db, django_user_model):
    return django_user_model.objects.create_user("sweeper", password="pw-sweeper-123")


@pytest.fixture
def logged_in(live_server, page, browser_user):
    client = Client()
    client.force_login(browser_user)
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                               "url": live_server.url}])
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.js_errors = errors
    page.set_default_timeout(15_000)
    page.set_viewport_size({"width": 1400, "height": 1000})
    return page


@pytest.mark.slow
def test_fill_the_form_submit_and_watch_the_sweep_finish_with_its_plot(live_server, logged_in, browser_user,
                                                                       monkeypatch):
    page = logged_in
    scenario = make_scenario(browser_user, name="browser sweep base", completions=800)
    assert execution.embedded_worker().wait_idle(120)
    # The engine waits for a gate, so the sweep page surely opens while its points are running.
    gate = threading.Event()
    real_run = simengine.run

    def gated_run(*args, **kwargs):
        gate.wait(60)
        return real_run(*args, **kwargs)

    monkeypatch.setattr(execution.simengine, "run", gated_run)

    page.goto(live_server.url + form_url(scenario))
    page.wait_for_selector('#sweep-form[data-ready="1"]')
    page.fill("#id_name", "loads from the browser")
    page.fill("#param-0-path", LOAD)
    assert "now 0.7" in page.locator("#param-0-hint").text_content()  # what the parameter is now
    page.fill("#param-0-values", "0.5, 0.9")
    page.fill("#id_replications", "3")
    count = page.locator("#sweep-points-count")
    assert (count.get_attribute("data-points"), count.get_attribute("data-simulations")) == ("2", "6")
    assert "2 points × 3 replications" in count.text_content()
    # a second parameter from the range helper multiplies the points, and removing it divides them again
    page.click("#btn-add-param")
    row = page.locator(".param-row").nth(1)
    index = row.get_attribute("data-row")
    page.fill(f"#param-{index}-path", "run.seed")
    page.fill(f"#param-{index}-start", "1")
    page.fill(f"#param-{index}-stop", "3")
    page.fill(f"#param-{index}-step", "1")
    assert page.locator(f"#param-{index}-values").input_value() == "1, 2, 3"
    assert count.get_attribute("data-points") == "6"
    page.click(f"#btn-remove-param-{index}")
    assert count.get_attribute("data-points") == "2"

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "sweep_form.png"), full_page=True)
    page.click("#btn-start-sweep")
    page.wait_for_url(re.compile(r"/sweeps/\d+/$"))
    sweep = Sweep.objects.get(name="loads from the browser")
    assert sweep.parameters == {LOAD: [0.5, 0.9]} and sweep.runs.count() == 2
    # the page follows the points while they run: it polls status.json and shows each point's status
    sweep_page = page.locator("#sweep-page")
    assert sweep_page.get_attribute("data-finished") == "0" and page.locator("#sweep-live").is_visible()
    first_run = sweep.runs.order_by("pk").first()
    page.wait_for_function(
        "run => Number(document.getElementById('sweep-page').dataset.polls) >= 1 && document.querySelector("
        "`tr[data-run='${run}'] [data-run-status]`).textContent.startsWith('running')", arg=first_run.pk)
    loads: list[str] = []
    page.on("load", lambda loaded: loads.append(loaded.url))
    gate.set()
    # ... and reloads as points end, until the sweep is done
    page.wait_for_selector('#sweep-page[data-finished="1"]', timeout=120_000)
    assert len(loads) >= 1 and not page.locator("#sweep-live").is_visible()
    assert page.locator("#sweep-status").text_content().strip() == "done"
    assert page.locator("#sweep-points tbody tr:not(.pending)").count() == 2
    # the aggregated plot: Bokeh drew a canvas, with the two points and their error bars
    page.wait_for_selector("#plot-aggregate canvas")
    drawn = page.evaluate("""() => {
        const doc = window.Bokeh && Bokeh.documents[0];
        if (!doc) return null;
        const sources = [...doc.all_models].filter((m) => m.data && m.data.mean);
        return sources.map((s) => ({x: [...s.data.x], mean: [...s.data.mean], low: [...s.data.low],
                                    high: [...s.data.high]}));
    }""")
    assert drawn and len(drawn) == 1 and drawn[0]["x"] == [0.5, 0.9]
    runs = {run.sweep_point[LOAD]: run for run in sweep.runs.all()}
    for x, mean, low, high in zip(drawn[0]["x"], drawn[0]["mean"], drawn[0]["low"], drawn[0]["high"]):
        wait = runs[x].summary["metrics"]["mean_wait"]
        assert mean == pytest.approx(wait["mean"]) and low <= mean <= high
        assert (low, high) == (pytest.approx(wait["ci_low"]), pytest.approx(wait["ci_high"]))
    assert page.js_errors == []
    page.screenshot(path=str(SCREENSHOTS / "sweep.png"), full_page=True)
    assert execution.embedded_worker().wait_idle(120)


@pytest.mark.django_db
def test_point_names_fit_a_name_however_long_the_sweep_name(alice):
    # a sweep of the longest name the API takes: its points' runs are named within the column
    # (PostgreSQL refuses a longer value: a 500 before)
    from gridweb.runs.services import create_sweep

    most = Run._meta.get_field("name").max_length
    sweep = create_sweep(alice, small_spec(), {LOAD: [0.5, 0.7], "workload.streams.0.name": ["u" * 150, "v"]},
                         name="s" * most)
    names = list(Run.objects.filter(sweep=sweep).values_list("name", flat=True))
    assert len(names) == 4 and all(len(n) <= most for n in names), [len(n) for n in names]
    assert len(set(names)) == 4  # each still tells its point apart
    assert all(n.startswith("s") for n in names)
