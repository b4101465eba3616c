"""Batsim workloads in (simengine.traces.batsim): jobs of delay profiles replay like an SWF trace;
what cannot be read is refused with the job and field named. With the _jobs.csv export
(tests/simengine/test_batsim.py) a Batsim user goes both ways."""
from __future__ import annotations

import gzip
import csv
import json

import numpy as np
import pytest

import simengine
from simengine.errors import TraceError
from simengine.traces import ReadCaps, read_trace
from tests.conftest import ROOT

WORKLOAD = {"nb_res": 8,
            "jobs": [{"id": "w0!3", "subtime": 10, "walltime": 100, "res": 4, "profile": "d50"},
                     {"id": "w0!1", "subtime": 0, "walltime": -1, "res": 8, "profile": "d20"},
                     {"id": "w0!2", "subtime": 5, "walltime": 30, "res": 2, "profile": "d20"}],
            "profiles": {"d50": {"type": "delay", "delay": 50}, "d20": {"type": "delay", "delay": 20}}}


def write(tmp_path, doc, name="w.json", zipped=False):
    path = tmp_path / (name + (".gz" if zipped else ""))
    data = json.dumps(doc).encode()
    path.write_bytes(gzip.compress(data) if zipped else data)
    return path


@pytest.mark.parametrize("zipped", [False, True])
def test_a_batsim_workload_reads_as_a_trace(tmp_path, zipped):
    trace = read_trace(write(tmp_path, WORKLOAD, zipped=zipped))
    jobs = trace.jobs
    assert trace.format == "batsim" and trace.max_procs == 8
    assert jobs.job_id.tolist() == [1, 2, 3] and jobs.submit.tolist() == [0, 5, 10]
    assert jobs.runtime.tolist() == [20, 20, 50] and jobs.processors.tolist() == [8, 2, 4]
    assert np.isnan(jobs.estimate[0]) and jobs.estimate[1:].tolist() == [30, 100]


def test_a_batsim_workload_replays_in_a_scenario(tmp_path):
    path = write(tmp_path, WORKLOAD)
    result = simengine.run({"platform": {"clusters": [{"name": "c", "processors": 8, "scheduler": {"name": "fcfs"}}]},
                            "workload": {"streams": [{"kind": "trace", "name": "b", "target": "c", "path": str(path)}]}})
    # FCFS: job 1 (8 procs) 0-20, then job 2 at 20-40 and job 3 at 20-70 side by side
    assert result.jobs["start"].tolist() == [0, 20, 20] and result.jobs["end"].tolist() == [20, 40, 70]


@pytest.mark.parametrize("change,field,reason", [
    (lambda d: d["jobs"][1].update(res=0), "jobs[1].res", "whole number of processors"),
    (lambda d: d["jobs"][2].update(subtime="soon"), "jobs[2].subtime", "finite number"),
    (lambda d: d["jobs"][0].update(profile="missing"), "jobs[0].profile", "names no profile"),
    (lambda d: d["profiles"].update(d50={"type": "parallel_homogeneous", "cpu": 1e9, "com": 0}), "jobs[0].profile",
     "only delay profiles (DelayProfile, delay) and sequential compositions of them"),
    # sequential compositions: what makes one give no run time is named in it
    (lambda d: d["profiles"].update(d50={"type": "composed", "seq": ["d20", "nowhere"]}), "profiles.d50.seq[1]",
     "profile 'nowhere' gives no run time"),
    (lambda d: d["profiles"].update(d50={"type": "SequentialCompositionProfile", "seq": ["d50"]}), "profiles.d50.seq",
     "contains itself"),
    (lambda d: d["profiles"].update(d50={"type": "composed", "repeat": 0, "seq": ["d20"]}), "profiles.d50.repeat",
     "whole number >= 1"),
    (lambda d: d["profiles"].update(d50={"type": "composed", "seq": "d20"}), "profiles.d50.seq", "list of profile names"),
    (lambda d: d["profiles"].update(d50={"type": "composed", "seq": ["p"]}, p={"type": "parallel", "cpu": [1]}),
     "profiles.d50.seq[0]", "profile 'p' gives no run time"),
    (lambda d: d["profiles"]["d20"].update(delay=-1), "profiles.d20.delay", "number >= 0"),
    # processor counts past 2**31 - 1 (simengine.traces.MAX_PROCESSORS) would overflow a database integer
    (lambda d: d["jobs"][2].update(res=10**18), "jobs[2].res", "from 1 to 2,147,483,647; got 1e+18"),
    (lambda d: d["jobs"][0].update(res=10**400), "jobs[0].res", "finite number"),
    (lambda d: d.update(nb_res=10**18), "nb_res", "more than the 2,147,483,647"),
])
def test_what_cannot_be_read_is_named(tmp_path, change, field, reason):
    doc = json.loads(json.dumps(WORKLOAD))
    change(doc)
    with pytest.raises(TraceError) as e:
        read_trace(write(tmp_path, doc))
    assert e.value.field == field and reason in e.value.reason


