"""Uploaded traces: validated by the engine's reader, size-limited, stored once, usable by scenarios."""

from __future__ import annotations

import gzip

import pytest
from django.contrib.auth.models import Group, User
from django.core.files.uploadedfile import SimpleUploadedFile

from gridweb.scenarios.models import TraceFile
from gridweb.scenarios.traces import TraceInvalid, store_trace
from gridweb.scenarios.validation import validate_spec
from gridweb.sharing import Visibility
from tests.conftest import ROOT
from tests.web.conftest import downloaded

pytestmark = pytest.mark.django_db

TINY_GWF = ROOT / "examples" / "traces" / "tiny.gwf"


def swf_text(jobs: int, max_procs: int = 64, bad_line: int | None = None) -> str:
    """An SWF trace of ``jobs`` jobs (2 header lines first); line ``bad_line`` gets a non-number."""
    lines = ["; Version: 2.2", f"; MaxProcs: {max_procs}"]
    for i in range(1, jobs + 1):
        procs = 1 + (i * 7) % max_procs
        fields = [i, i * 60, 0, 100 + i, procs, -1, -1, procs, 200 + i, -1, 1, 1, 1, 1, 1, 1, -1, -1]
        lines.append(" ".join(str(f) for f in fields))
    if bad_line is not None:
        parts = lines[bad_line - 1].split()
        parts[3] = "ten"  # run time
        lines[bad_line - 1] = " ".join(parts)
    return "\n".join(lines) + "\n"


@pytest.fixture
def alice(db) -> User:
    user = User.objects.create_user("alice", password="pw-alice-123")
    user.groups.add(Group.objects.create(name="pds"))
    return user


def upload(name: str, content: bytes | str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content.encode() if isinstance(content, str) else content)


def done_run(owner, spec: dict):
    """``spec`` run to its end by the embedded worker's code (no dispatch), as stored afterwards."""
    from gridweb.runs.execution import execute_run
    from gridweb.runs.models import Run, Status
    from gridweb.runs.services import create_run

    run = create_run(owner, spec, dispatch_now=False)
    assert execute_run(run.pk) == Status.DONE
    return Run.objects.get(pk=run.pk)


def test_swf_upload_counts_jobs_and_keeps_the_bytes(alice):
    text = swf_text(25, max_procs=48)

    trace = store_trace(alice, upload("my trace.swf", text))

    assert trace.format == "swf"
    assert trace.jobs == 25
    assert trace.max_processors == 48
    assert bytes(trace.content) == text.encode()
    assert trace.size == len(text.encode())
    assert trace.stored_name.endswith("my_trace.swf") and "/" not in trace.stored_name
    assert trace.stored_name.startswith(trace.sha256[:12])
    assert trace.owner == alice and trace.visibility == Visibility.PRIVATE
    assert trace.metadata["header"]["MaxProcs"] == "48"


def test_gwf_upload_counts_jobs_and_sites(alice):
    content = TINY_GWF.read_bytes()
    job_lines = [line for line in content.decode().splitlines() if line.strip() and not line.startswith("#")]

    trace = store_trace(alice, upload("tiny.gwf", content), visibility=Visibility.GROUP)

    assert trace.format == "gwf"
    assert trace.jobs == len(job_lines) == 10
    assert sorted(trace.metadata["sites"]) == ["fs0", "fs1"]
    assert trace.group.name == "pds"  # the owner's group by default


def test_gzipped_upload_and_format_given_explicitly(alice):
    packed = gzip.compress(swf_text(12).encode())

    gz = store_trace(alice, upload("week.swf.gz", packed))
    renamed = store_trace(alice, upload("export.txt", swf_text(3)), format="swf")

    assert (gz.jobs, gz.format, gz.stored_name.endswith(".swf.gz")) == (12, "swf", True)
    assert renamed.jobs == 3 and renamed.stored_name.endswith(".swf")


