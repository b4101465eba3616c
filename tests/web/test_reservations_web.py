"""Advance reservations, preemption and stream priorities in the web app (Django test client,
embedded mode): the catalog the builder draws its forms from, saving and checking scenarios
with reservations through the builder's endpoints and the API, the preview, and the run page of
a run that has reservation and suspended segments (docs/builder.md, docs/gallery.md).
"""

from __future__ import annotations

import copy
import json

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token

from gridweb.runs.demo import RESERVATIONS_DEMO, SHOWCASES, reservations_demo_spec
from gridweb.runs.execution import execute_run
from gridweb.runs.models import Run, Status
from gridweb.runs.services import create_run
from gridweb.scenarios.models import Scenario
from gridweb.sharing import Visibility
from simengine.gantt import KIND_NAMES
from tests.web.conftest import client_for

pytestmark = pytest.mark.django_db


def spec_with_reservations() -> dict:
    """Two clusters (c1: 16 processors, EASY, suspend with 60 s overhead; c2: 8, FCFS), a
    priority stream and two reservations, one relaxed, one with a job."""
    return {
        "name": "With reservations",
        "platform": {"clusters": [
            {"name": "c1", "processors": 16, "scheduler": {"name": "easy"},
             "preemption": {"name": "suspend", "params": {"overhead": 60.0}}},
            {"name": "c2", "processors": 8, "scheduler": {"name": "fcfs"}},
        ]},
        "workload": {"streams": [
            {"kind": "synthetic", "name": "urgent", "target": "c1", "priority": 5, "arrival": {"target_load": 0.3},
             "size": {"kind": "uniform", "low": 1, "high": 8, "integer": True},
             "runtime": {"kind": "exponential", "mean": 300}, "count": 50},
        ]},
        "reservations": [
            {"name": "window", "cluster": "c1", "processors": 8, "start": 600.0, "end": 1800.0,
             "job": {"runtime": 900.0}},
            {"name": "sliding", "cluster": "c2", "processors": 4, "start": 3000.0, "end": 4000.0,
             "request_time": 100.0, "relaxed": {"earliest_start": 2000.0, "latest_finish": 6000.0}},
        ],
        "run": {"seed": 3, "stop": {"horizon": 10000.0}},
    }


def post_json(client, url: str, body, **extra):
    return client.post(url, data=json.dumps(body), content_type="application/json", **extra)


def save_body(spec) -> dict:
    return {"spec": spec, "meta": {"tags": ["ar"], "visibility": "private", "group": None}}


def builder_config(response) -> dict:
    html = response.content.decode()
    marker = '<script id="builder-config" type="application/json">'
    start = html.index(marker) + len(marker)
    return json.loads(html[start:html.index("</script>", start)])


# --- the catalog ------------------------------------------------------------------------------------


def test_catalog_gives_each_cluster_policy_field_its_own_registry(client):
    catalog = client.get(reverse("scenarios:catalog")).json()
    # One entry per PolicyRef field of the engine's Cluster, in its order: the builder draws a
    # "Preemption" widget from the preemption registry, not a second local-scheduler widget.
    assert catalog["cluster_policies"] == [
        {"field": "scheduler", "title": "Local scheduler", "registry": "local_schedulers", "default": "fcfs"},
        {"field": "preemption", "title": "Preemption", "registry": "preemption", "default": "none"},
        {"field": "victims", "title": "Victims", "registry": "victims", "default": "lowest-priority-newest"},
    ]
    preemption = catalog["registries"]["preemption"]
    assert preemption["kind"] == "preemption policy"
    policies = {p["name"]: p for p in preemption["policies"]}
    assert set(policies) == {"none", "kill", "requeue", "suspend"}
    overhead = policies["suspend"]["params_schema"]["properties"]["overhead"]
    assert overhead["minimum"] == 0 and overhead["default"] == 0
    assert policies["kill"]["params_schema"]["properties"] == {}
    # the reservations section is shown because the schema has it; its form comes from these defs
    assert catalog["features"]["reservations"] is True
    reservation = catalog["scenario_schema"]["$defs"]["Reservation"]
    assert reservation["required"] == ["name", "cluster", "processors", "start", "end"]
    assert {"relaxed", "job", "request_time"} <= set(reservation["properties"])
    # stream priority and the lublin kind reach the builder through the schema
    assert "priority" in catalog["scenario_schema"]["$defs"]["SyntheticStream"]["properties"]
    kinds = catalog["scenario_schema"]["$defs"]["Workload"]["properties"]["streams"]["items"]["discriminator"]
    assert "lublin" in kinds["mapping"]