def test_an_untrusted_workload_is_read_within_bounds(tmp_path):
    path = write(tmp_path, WORKLOAD)
    with pytest.raises(TraceError, match="more than 100 bytes"):
        read_trace(path, caps=ReadCaps(bytes=100))
    with pytest.raises(TraceError, match="more than 2 jobs"):
        read_trace(path, caps=ReadCaps(jobs=2))
    (tmp_path / "bad.json").write_text("[1, 2")
    with pytest.raises(TraceError, match="not a JSON document"):
        read_trace(tmp_path / "bad.json")


def test_a_workload_is_read_a_job_at_a_time_within_the_caps(tmp_path):
    """The reader holds about one value at a time (caps.element_bytes bounds it), whatever the layout."""
    jobs = [{"id": f"w0!{i}", "subtime": i, "res": 1 + i % 8, "profile": f"d{i % 3}"} for i in range(20_000)]
    profiles = {f"d{k}": {"type": "delay", "delay": 10 * (k + 1)} for k in range(3)}
    caps = ReadCaps(element_bytes=200, jobs=20_000)
    for doc, indent in (({"nb_res": 8, "jobs": jobs, "profiles": profiles}, None),
                        ({"profiles": profiles, "jobs": jobs, "nb_res": 8}, 2)):
        path = tmp_path / "w.json"
        path.write_text(json.dumps(doc, indent=indent))
        trace = read_trace(path, caps=caps)
        assert trace.jobs.job_id.tolist() == list(range(20_000)) and trace.max_procs == 8
        assert trace.jobs.runtime.tolist() == [10 * (1 + i % 3) for i in range(20_000)]
        assert trace.jobs.processors.tolist() == [1 + i % 8 for i in range(20_000)]
    long = dict(WORKLOAD, jobs=WORKLOAD["jobs"] + [{**WORKLOAD["jobs"][0], "note": "x" * 300}])
    with pytest.raises(TraceError) as e:
        read_trace(write(tmp_path, long), caps=caps)
    assert e.value.field == "jobs[3]" and "longer than 200 characters" in e.value.reason
    with pytest.raises(TraceError, match="more than 1 profiles"):  # (a workload needs no more profiles than jobs)
        read_trace(write(tmp_path, {"profiles": WORKLOAD["profiles"], "jobs": []}), caps=ReadCaps(jobs=1))


# ---- Batsim's current release (v5): its own example workloads -----------------------------------------

BATSIM_V5 = ROOT / "tests" / "data" / "batsim-v5"  # (copied from Batsim's repository: PROVENANCE.txt there)
#: the delay-only and delay-composition workloads of Batsim's current release among the samples
#: every delay-only or delay-composition workload of Batsim's release (tests/data/batsim-v5/PROVENANCE.txt)
DELAY_WORKLOADS = ("test_one_delay_job.json", "test_delays.json", "test_case_study1.json",
                   "test_compo_sequence_delay.json", "test_batsim_paper_workload_seed1.json",
                   "test_energy_minimal_load0.json", "test_extra_data_desired_allocation.json",
                   "test_extra_data_desired_allocation_object.json", "test_same_submit_time.json",
                   *(f"example_workload_hpc_seed{i}_jobs250.json" for i in range(1, 6)))