def test_corrupt_line_names_the_line_and_stores_nothing(alice):
    text = swf_text(10, bad_line=7)

    with pytest.raises(TraceInvalid) as caught:
        store_trace(alice, upload("broken.swf", text))

    message = " ".join(caught.value.errors["file"])
    assert "line 7" in message
    assert "broken.swf" in message and "run time" in message
    assert "/tmp" not in message  # the server's temporary path is not shown
    assert TraceFile.objects.count() == 0


def test_unknown_suffix_and_bad_format_are_field_errors(alice):
    with pytest.raises(TraceInvalid) as unknown:
        store_trace(alice, upload("trace.txt", swf_text(2)))
    with pytest.raises(TraceInvalid) as bad_format:
        store_trace(alice, upload("trace.swf", swf_text(2)), format="csv")

    assert "format" in unknown.value.errors and ".swf" in unknown.value.errors["format"][0]
    assert "format" in bad_format.value.errors
    assert TraceFile.objects.count() == 0


def test_empty_and_broken_gzip_are_refused(alice):
    for name, content in (("empty.swf", b""), ("cut.swf.gz", gzip.compress(swf_text(50).encode())[:40]),
                          ("comments.swf", b"; only a header\n")):
        with pytest.raises(TraceInvalid) as caught:
            store_trace(alice, upload(name, content))
        assert name in caught.value.errors["file"][0]
    assert TraceFile.objects.count() == 0


def test_oversize_upload_is_refused_before_it_is_read(alice, settings):
    settings.GRIDWEB_MAX_TRACE_BYTES = 1000

    class Untouchable:
        """An upload declaring 1 MB whose content must never be read."""

        name, size = "huge.swf", 1_000_000

        def chunks(self):
            raise AssertionError("the upload was read")

        read = chunks

    with pytest.raises(TraceInvalid) as caught:
        store_trace(alice, Untouchable())

    assert "limit" in caught.value.errors["file"][0] and "1,000" in caught.value.errors["file"][0]
    assert TraceFile.objects.count() == 0


def test_upload_larger_than_declared_is_cut_off(alice, settings):
    settings.GRIDWEB_MAX_TRACE_BYTES = 500
    text = swf_text(30)
    assert len(text) > 500

    class Lying:
        name, size = "lying.swf", 10

        def chunks(self):
            for start in range(0, len(text), 100):
                yield text[start:start + 100].encode()

    with pytest.raises(TraceInvalid) as caught:
        store_trace(alice, Lying())

    assert "limit" in caught.value.errors["file"][0]
    assert TraceFile.objects.count() == 0


def test_same_bytes_twice_reuse_the_stored_trace(alice):
    text = swf_text(5)

    first = store_trace(alice, upload("a.swf", text))
    again = store_trace(alice, upload("a-copy.swf", text))

    assert again.pk == first.pk
    assert TraceFile.objects.count() == 1


def test_another_user_with_the_same_file_gets_an_own_copy(alice):
    bob = User.objects.create_user("bob")
    text = swf_text(5)

    mine = store_trace(alice, upload("same.swf", text))
    theirs = store_trace(bob, upload("same.swf", text))

    assert theirs.pk != mine.pk and theirs.owner == bob
    assert theirs.stored_name != mine.stored_name


def test_group_visibility_needs_a_group_of_the_user(alice):
    bob = User.objects.create_user("bob")
    other = Group.objects.create(name="elsewhere")

    with pytest.raises(TraceInvalid) as no_group:
        store_trace(bob, upload("x.swf", swf_text(2)), visibility=Visibility.GROUP)
    with pytest.raises(TraceInvalid) as not_member:
        store_trace(alice, upload("x.swf", swf_text(2)), visibility=Visibility.GROUP, group=other)

    assert "group" in no_group.value.errors
    assert "not a member" in not_member.value.errors["group"][0]
    assert TraceFile.objects.count() == 0


