"""The standard job metrics (results.JOB_METRICS) are computed in one function,
``simengine.results.job_metrics``, for every model: with it wrapped, every example's Result
carries the wrapper's mark, and the values agree with the Result's own measured job rows."""
from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

import simengine
import simengine.results as results
from simengine.models import model_of
from tests.conftest import ROOT

#: every example with one replication (its metrics are that replication's), and the LWR grid's
#: several-replication model
CASES = [(p.name, 1) for p in sorted((ROOT / "examples").glob("*.yaml"))] + [("mmc-erlang.json", 1),
                                                                            ("zikos-random.yaml", 2)]


def scenario(name: str, replications: int) -> dict:
    data = yaml.safe_load((ROOT / "examples" / name).read_text())
    data.setdefault("run", {})["replications"] = replications
    if name == "zikos-random.yaml":
        data["run"].update(stop={"completions": 20000}, warmup={"completions": 1000})
    return data


def test_the_cases_cover_every_model():
    from simengine.models import FAMILIES

    models = {model_of(simengine.load_scenario(scenario(*case), base_dir=ROOT / "examples")).name for case in CASES}
    assert models == {f.name for f in FAMILIES}
    # each family's line names its model, and asks the model's own predicate
    assert all(f.model().name == f.name and f.model().handles is f.handles for f in FAMILIES)


@pytest.mark.parametrize("name,replications", CASES)
def test_every_models_job_metrics_come_from_the_one_function(monkeypatch, name, replications):
    original = results.job_metrics
    calls = []

    def marked(*args):
        calls.append(len(args[0]))
        return {**original(*args), "marked": 1.0}

    monkeypatch.setattr(results, "job_metrics", marked)
    result = simengine.run(scenario(name, replications), base_dir=ROOT / "examples", workers=1)
    assert calls and result.metrics["marked"].mean == 1.0
    if replications > 1:
        return
    jobs = result.jobs
    measured = jobs["measured"]
    assert int(measured.sum()) == calls[-1]  # the rows it was given are the Result's measured ones
    for metric, column, reduce in (("mean_wait", "wait", np.mean), ("mean_response", "response", np.mean),
                                   ("max_response", "response", np.max)):
        got = result.metrics[metric].mean
        want = float(reduce(jobs[column][measured])) if measured.any() else math.nan
        assert got == pytest.approx(want, rel=1e-12, nan_ok=True), metric


@pytest.mark.parametrize("name,replications", CASES[:-1])
def test_every_models_gantt_is_stored_in_one_order_and_one_set_of_types(name, replications):
    from simengine.gantt import SEGMENT_DTYPES

    seg = simengine.run(scenario(name, replications), base_dir=ROOT / "examples").segments
    assert {k: v.dtype for k, v in seg.items()} == {k: np.dtype(t) for k, t in SEGMENT_DTYPES.items()}
    order = np.lexsort((seg["first_processor"], seg["cluster"], seg["t0"]))
    assert (order == np.arange(len(order))).all() or (
        np.array_equal(seg["t0"][order], seg["t0"]) and np.array_equal(seg["cluster"][order], seg["cluster"])
        and np.array_equal(seg["first_processor"][order], seg["first_processor"]))
