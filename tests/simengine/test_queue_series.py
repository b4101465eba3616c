"""The queue over time (issue 15): jobs waiting and the processors they request, in all and per
cluster, in every model's time series, computed in one place (results.queue_series)."""
from __future__ import annotations

import numpy as np
import pytest
import yaml

import simengine
from simengine.results import queue_series
from tests.conftest import ROOT


def test_queue_series_counts_the_jobs_submitted_and_not_started():
    t = np.array([0.0, 5.0, 10.0, 15.0, 30.0])
    submit = np.array([0.0, 4.0, 9.0, 12.0])
    start = np.array([10.0, np.nan, 9.0, 20.0])  # job 1 never starts; job 2 starts at once
    procs = np.array([2, 3, 5, 7])
    cluster = np.array([0, 1, 0, 1])
    q = queue_series(t, submit, start, procs, cluster, ["a", "b"])
    # at 0: job 0; at 5: jobs 0, 1; at 10: job 1 (job 0 started at 10); at 15: jobs 1, 3; at 30: job 1
    assert q["queue_length"].tolist() == [1, 2, 1, 2, 1]
    assert q["queued_processors"].tolist() == [2, 5, 3, 10, 3]
    assert q["queue_length.a"].tolist() == [1, 1, 0, 0, 0] and q["queued_processors.b"].tolist() == [0, 3, 3, 10, 3]


EXAMPLES = {"single-cluster-easy.yaml": {}, "multicluster-4x32.yaml": {},
            "reservations-preemption.yaml": {}, "koala-w30.yaml": {}, "klein-evolving.yaml": {},
            "cao-scojo-rars.yaml": {}, "ballier-4x32.yaml": {"stop": {"horizon": 30000}, "warmup": {"time": 1000}}}


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_model_reports_its_queue_in_all_and_per_cluster(name):
    data = yaml.safe_load((ROOT / "examples" / name).read_text())
    data["run"] = {**data["run"], "replications": 1, **EXAMPLES[name]}
    result = simengine.run(data)
    s = result.series
    for what in ("queue_length", "queued_processors"):
        per = [s[f"{what}.{c}"] for c in result.cluster_names]
        assert s[what].shape == s["time"].shape and (s[what] >= 0).all()
        np.testing.assert_allclose(np.sum(per, axis=0), s[what])
    assert (s["queued_processors"] >= s["queue_length"]).all()  # every job asks for a processor at least


def test_the_kernel_paths_queue_is_what_its_job_rows_say():
    data = yaml.safe_load((ROOT / "examples" / "multicluster-4x32.yaml").read_text())
    data["run"] = {**data["run"], "replications": 1}
    result = simengine.run(data)
    jobs, s = result.jobs, result.series
    for k in range(0, len(s["time"]), 37):
        at = s["time"][k]
        waiting = (jobs["submit"] <= at) & ~(jobs["start"] <= at)  # (NaN start: still waiting)
        assert s["queue_length"][k] == waiting.sum()
        assert s["queued_processors"][k] == jobs["processors"][waiting].sum()