def test_a_stored_trace_is_usable_by_a_scenario(alice, settings, tmp_path):
    settings.GRIDWEB_TRACE_DIR = tmp_path / "traces"
    trace = store_trace(alice, upload("replay.swf", swf_text(20, max_procs=32)))
    spec = {
        "name": "replay",
        "platform": {"clusters": [{"name": "c", "processors": 32, "scheduler": {"name": "easy"}}]},
        "workload": {"streams": [{"kind": "trace", "name": "t", "path": trace.stored_name, "target": "c"}]},
    }

    scenario = validate_spec(spec, alice)

    assert scenario.workload.streams[0].format == "swf"
    assert (tmp_path / "traces" / trace.stored_name).read_bytes() == bytes(trace.content)


def test_a_trace_in_use_cannot_be_deleted_and_the_answer_names_what_uses_it(alice, django_user_model):
    from django.test import Client
    from rest_framework.authtoken.models import Token

    from gridweb.runs.models import Run, Status
    from gridweb.runs.services import create_run
    from gridweb.scenarios.models import Scenario

    trace = store_trace(alice, upload("shared.swf", swf_text(40)), visibility=Visibility.PUBLIC)
    spec = {"name": "replay", "platform": {"clusters": [{"name": "c", "processors": 64,
                                                         "scheduler": {"name": "fcfs"}}]},
            "workload": {"streams": [{"kind": "trace", "name": "t", "target": "c", "path": trace.stored_name}]}}
    api = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=alice).key}")
    url = f"/api/traces/{trace.pk}/"
    mine = Scenario.objects.create(owner=alice, name="my replay", spec=spec)
    bob = django_user_model.objects.create_user("bob", password="pw-bob-123")
    Scenario.objects.create(owner=bob, name="bob's private replay", spec=spec)  # a public trace, used by bob
    run = create_run(alice, spec, name="queued replay", dispatch_now=False)

    answer = api.delete(url)
    assert answer.status_code == 409, answer.content
    detail = answer.json()["detail"]
    assert f"scenario #{mine.pk} 'my replay'" in detail and f"run #{run.pk} 'queued replay' (queued)" in detail
    assert "1 scenario or run of other users" in detail and "bob's private replay" not in detail
    assert TraceFile.objects.filter(pk=trace.pk).exists()

    # a finished run does not hold the trace; saved scenarios and queued runs do until they go
    Run.objects.filter(pk=run.pk).update(status=Status.DONE)
    Scenario.objects.filter(name__in=["my replay", "bob's private replay"]).delete()
    assert api.delete(url).status_code == 204
    assert not TraceFile.objects.filter(pk=trace.pk).exists()


def test_a_batsim_workload_uploads_and_replays_like_an_swf_trace(alice):
    """Batsim's JSON workloads (delay profiles) are traces too: named .json, or chosen as the format."""
    import json as json_module

    import numpy as np
    from django.urls import reverse

    import simengine
    from tests.web.conftest import client_for

    workload = {"nb_res": 8, "jobs": [{"id": i, "subtime": 10 * i, "walltime": 60, "res": 1 + i % 8, "profile": "d"}
                                      for i in range(1, 41)],
                "profiles": {"d": {"type": "delay", "delay": 45}}}
    body = json_module.dumps(workload).encode()
    client = client_for(alice)
    uploaded = client.post(reverse("scenarios:trace_upload"), {"file": SimpleUploadedFile("exp1.json", body)})
    assert uploaded.status_code == 201, uploaded.content
    trace = uploaded.json()["trace"]
    assert trace["format"] == "batsim" and trace["jobs"] == 40 and trace["stored_name"].endswith(".json")
    spec = {"platform": {"clusters": [{"name": "c", "processors": 8}]},
            "workload": {"streams": [{"kind": "trace", "name": "b", "target": "c", "path": trace["stored_name"]}]}}
    result = simengine.run(validate_spec(spec, alice))
    assert len(result.jobs["submit"]) == 40 and np.isfinite(result.jobs["end"]).all()
    bad = dict(workload, profiles={"d": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0}})
    refused = client.post(reverse("scenarios:trace_upload"),
                          {"file": SimpleUploadedFile("w", json_module.dumps(bad).encode()), "format": "batsim"})
    assert refused.status_code == 400
    assert "only delay profiles (DelayProfile, delay) and sequential compositions" in \
        " ".join(refused.json()["errors"]["file"])
    # Batsim v5's own example mixing delay jobs with parallel-task ones (Batsim times those on its
    # platform): stored with its 22 delay jobs, the 22 others counted; a stream replays it with skip_untimed
    from tests.conftest import ROOT
    mixed = (ROOT / "tests" / "data" / "batsim-v5" / "test_walltime.json").read_bytes()
    kept = client.post(reverse("scenarios:trace_upload"), {"file": SimpleUploadedFile("test_walltime.json", mixed)})
    assert kept.status_code == 201, kept.content
    stored = kept.json()["trace"]
    assert stored["jobs"] == 22 and TraceFile.objects.get(stored_name=stored["stored_name"]).metadata["skipped"] == 22
    spec = {"platform": {"clusters": [{"name": "c", "processors": 16}]},
            "workload": {"streams": [{"kind": "trace", "name": "b", "target": "c", "path": stored["stored_name"],
                                      "skip_untimed": True}]}}
    assert len(simengine.run(validate_spec(spec, alice)).jobs["submit"]) == 22


