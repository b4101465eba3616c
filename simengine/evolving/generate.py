"""Klein & Pérez's synthetic workload (MODELS.md §7): tests of evolving applications.

Each test: a uniform number of applications in [15, 20]; each application a uniform
number of stages in [1, 10]; each stage a uniform integer duration in [500, 3600] s and
a uniform integer node count in [1, 75] (all bounds inclusive). Test k draws from the
k-th child of ``numpy.random.SeedSequence(seed)``, so the first tests of a short run are
the first tests of the full run, and a run is reproducible bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class WorkloadSpec:
    """The ranges of the generator (inclusive integer bounds)."""

    tests: int = 1000
    applications: tuple[int, int] = (15, 20)
    stages: tuple[int, int] = (1, 10)
    duration: tuple[int, int] = (500, 3600)
    nodes: tuple[int, int] = (1, 75)
    seed: int = 1


@dataclass
class FlatWorkload:
    """Many tests in flat arrays (the layout the compiled scheduler reads).

    Test t has applications ``test_off[t]`` .. ``test_off[t+1]-1``; application a has
    stages ``app_off[a]`` .. ``app_off[a+1]-1`` with durations ``d`` and node counts ``n``.
    """

    test_off: np.ndarray
    app_off: np.ndarray
    d: np.ndarray
    n: np.ndarray

    @property
    def tests(self) -> int:
        return len(self.test_off) - 1

    def application(self, a: int) -> list[tuple[float, int]]:
        lo, hi = self.app_off[a], self.app_off[a + 1]
        return [(float(x), int(y)) for x, y in zip(self.d[lo:hi], self.n[lo:hi])]

    def test(self, t: int) -> list[list[tuple[float, int]]]:
        """Test t as a list of applications, each a list of (duration, nodes) stages."""
        return [self.application(a) for a in range(self.test_off[t], self.test_off[t + 1])]

    def rigid(self) -> FlatWorkload:
        """Every application as one stage of max nodes x total duration (the CBF view)."""
        napps = len(self.app_off) - 1
        owner = np.repeat(np.arange(napps), np.diff(self.app_off))
        total = np.bincount(owner, weights=self.d, minlength=napps)
        most = np.zeros(napps, np.int64)
        np.maximum.at(most, owner, self.n)
        return FlatWorkload(self.test_off.copy(), np.arange(napps + 1, dtype=np.int64), total, most)

    @classmethod
    def from_tests(cls, tests: list[list[list[tuple[float, int]]]]) -> FlatWorkload:
        """From nested lists: tests -> applications -> (duration, nodes) stages."""
        test_off, app_off, d, n = [0], [0], [], []
        for apps in tests:
            for stages in apps:
                for dur, nodes in stages:
                    d.append(float(dur))
                    n.append(int(nodes))
                app_off.append(len(d))
            test_off.append(len(app_off) - 1)
        return cls(np.asarray(test_off, np.int64), np.asarray(app_off, np.int64),
                   np.asarray(d, np.float64), np.asarray(n, np.int64))


def generate(spec: WorkloadSpec = WorkloadSpec()) -> FlatWorkload:
    """``spec.tests`` tests drawn as described in the module docstring."""
    children = np.random.SeedSequence(spec.seed).spawn(spec.tests)
    test_off = [0]
    app_counts: list[np.ndarray] = []
    durations: list[np.ndarray] = []
    nodes: list[np.ndarray] = []
    for child in children:
        rng = np.random.default_rng(child)
        apps = int(rng.integers(spec.applications[0], spec.applications[1], endpoint=True))
        stages = rng.integers(spec.stages[0], spec.stages[1], size=apps, endpoint=True)
        total = int(stages.sum())
        durations.append(rng.integers(spec.duration[0], spec.duration[1], size=total, endpoint=True))
        nodes.append(rng.integers(spec.nodes[0], spec.nodes[1], size=total, endpoint=True))
        app_counts.append(stages)
        test_off.append(test_off[-1] + apps)
    counts = np.concatenate(app_counts)
    app_off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return FlatWorkload(np.asarray(test_off, np.int64), app_off,
                        np.concatenate(durations).astype(np.float64), np.concatenate(nodes).astype(np.int64))
