"""replication_segments: any replication's Gantt, simulated again, for every model family; the
replication 0 it gives is the Result's."""
from __future__ import annotations

import pytest

import simengine
from simengine.scenario import load_scenario
from tests.conftest import ROOT
from tests.simengine.live_stream import as_multiset, result_rows

EXAMPLES = ["single-cluster-easy.yaml", "multicluster-4x32.yaml", "reservations-preemption.yaml",
            "ballier-4x32.yaml", "koala-w30.yaml", "cao-scojo-rars.yaml", "klein-evolving.yaml", "zikos-random.yaml"]


def small(name: str):
    scenario = load_scenario(ROOT / "examples" / name)
    run = scenario.run.model_copy(update={"replications": 2})
    return scenario.model_copy(update={"run": run})


@pytest.mark.parametrize("name", EXAMPLES)
def test_replication_0_is_the_results_and_another_replication_differs(name):
    scenario = small(name)
    result = simengine.run(scenario)
    first = simengine.replication_segments(scenario, 0)
    assert as_multiset(first) == as_multiset(result_rows(result))
    second = simengine.replication_segments(scenario, 1)
    assert len(second["t0"]) > 0 and as_multiset(second) != as_multiset(first)
    assert as_multiset(simengine.replication_segments(scenario, 1)) == as_multiset(second)  # reproducible


def test_a_replication_outside_the_run_is_refused():
    with pytest.raises(ValueError, match="replication: must be within 0..1"):
        simengine.replication_segments(small("single-cluster-easy.yaml"), 2)