def test_v4_and_v5_profile_names_read_alike(tmp_path):
    v4 = {"nb_res": 4, "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "c"}],
          "profiles": {"d": {"type": "delay", "delay": 3}, "e": {"type": "delay", "delay": 4},
                       "c": {"type": "composed", "repeat": 2, "seq": ["d", "e", "d"]}}}
    v5 = json.loads(json.dumps(v4).replace('"delay", "delay"', '"DelayProfile", "delay"')
                    .replace('"composed"', '"SequentialCompositionProfile"'))
    assert "DelayProfile" in json.dumps(v5) and "SequentialCompositionProfile" in json.dumps(v5)
    for doc in (v4, v5):
        assert read_trace(write(tmp_path, doc)).jobs.runtime.tolist() == [20.0]
    # a composition may name profiles that come after it, and the last profile of a name counts
    (tmp_path / "later.json").write_text(
        '{"nb_res": 4, "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "c"}], "profiles": {'
        '"c": {"type": "composed", "seq": ["d"]}, "d": {"type": "delay", "delay": 9}, '
        '"d": {"type": "delay", "delay": 7}}}')
    assert read_trace(tmp_path / "later.json").jobs.runtime.tolist() == [7.0]


@pytest.mark.parametrize("name", DELAY_WORKLOADS)
def test_batsims_delay_workloads_read_with_the_run_times_their_files_give(name):
    doc = json.loads((BATSIM_V5 / name).read_text())
    trace = read_trace(BATSIM_V5 / name)
    assert trace.max_procs == doc["nb_res"] and len(trace.jobs) == len(doc["jobs"])
    profiles = doc["profiles"]

    def expected(p):  # the file's own figure where it gives one, else the delay
        body = profiles[p]
        return body.get("expected_execution_time", body.get("delay"))

    order = sorted(range(len(doc["jobs"])), key=lambda i: doc["jobs"][i]["subtime"])  # (stable: file order)
    assert trace.jobs.runtime.tolist() == [float(expected(doc["jobs"][i]["profile"])) for i in order]


def _fcfs_reference(jobs: list[dict], runtime: dict[str, float], processors: int) -> list[tuple[float, float]]:
    """A straightforward strict FCFS: in submit order (file order on ties), each job starts when it
    has arrived, the job before it has started and enough processors are free; Batsim kills a job
    at its walltime (absent or -1: none)."""
    order = sorted(range(len(jobs)), key=lambda i: jobs[i]["subtime"])
    running: list[tuple[float, int]] = []  # (end, processors)
    free, last_start, out = processors, 0.0, {}
    for i in order:
        job = jobs[i]
        t = max(float(job["subtime"]), last_start)
        while True:
            for end, p in [r for r in running if r[0] <= t]:
                running.remove((end, p))
                free += p
            if free >= job["res"]:
                break
            t = min(end for end, _ in running)
        run = runtime[job["profile"]]
        wall = job.get("walltime", -1)
        if wall is not None and wall > 0:
            run = min(run, float(wall))
        running.append((t + run, job["res"]))
        free -= job["res"]
        last_start, out[i] = t, (t, t + run)
    return [out[i] for i in order]


@pytest.mark.parametrize("name", DELAY_WORKLOADS)
def test_batsims_delay_workloads_replay_as_a_straightforward_fcfs(name):
    doc = json.loads((BATSIM_V5 / name).read_text())
    trace = read_trace(BATSIM_V5 / name)  # (its run times are checked against the file above)
    order = sorted(range(len(doc["jobs"])), key=lambda i: doc["jobs"][i]["subtime"])
    runtime = {doc["jobs"][i]["profile"]: float(trace.jobs.runtime[k]) for k, i in enumerate(order)}
    result = simengine.run({
        "platform": {"clusters": [{"name": "c", "processors": doc["nb_res"], "scheduler": {"name": "fcfs"}}]},
        "workload": {"streams": [{"kind": "trace", "name": "b", "target": "c", "path": str(BATSIM_V5 / name)}]}})
    # (a Batsim workload's jobs are killed at their walltime by default, as Batsim kills them)
    by_id = {int(j): k for k, j in enumerate(result.jobs["job_id"])}
    got = [(float(result.jobs["start"][by_id[int(trace.jobs.job_id[k])]]),
            float(result.jobs["end"][by_id[int(trace.jobs.job_id[k])]])) for k in range(len(order))]
    assert got == _fcfs_reference(doc["jobs"], runtime, doc["nb_res"])
    if name == "test_case_study1.json":  # job 3 (the third in submit order) needs 10 s, has a walltime of 6: killed
        assert got[2][1] - got[2][0] == 6.0


