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