def test_a_replay_of_a_trace_with_users_offers_its_per_user_table(alice, django_user_model, settings, tmp_path):
    """Per-user metrics (docs/output.md) on the run page and users.csv, for whoever may view the
    run; a run whose jobs carry no users has neither."""
    from django.test import Client
    from django.urls import reverse

    from gridweb.runs.execution import execute_run
    from gridweb.runs.models import Status
    from gridweb.runs.services import create_run

    settings.GRIDWEB_TRACE_DIR = tmp_path / "traces"
    lines = swf_text(60, max_procs=16).splitlines()
    for k in range(2, len(lines)):  # users 1, 2, 3 in turn (SWF field 12)
        fields = lines[k].split()
        fields[11] = str(1 + k % 3)
        lines[k] = " ".join(fields)
    trace = store_trace(alice, upload("users.swf", "\n".join(lines) + "\n"))
    spec = {"name": "users", "platform": {"clusters": [{"name": "c", "processors": 16,
                                                        "scheduler": {"name": "easy"}}]},
            "workload": {"streams": [{"kind": "trace", "name": "t", "target": "c", "path": trace.stored_name}]}}
    run = done_run(alice, spec)
    owner = Client()
    owner.force_login(alice)
    page = owner.get(reverse("runs:run", args=[run.pk])).content.decode()
    url = reverse("runs:export", args=[run.pk, "users.csv"])
    assert "Jain&#x27;s index" in page and url in page
    body = owner.get(url)
    assert body.status_code == 200
    rows = downloaded(body).decode().splitlines()
    assert rows[0] == "user,jobs,mean_wait,mean_bounded_slowdown" and [r.split(",")[0] for r in rows[1:]] == \
        ["1", "2", "3"]
    assert sum(int(r.split(",")[1]) for r in rows[1:]) == run.summary["metrics"]["jobs_measured"]["mean"]
    outsider = Client()
    outsider.force_login(django_user_model.objects.create_user("eve", password="pw-eve-123"))
    assert outsider.get(url).status_code == 404 and Client().get(url).status_code == 404
    # schedule.swf keeps each job's user (SWF field 12; it was written -1)
    swf = downloaded(owner.get(reverse("runs:export", args=[run.pk, "schedule.swf"]))).decode()
    users = {int(f[0]): int(f[11]) for f in (line.split() for line in swf.splitlines()) if f and f[0] != ";"}
    given = {int(f[0]): int(f[11]) for f in (line.split() for line in lines[2:])}
    assert users == given and set(users.values()) == {1, 2, 3}

    synthetic = create_run(alice, {**spec, "workload": {"streams": [{
        "kind": "synthetic", "name": "s", "target": "c", "count": 50, "arrival": {"target_load": 0.5},
        "size": {"kind": "constant", "value": 1}, "runtime": {"kind": "exponential", "mean": 60}}]}},
        dispatch_now=False)
    assert execute_run(synthetic.pk) == Status.DONE
    none = reverse("runs:export", args=[synthetic.pk, "users.csv"])
    assert none not in owner.get(reverse("runs:run", args=[synthetic.pk])).content.decode()
    assert owner.get(none).status_code == 409


