"""Batsim workloads in (simengine.traces.batsim): jobs of delay profiles replay like an SWF trace;
what cannot be read is refused with the job and field named. With the _jobs.csv export
(tests/simengine/test_batsim.py) a Batsim user goes both ways."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

import simengine
from simengine.errors import TraceError
from simengine.traces import ReadCaps, read_trace

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
     "only 'delay' profiles give a run time"),
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
