"""Reader for the pyss conformance cases in tests/data/conformance/pyss (MODELS.md §2).

Each line is ``submit id estimate processors actual ...``; the expected finish time
of the job is encoded in its id. Jobs whose estimate is below their actual run time
are dropped, as the reference simulator does. All cases use 100 processors.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

PROCESSORS = 100


@dataclass
class ConformanceCase:
    name: str
    submit: np.ndarray
    estimate: np.ndarray
    processors: np.ndarray
    runtime: np.ndarray
    expected_finish: np.ndarray


def read_case(path: str | Path) -> ConformanceCase:
    path = Path(path)
    rows = []
    for line in path.read_text().splitlines():
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        submit, job_id, estimate, procs, actual = fields[:5]
        if float(estimate) < float(actual):
            continue
        finish = int(job_id.split(".")[0]) if path.name.startswith("basic_input") else int(float(job_id))
        rows.append((float(submit), float(estimate), int(procs), float(actual), finish))
    rows.sort(key=lambda r: r[0])  # stable: keeps file order among equal submit times
    arr = list(zip(*rows)) if rows else [[]] * 5
    return ConformanceCase(path.name, np.array(arr[0], float), np.array(arr[1], float),
                           np.array(arr[2], np.int64), np.array(arr[3], float), np.array(arr[4], np.int64))
