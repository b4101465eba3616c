"""Every model marks the job rows its job metrics average (the ``measured`` column): per
replication, the mean wait and response of those rows are the metrics' own values. The plots
and the jobs table read this column, so what they count is what the metrics count."""
from pathlib import Path

import numpy as np
import pytest

import simengine
from simengine.scenario import load_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: example, run overrides (small enough for a test), whether jobs_measured counts the same rows
CASES = [
    ("single-cluster-easy.yaml", {"replications": 2, "keep_jobs": "all", "stop": {"completions": 3000},
                                  "warmup": {"completions": 300}}, True),
    ("zikos-random.yaml", {"replications": 2, "keep_jobs": "all", "stop": {"completions": 4000},
                           "warmup": {"completions": 500}}, True),
    ("reservations-preemption.yaml", {"replications": 2, "keep_jobs": "all"}, True),
    ("cao-scojo-rars.yaml", {"replications": 2, "keep_jobs": "all"}, True),
    ("klein-evolving.yaml", {"replications": 2, "keep_jobs": "all"}, True),
    # grid layer: the job metrics are the completed local jobs'; jobs_measured also counts global ones
    ("ballier-4x32.yaml", {"replications": 2, "keep_jobs": "all", "stop": {"horizon": 30000}}, False),
    # KOALA: one row per completed KOALA job (its first component), none of the background rows
    ("koala-w30.yaml", {"replications": 2, "keep_jobs": "all"}, True),
]


@pytest.mark.parametrize("path, run, counts_alike", CASES, ids=[c[0] for c in CASES])
def test_measured_rows_are_what_the_metrics_average(path, run, counts_alike):
    s = load_scenario(EXAMPLES / path)
    doc = s.model_dump(mode="json")
    doc["run"].update(run)
    res = simengine.run(load_scenario(doc, base_dir=EXAMPLES), workers=1)
    j = res.jobs
    assert j["measured"].dtype == bool
    for r in range(res.replications):
        rows = j["measured"] & (j["replication"] == r)
        assert rows.sum() > 0
        assert np.mean(j["wait"][rows]) == pytest.approx(res.metrics["mean_wait"].values[r], rel=1e-12)
        assert np.mean(j["response"][rows]) == pytest.approx(res.metrics["mean_response"].values[r], rel=1e-12)
        if counts_alike:
            assert rows.sum() == res.metrics["jobs_measured"].values[r]
        assert not j["warmup"][rows].any()