# --- saving through the builder's endpoints ---------------------------------------------------------


def test_a_scenario_with_reservations_saves_reopens_and_exports_unchanged(alice):
    client = client_for(alice)
    spec = spec_with_reservations()
    checked = post_json(client, reverse("scenarios:validate"), {"spec": spec}).json()
    assert checked == {"valid": True, "errors": {}}

    response = post_json(client, reverse("scenarios:new"), save_body(spec))
    assert response.status_code in (200, 201), response.content
    scenario = Scenario.objects.get()
    assert scenario.spec["reservations"] == spec["reservations"]
    assert scenario.spec["platform"]["clusters"][0]["preemption"] == {"name": "suspend", "params": {"overhead": 60.0}}
    assert scenario.spec["workload"]["streams"][0]["priority"] == 5

    # The builder reopens it with the same document, and the export is that document.
    config = builder_config(client.get(reverse("scenarios:edit", args=[scenario.pk])))
    assert config["document"]["reservations"] == spec["reservations"]
    assert config["document"]["platform"] == spec["platform"]
    exported = json.loads(client.get(reverse("scenarios:export", args=[scenario.pk])).content)
    assert exported["reservations"] == spec["reservations"]

    # Saving again after an edit (the relaxed frame removed) keeps the edit.
    edited = copy.deepcopy(spec)
    del edited["reservations"][1]["relaxed"]
    assert post_json(client, reverse("scenarios:edit", args=[scenario.pk]), save_body(edited)).status_code == 200
    scenario.refresh_from_db()
    assert "relaxed" not in scenario.spec["reservations"][1]
    assert Scenario.objects.count() == 1


def _bad(change) -> dict:
    spec = spec_with_reservations()
    change(spec)
    return spec


#: (what is wrong, the change, the one path the error must name, words of its message)
BAD_INPUTS = [
    ("end before start", lambda s: s["reservations"][0].update(end=500.0),
     "reservations.0.end", "must be after start (600)"),
    ("more processors than the cluster", lambda s: s["reservations"][1].update(processors=9),
     "reservations.1.processors", "at most the 8 processors of cluster 'c2'"),
    ("an unknown cluster", lambda s: s["reservations"][0].update(cluster="nowhere"),
     "reservations.0.cluster", "unknown cluster 'nowhere'"),
    ("a frame that does not hold the window", lambda s: s["reservations"][1]["relaxed"].update(latest_finish=3500.0),
     "reservations.1.relaxed.latest_finish", "at least end (4000)"),
    ("a job longer than its window", lambda s: s["reservations"][0]["job"].update(runtime=1300.0),
     "reservations.0.job.runtime", "must fit in the window (1200 s)"),
    ("a duplicate name", lambda s: s["reservations"][1].update(name="window"),
     "reservations.1.name", "duplicate reservation name 'window'"),
    ("an unknown preemption policy", lambda s: s["platform"]["clusters"][1].update(preemption={"name": "pause"}),
     "platform.clusters.1.preemption.name", "pause"),
    ("a negative overhead",
     lambda s: s["platform"]["clusters"][0]["preemption"]["params"].update(overhead=-1),
     "platform.clusters.0.preemption.params.overhead", "greater than or equal to 0"),
]


