"""Cao's workflow grid jobs, made from eligible jobs of a Lublin-Feitelson workload.

Cao thesis §4.11.2 and Figure 21; MODELS.md §6. A job is *eligible* when its runtime is in
(6000, 60000) s and it needs more than 10 processors. A chosen eligible job A (n processors,
runtime r, submitted at s) becomes a workflow B of five tasks submitted at s::

    task 1 --> tasks 2, 3, 4 --> task 5

Decision (MODELS.md §6): tasks 1 and 5 use all n processors for r/3; tasks 2-4 use ceil(n/3)
for r/3 each, so B carries A's work (exactly when 3 divides n). Each of the six edges has a
communication time uniform in [20, 600] s.

Which jobs are chosen: a random subset of exactly round(fraction x E) of the E eligible jobs,
the first ones of one random permutation drawn from ``rng``. With the same ``rng`` state a
larger fraction keeps every workflow of a smaller one (with the same communication times), so
Cao's 0-100 % sweep compares nested sets (common random numbers). Drawing every eligible job
with probability ``fraction`` has the same expectation; the exact count makes the percentage
of task reservations a function of the fraction alone.

Cao's "percentage of task reservations" (thesis §5.2, Figure 22) is the task reservations
divided by the medium and long jobs including the task reservations
(:func:`reservation_share`). docs/workloads-lublin.md compares it with his 0/7/13/18/22/26 %.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simengine.lublin import SHORT_LIMIT
from simengine.workload import JobTable

__all__ = [
    "ELIGIBLE_RUNTIME",
    "ELIGIBLE_MIN_PROCESSORS",
    "TASKS",
    "EDGES",
    "COMM_RANGE",
    "Workflows",
    "is_eligible",
    "split_workflows",
    "medium_long_count",
    "reservation_share",
]

#: Open interval of eligible runtimes, seconds (thesis §4.11.2: "larger than 6000 and smaller than 60000").
ELIGIBLE_RUNTIME = (6000.0, 60000.0)
#: Eligible jobs need more than this many processors.
ELIGIBLE_MIN_PROCESSORS = 10
#: Tasks per workflow and the DAG's edges as (predecessor, successor) task indices 0..4
#: (Cao's tasks 1..5).
TASKS = 5
EDGES = ((0, 1), (0, 2), (0, 3), (1, 4), (2, 4), (3, 4))
#: Communication time per edge, uniform on this range (seconds).
COMM_RANGE = (20.0, 600.0)


@dataclass
class Workflows:
    """Workflow grid jobs split from a job table, and the jobs left local.

    Workflows are in submit order (ties: original table order); workflow ``w``'s tasks are
    rows ``5 w .. 5 w + 4`` of the task arrays, task index 0..4 = Cao's tasks 1..5; its edges
    are rows ``6 w .. 6 w + 5`` of the edge arrays, in :data:`EDGES` order.

    Attributes
    ----------
    job_id, submit, runtime, processors : ndarray, shape (W,)
        The original job of each workflow (id, submit = the workflow's submit, r, n).
    task_workflow, task_index : ndarray of int64, shape (5W,)
        Workflow (0..W-1) and task index (0..4) of each task.
    task_processors : ndarray of int64, shape (5W,)
        n for tasks 0 and 4, ceil(n/3) for tasks 1-3.
    task_runtime, task_estimate : ndarray of float64, shape (5W,)
        r / 3 and the original estimate / 3.
    edge_src, edge_dst : ndarray of int64, shape (6W,)
        Task rows (global, 5 w + index) of each edge's predecessor and successor.
    edge_comm : ndarray of float64, shape (6W,)
        Communication time of each edge, uniform [20, 600] s.
    local : JobTable
        The jobs not split, in their original order with their original ``job_id``.
    eligible : int
        E, the eligible jobs of the input table.
    """

    job_id: np.ndarray
    submit: np.ndarray
    runtime: np.ndarray
    processors: np.ndarray
    task_workflow: np.ndarray
    task_index: np.ndarray
    task_processors: np.ndarray
    task_runtime: np.ndarray
    task_estimate: np.ndarray
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_comm: np.ndarray
    local: JobTable
    eligible: int

    def __len__(self) -> int:
        return len(self.job_id)

    @property
    def n_tasks(self) -> int:
        return len(self.task_index)

    def predecessors(self, task: int) -> list[tuple[int, float]]:
        """(task row, communication time) of each predecessor of task row ``task``."""
        hit = np.flatnonzero(self.edge_dst == task)
        return [(int(self.edge_src[i]), float(self.edge_comm[i])) for i in hit]

    def successors(self, task: int) -> list[tuple[int, float]]:
        """(task row, communication time) of each successor of task row ``task``."""
        hit = np.flatnonzero(self.edge_src == task)
        return [(int(self.edge_dst[i]), float(self.edge_comm[i])) for i in hit]


def is_eligible(jobs: JobTable) -> np.ndarray:
    """Boolean array: runtime in (6000, 60000) s and more than 10 processors (Cao §4.11.2)."""
    rt = np.asarray(jobs.runtime, dtype=np.float64)
    lo, hi = ELIGIBLE_RUNTIME
    return (rt > lo) & (rt < hi) & (np.asarray(jobs.processors) > ELIGIBLE_MIN_PROCESSORS)


def split_workflows(jobs: JobTable, fraction: float, rng: np.random.Generator) -> Workflows:
    """Turn ``fraction`` of the eligible jobs of ``jobs`` into 5-task workflows.

    Parameters
    ----------
    jobs : JobTable
        The workload (e.g. :func:`simengine.lublin.cao_workload`).
    fraction : float
        In [0, 1]: exactly round(fraction x E) of the E eligible jobs are split (halves round up).
    rng : numpy.random.Generator
        Draws one permutation of the eligible jobs (the first ones are split), then the
        communication times of the split jobs in permutation order: the same state gives
        nested selections for growing fractions.

    Returns
    -------
    Workflows
    """
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must be in [0, 1] (got {fraction})")
    candidates = np.flatnonzero(is_eligible(jobs))
    e = len(candidates)
    k = int(math.floor(fraction * e + 0.5))
    order = rng.permutation(e)[:k]
    comm = rng.uniform(COMM_RANGE[0], COMM_RANGE[1], size=(k, len(EDGES)))
    chosen = candidates[order]
    # workflows in submit order, ties in table order (the table is submit-sorted)
    by_row = np.argsort(chosen, kind="stable")
    chosen, comm = chosen[by_row], comm[by_row]
    keep = np.ones(len(jobs), dtype=bool)
    keep[chosen] = False

    n = np.asarray(jobs.processors, dtype=np.int64)[chosen]
    r = np.asarray(jobs.runtime, dtype=np.float64)[chosen]
    est = np.asarray(jobs.estimate, dtype=np.float64)[chosen]
    third = -(-n // 3)  # ceil(n / 3)
    task_processors = np.stack([n, third, third, third, n], axis=1).reshape(-1)
    task_runtime = np.repeat(r / 3.0, TASKS)
    task_estimate = np.repeat(est / 3.0, TASKS)
    base = np.arange(k, dtype=np.int64)[:, None] * TASKS
    src = np.array([a for a, _ in EDGES], dtype=np.int64)
    dst = np.array([b for _, b in EDGES], dtype=np.int64)
    return Workflows(
        job_id=np.asarray(jobs.job_id)[chosen],
        submit=np.asarray(jobs.submit, dtype=np.float64)[chosen],
        runtime=r,
        processors=n,
        task_workflow=np.repeat(np.arange(k, dtype=np.int64), TASKS),
        task_index=np.tile(np.arange(TASKS, dtype=np.int64), k),
        task_processors=task_processors,
        task_runtime=task_runtime,
        task_estimate=task_estimate,
        edge_src=(base + src).reshape(-1),
        edge_dst=(base + dst).reshape(-1),
        edge_comm=comm.reshape(-1),
        local=jobs.take(keep),
        eligible=e,
    )


def medium_long_count(jobs: JobTable | list[JobTable]) -> int:
    """Jobs of Cao's medium and long classes (runtime >= 600 s) in one or several tables."""
    tables = jobs if isinstance(jobs, (list, tuple)) else [jobs]
    return int(sum(int((np.asarray(t.runtime) >= SHORT_LIMIT).sum()) for t in tables))


def reservation_share(workflows: Workflows, local_jobs: JobTable | list[JobTable] | None = None) -> float:
    """Cao's percentage of task reservations, as a fraction: T / (M + T).

    T = tasks of ``workflows`` (each task is one reservation; every task runs r/3 > 2000 s, so
    all are medium or long); M = medium and long jobs (runtime >= 600 s) of ``local_jobs``,
    by default ``workflows.local`` (the jobs left after the split).

    Cao (§5.2): "the total number of task reservations divided by the total number of medium
    and long jobs including the task reservations". Which jobs count as the local ones is the
    caller's: pass every cluster's local table for a multi-cluster setup (see
    docs/workloads-lublin.md for the readings and their numbers). 0.0 without tasks.
    """
    t = workflows.n_tasks
    m = medium_long_count(workflows.local if local_jobs is None else local_jobs)
    return t / (m + t) if t else 0.0