def test_the_composition_workload_passes_batsims_own_check_of_states_and_times(tmp_path):
    # Batsim's test suite runs test_compo_sequence_delay and checks each job of its _jobs.csv against
    # its profile's expected_execution_time (test/helper.py, check_job_duration_from_profile_expected_
    # duration, read): the state is COMPLETED_WALLTIME_REACHED when the walltime is shorter, else
    # COMPLETED_SUCCESSFULLY, and the execution time is the smaller of the two. The same check on ours:
    name = "test_compo_sequence_delay.json"
    doc = json.loads((BATSIM_V5 / name).read_text())
    result = simengine.run({
        "platform": {"clusters": [{"name": "c", "processors": doc["nb_res"]}]},
        "workload": {"streams": [{"kind": "trace", "name": "w0", "target": "c", "path": str(BATSIM_V5 / name)}]}})
    result.write_batsim_jobs(tmp_path / "jobs.csv")
    with open(tmp_path / "jobs.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert sorted(r["job_id"] for r in rows) == sorted(j["id"] for j in doc["jobs"])  # the workload's own ids
    expected = {p: body["expected_execution_time"] for p, body in doc["profiles"].items()
                if "expected_execution_time" in body}
    checked = reached = 0
    for r in rows:
        if r["profile"] not in expected:
            continue
        wall, want = float(r["requested_time"]), float(expected[r["profile"]])
        state = "COMPLETED_WALLTIME_REACHED" if wall != -1 and wall < want else "COMPLETED_SUCCESSFULLY"
        assert (r["final_state"], float(r["execution_time"])) == (state, min(want, wall) if wall != -1 else want), r
        checked += 1
        reached += state == "COMPLETED_WALLTIME_REACHED"
    assert checked == len(rows) and reached > 0


def test_batsims_other_profile_types_are_named_when_a_job_needs_one():
    with pytest.raises(TraceError) as e:
        read_trace(BATSIM_V5 / "test_various_profile_types.json")
    assert e.value.field == "jobs[1].profile" and "'ParallelTaskProfile'" in e.value.reason


def test_jobs_batsim_times_on_its_platform_can_be_skipped_and_counted():
    # test_walltime.json: 22 delay jobs and 22 of a parallel-task type (no run time without a platform model)
    path = BATSIM_V5 / "test_walltime.json"
    doc = json.loads(path.read_text())
    with pytest.raises(TraceError) as e:
        read_trace(path)
    assert e.value.field == "jobs[22].profile"
    trace = read_trace(path, skip_untimed=True)
    timed = [i for i, j in enumerate(doc["jobs"]) if doc["profiles"][j["profile"]]["type"] == "DelayProfile"]
    assert len(trace.jobs) == len(timed) == 22 and trace.skipped == 22
    assert trace.skipped_lines == [i for i in range(len(doc["jobs"])) if i not in timed]
    spec = {"platform": {"clusters": [{"name": "c", "processors": doc["nb_res"], "scheduler": {"name": "fcfs"}}]},
            "workload": {"streams": [{"kind": "trace", "name": "b", "target": "c", "path": str(path),
                                      "skip_untimed": True}]},
            "run": {"enforce_walltime": True}}
    result = simengine.run(spec)
    assert any("b: 22 jobs skipped (their profiles give no run time" in n for n in result.notes)
    # the delay jobs kept replay as the straightforward FCFS of those jobs alone
    kept = [doc["jobs"][i] for i in timed]
    runtime = {j["profile"]: float(doc["profiles"][j["profile"]]["delay"]) for j in kept}
    order = sorted(range(len(result.jobs["start"])), key=lambda k: (result.jobs["submit"][k], result.jobs["job_id"][k]))
    got = [(float(result.jobs["start"][k]), float(result.jobs["end"][k])) for k in order]
    assert got == _fcfs_reference(kept, runtime, doc["nb_res"])
    # SWF and GWF jobs all have a run time: the option is refused there, naming it
    from simengine.errors import ScenarioError
    swf = ROOT / "tests" / "data" / "conformance"
    one = next(iter(sorted(swf.rglob("*.swf"))), None)
    if one is not None:
        spec["workload"]["streams"][0]["path"] = str(one)
        with pytest.raises(ScenarioError) as bad:
            simengine.load_scenario(spec)
        assert any(err.path == "workload.streams.0.skip_untimed" for err in bad.value.errors)