@pytest.mark.parametrize(("what", "change", "path", "words"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_reservation_input_is_refused_with_its_path_and_nothing_is_saved(alice, what, change, path, words):
    client = client_for(alice)
    spec = _bad(change)
    checked = post_json(client, reverse("scenarios:validate"), {"spec": spec}).json()
    assert checked["valid"] is False
    assert list(checked["errors"]) == [path], checked["errors"]
    assert any(words in message for message in checked["errors"][path]), checked["errors"]

    response = post_json(client, reverse("scenarios:new"), save_body(spec))
    assert response.status_code == 400
    assert list(response.json()["errors"]) == [path]
    assert Scenario.objects.count() == 0


def test_a_missing_reservation_field_is_named_at_its_path(alice):
    spec = spec_with_reservations()
    del spec["reservations"][0]["end"]
    errors = post_json(client_for(alice), reverse("scenarios:validate"), {"spec": spec}).json()["errors"]
    assert list(errors) == ["reservations.0.end"] and "required" in errors["reservations.0.end"][0].lower()


# --- the API -----------------------------------------------------------------------------------------


def token_client(user):
    from django.test import Client

    return Client(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")


def test_the_api_accepts_reservations_and_refuses_the_same_bad_input(alice):
    api = token_client(alice)
    spec = spec_with_reservations()
    assert api.post("/api/scenarios/validate/", {"spec": spec}, content_type="application/json").status_code == 200
    created = api.post("/api/scenarios/", {"spec": spec}, content_type="application/json")
    assert created.status_code == 201, created.content
    assert Scenario.objects.get(pk=created.json()["id"]).spec["reservations"] == spec["reservations"]

    for what, change, path, words in BAD_INPUTS:
        bad = _bad(change)
        checked = api.post("/api/scenarios/validate/", {"spec": bad}, content_type="application/json")
        assert checked.status_code == 400, what
        assert list(checked.json()["errors"]) == [f"spec.{path}"], (what, checked.json())
        for url in ("/api/scenarios/", "/api/runs/"):
            refused = api.post(url, {"spec": bad}, content_type="application/json")
            assert refused.status_code == 400 and list(refused.json()["errors"]) == [f"spec.{path}"], (what, url)
    assert Scenario.objects.count() == 1 and Run.objects.count() == 0


# --- the preview -------------------------------------------------------------------------------------


def test_preview_takes_lublin_and_priority_streams_and_counts_reserved_time(alice):
    spec = spec_with_reservations()
    spec["workload"]["streams"].append(
        {"kind": "lublin", "name": "lublin", "target": "c2", "count": 500, "target_load": 0.6})
    data = post_json(client_for(alice), reverse("scenarios:preview"), {"spec": spec}).json()
    assert data["errors"] == {}
    streams = {s["name"]: s for s in data["streams"]}
    assert set(streams) == {"urgent", "lublin"}
    assert streams["lublin"]["jobs"] == 500
    # target_load rescales the submit times so the sample offers exactly that load to c2
    assert streams["lublin"]["offered_load"] == pytest.approx(0.6)
    assert streams["lublin"]["sizes"]["max"] <= 8
    clusters = {c["name"]: c for c in data["clusters"]}
    # window: 8 processors x 1200 s on c1; sliding: 4 x 1000 s on c2; horizon 10,000 s
    assert clusters["c1"]["reserved"] == 8 * 1200 and clusters["c2"]["reserved"] == 4 * 1000
    assert clusters["c1"]["reserved_load"] == pytest.approx(9600 / (16 * 10000))
    assert clusters["c2"]["reserved_load"] == pytest.approx(4000 / (8 * 10000))

    # a reservation with errors is left out; without a horizon there is no share to give
    spec["reservations"][1]["end"] = 10.0
    del spec["run"]["stop"]
    spec["run"]["stop"] = {"completions": 40}
    data = post_json(client_for(alice), reverse("scenarios:preview"), {"spec": spec}).json()
    clusters = {c["name"]: c for c in data["clusters"]}
    assert clusters["c2"]["reserved"] == 0 and clusters["c1"]["reserved_load"] is None


# --- the demo and the run page -----------------------------------------------------------------------


def test_the_reservations_demo_is_the_example_scenario_under_the_demo_name():
    import yaml

    from gridweb.runs.demo import RESERVATIONS_EXAMPLE
    from simengine.scenario import load_scenario

    assert [build for build, _ in SHOWCASES][0] is reservations_demo_spec  # first of the showcases (Cao: second)
    spec = reservations_demo_spec()
    example = yaml.safe_load(RESERVATIONS_EXAMPLE.read_text())
    strip = lambda doc: {k: v for k, v in doc.items() if k not in ("name", "description")}  # noqa: E731
    assert strip(spec) == strip(example) and spec["name"] == RESERVATIONS_DEMO
    scenario = load_scenario(spec)
    assert [c.preemption.name for c in scenario.platform.clusters] == ["suspend", "suspend"]
    assert sorted({s.priority for s in scenario.workload.streams}) == [0, 10]
    assert [r.relaxed is not None for r in scenario.reservations] == [False, False, True, False]
    assert scenario.run.replications <= 5  # a modest run
    for words in ("60 s", "rejected", "reservation", "suspended", "docs/reservations.md"):
        assert words in spec["description"]


@pytest.fixture
def demo_run(alice) -> Run:
    run = create_run(alice, reservations_demo_spec(), name=RESERVATIONS_DEMO, visibility=Visibility.PRIVATE,
                     dispatch_now=False)
    assert execute_run(run.pk) == Status.DONE, run.error
    run.refresh_from_db()
    return run


def _column(columns: dict, name: str, n: int) -> list:
    values = columns[name]
    return values if isinstance(values, list) else [values["repeat"]] * n


def test_run_page_of_the_demo_shows_reservations_suspensions_and_their_metrics(alice, demo_run):
    client = client_for(alice)
    segments = client.get(reverse("runs:segments", args=[demo_run.pk])).json()
    kinds = segments["kinds"]
    assert kinds == list(KIND_NAMES)
    columns = segments["columns"]
    n = segments["count"]
    kind = [kinds[k] for k in _column(columns, "kind", n)]
    stream, job_id, cluster = (_column(columns, name, n) for name in ("stream", "job_id", "cluster"))
    t0, t1, procs = (_column(columns, name, n) for name in ("t0", "t1", "processors"))
    assert {"run", "reservation", "suspended"} <= set(kind)

    # Reservation segments are the reservations' rows: stream 2 (after the two workload
    # streams), job id = reservation index + 1.
    windows: dict[int, list[int]] = {}
    for i, k in enumerate(kind):
        if k == "reservation":
            assert stream[i] == 2
            windows.setdefault(job_id[i], []).append(i)
    # overlap-west (4) asks for 32 of west's 64 processors over [19000, 20000], inside
    # course-west's window [18000, 21600] that already holds 48: 16 are left, so it is rejected.
    assert sorted(windows) == [1, 2, 3]

    def window(j):
        (span,) = {(t0[i], t1[i]) for i in windows[j]}
        return span, sum(procs[i] for i in windows[j]), {cluster[i] for i in windows[j]}

    assert window(1) == ((7200, 14400), 32, {0})  # demo-east: rigid, exactly as asked, on east
    assert window(2) == ((18000, 21600), 48, {1})  # course-west: rigid, on west
    (start, end), held, where = window(3)  # relaxed-east: may slide earlier, down to its EST 20000
    assert 20000 <= start <= 30000 and end - start == 3600 and held == 24 and where == {0}
    # Suspended gaps: only the batch jobs (priority 0) are ever preempted.
    assert {stream[i] for i, k in enumerate(kind) if k == "suspended"} == {0}

    page = client.get(reverse("runs:run", args=[demo_run.pk])).content.decode()
    marker = '<script id="gantt-config" type="application/json">'
    at = page.index(marker) + len(marker)
    config = json.loads(page[at:page.index("</script>", at)])
    # the hover names a reservation's segments by the reservation, and every job by its stream
    assert config["streams"] == ["batch", "interactive", "reservations"]
    assert config["reservationStream"] == 2
    assert config["reservations"] == ["demo-east", "course-west", "relaxed-east", "overlap-west"]
    assert 'data-metric="reservations_accepted" data-mean="3.0"' in page
    assert 'data-metric="reservations_rejected" data-mean="1.0"' in page
    assert "reservations accepted" in page and "preemptions" in page
    replications = demo_run.summary["replications"]
    assert f"{replications} rejected" in page  # the job counts: the rejected reservation's row per replication


def test_the_read_only_page_lists_preemption_reservations_priorities_and_lublin_streams(alice):
    spec = spec_with_reservations()
    spec["workload"]["streams"].append(
        {"kind": "lublin", "name": "lublin", "target": "c2", "count": 500, "target_load": 0.6})
    scenario = Scenario.objects.create(owner=alice, name=spec["name"], spec=spec)
    response = client_for(alice).get(reverse("scenarios:detail", args=[scenario.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    assert "<th>Preemption</th>" in page and 'suspend <small class="muted">overhead 60</small>' in page
    table = page.split('id="reservations-table"', 1)[1].split("</table>", 1)[0]
    assert '<tr data-reservation="0"><td>window</td><td>c1</td><td>8</td><td>600–1800</td>' in table
    assert "<td>2000–6000</td>" in table and "<td>900</td>" in table
    streams = page.split('id="streams-table"', 1)[1].split("</table>", 1)[0]
    assert "priority 5" in streams
    assert "Lublin-Feitelson (both jobs), 500 jobs, target load 0.6" in streams


def test_thumbnail_counts_neither_reservation_windows_nor_suspended_gaps_as_busy():
    from gridweb.runs.thumbnails import busy_fraction
    from simengine.gantt import KIND_RESERVATION, KIND_RUN, KIND_SUSPENDED

    # One cluster of 4 processors over [0, 100], two slices of 50 s:
    #   processors 0-1: a job runs the whole time;
    #   processors 2-3: a reservation window [0, 100], its job runs [0, 50] inside it, and a
    #   suspended job's gap [50, 100] (suspended there, say) lies over the same processors.
    segments = {"cluster": [0, 0, 0, 0], "t0": [0, 0, 0, 50], "t1": [100, 100, 50, 100],
                "processors": [2, 2, 2, 2], "kind": [KIND_RUN, KIND_RESERVATION, KIND_RUN, KIND_SUSPENDED]}
    # busy: first slice 2 + 2 of 4 processors; second slice only the first job's 2
    assert busy_fraction(segments, 0, 4, 100.0, bins=2).tolist() == [1.0, 0.5]


def test_the_run_plots_count_the_measured_jobs_as_the_metrics_do_without_reservations(alice, demo_run):
    """The reservations' rows (a job stream of their own, with a request-to-window 'wait') are not
    jobs: the wait and slowdown plots leave them out, as the engine's jobs_measured does."""
    from gridweb.runs.gantt_data import result_arrays
    from gridweb.runs.plots import measured

    arrays = result_arrays(demo_run)
    reservation_rows = int(((arrays["jobs_reservation"] >= 0) & (arrays["jobs_status"] == 0)).sum())
    assert reservation_rows == 3 * demo_run.summary["replications"]  # 3 of 4 accepted and completed
    n = int(sum(demo_run.summary["metrics"]["jobs_measured"]["values"]))
    assert len(measured(arrays, "wait")) == len(measured(arrays, "bounded_slowdown")) == n
    plots = client_for(alice).get(reverse("runs:plots", args=[demo_run.pk])).content.decode()
    assert f"Wait time ({n:,} measured jobs;" in plots


def test_the_read_only_page_writes_parameters_for_people_not_as_python(alice):
    """'uniform (low 1, high 8, integer True)' and '{'overhead': 60.0}' were Python's spelling."""
    spec = spec_with_reservations()
    scenario = Scenario.objects.create(owner=alice, name=spec["name"], spec=spec)
    page = client_for(alice).get(reverse("scenarios:detail", args=[scenario.pk])).content.decode()
    clusters = page.split('id="clusters-table"', 1)[1].split("</table>", 1)[0]
    assert 'suspend <small class="muted">overhead 60</small>' in clusters
    streams = page.split('id="streams-table"', 1)[1].split("</table>", 1)[0]
    assert "size uniform (low 1, high 8, integer yes); runtime exponential (mean 300)" in streams
    for python in ("True", "False", "{", "&#x27;"):
        assert python not in clusters + streams, python