def test_a_batsim_run_on_the_site_keeps_the_workloads_names_and_batsims_walltime_kills(alice, settings, tmp_path):
    """Stored, run and exported: the jobs table shows each job's workload id and profile, and
    batsim_jobs.csv names them as Batsim does, with the jobs killed at their walltime."""
    import csv
    import io
    import json as json_module

    from django.test import Client
    from django.urls import reverse


    settings.GRIDWEB_TRACE_DIR = tmp_path / "traces"
    path = ROOT / "tests" / "data" / "batsim-v5" / "test_compo_sequence_delay.json"
    doc = json_module.loads(path.read_text())
    trace = store_trace(alice, upload("compo.json", path.read_bytes()))
    spec = {"name": "compo", "platform": {"clusters": [{"name": "c", "processors": doc["nb_res"]}]},
            "workload": {"streams": [{"kind": "trace", "name": "w0", "target": "c", "path": trace.stored_name}]}}
    run = done_run(alice, spec)
    owner = Client()
    owner.force_login(alice)
    table = owner.get(reverse("runs:jobs", args=[run.pk]), {"limit": 100}).json()
    column = {name: [row[k] for row in table["rows"]] for k, name in enumerate(table["columns"])}
    by_id = {j["id"]: j["profile"] for j in doc["jobs"]}
    assert sorted(column["batsim_id"]) == sorted(by_id)
    assert all(by_id[i] == p for i, p in zip(column["batsim_id"], column["profile"]))
    body = owner.get(reverse("runs:export", args=[run.pk, "batsim_jobs.csv"]))
    rows = list(csv.DictReader(io.StringIO(downloaded(body).decode())))
    assert {r["job_id"]: r["profile"] for r in rows} == by_id
    reached = [r["job_id"] for r in rows if r["final_state"] == "COMPLETED_WALLTIME_REACHED"]
    assert reached and all(not i.endswith("-ok") for i in reached)  # (the workload's "-ok" jobs fit their walltime)


def test_compare_says_when_runs_measured_different_jobs(alice, settings, tmp_path):
    """A trace replayed on 32 and on 64 processors: the smaller cluster rejects the larger jobs, so the
    two mean waits average different jobs; the compare page says so, with each run's count."""
    import re

    from django.urls import reverse

    from tests.web.conftest import client_for

    settings.GRIDWEB_TRACE_DIR = tmp_path / "traces"
    trace = store_trace(alice, upload("mixed.swf", swf_text(80, max_procs=64)))
    runs = []
    for processors in (32, 64, 64):
        spec = {"name": f"on {processors}", "platform": {"clusters": [{"name": "c", "processors": processors}]},
                "workload": {"streams": [{"kind": "trace", "name": "t", "target": "c", "path": trace.stored_name}]}}
        runs.append(done_run(alice, spec))
    small, big, again = runs
    rejected = small.summary["job_counts"]["rejected"]
    assert rejected > 0 and big.summary["job_counts"]["rejected"] == 0
    page = downloaded(client_for(alice).get(reverse("runs:compare") + f"?runs={small.pk},{big.pk}")).decode()
    notice = re.search(r'<p class="notice" id="compare-different-jobs">(.*?)</p>', page, re.S)
    assert notice, "the page does not say the means average different jobs"
    measured = [int(r.summary["metrics"]["jobs_measured"]["mean"]) for r in (small, big)]
    assert f"#{small.pk}: {measured[0]:,} ({rejected:,} jobs rejected)" in notice.group(1)
    assert f"#{big.pk}: {measured[1]:,}" in notice.group(1) and measured[0] < measured[1]
    same = downloaded(client_for(alice).get(reverse("runs:compare") + f"?runs={big.pk},{again.pk}")).decode()
    assert 'id="compare-different-jobs"' not in same
