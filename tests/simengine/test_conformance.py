"""The pyss conformance cases (MODELS.md §2): every expected finish time reproduced."""
from __future__ import annotations

import numpy as np
import pytest

import simengine.schedulers  # noqa: F401  (registration)
from simengine.conformance import PROCESSORS, read_case
from simengine.registry import LOCAL_SCHEDULERS
from tests.conftest import CONFORMANCE

PYSS = CONFORMANCE / "pyss"
CASES = {
    "fcfs": ["fcfs_input.*", "basic_input.*", "extreme_input.0", "extreme_input.1"],
    "easy": ["bf_input.*", "easy_bf_input.*", "basic_input.*", "extreme_input.*"],
    "conservative": ["cons_bf_input.*"],
}
PARAMS = [(sched, path) for sched, patterns in CASES.items()
          for pattern in patterns for path in sorted(PYSS.glob(pattern))]


def test_every_case_file_is_found():
    # 8 fcfs + 29 basic + 2 extreme; 9 bf + 4 easy_bf + 29 basic + 3 extreme; 2 cons_bf
    assert [sum(1 for s, _ in PARAMS if s == k) for k in CASES] == [39, 45, 2]


@pytest.mark.parametrize("scheduler,path", PARAMS, ids=[f"{s}-{p.name}" for s, p in PARAMS])
def test_finish_times(scheduler, path):
    case = read_case(path)
    entry = LOCAL_SCHEDULERS.get(scheduler)
    result = entry.implementation(case.submit, case.runtime, case.estimate, case.processors,
                                  PROCESSORS, entry.params())
    finish = case.runtime + result.start
    assert not np.isnan(result.start).any()
    np.testing.assert_array_equal(np.floor(finish).astype(np.int64), case.expected_finish)
