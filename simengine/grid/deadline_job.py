"""A co-allocated job with a start deadline as a placement policy sees it (Ballier's Repeated
Placement Policy, MODELS.md §3; docs/policies/deadline-placement.md).

Any :class:`~simengine.policy.PlacementPolicy` places these jobs: at each placement attempt the
engine calls ``policy.place(job, idle)`` with a :class:`DeadlineJob` -- a
:class:`~simengine.policy.GridJob` that also says when the job must start, when the attempt is
and how many came before -- and :func:`placed` checks the answer.
"""
from __future__ import annotations

import numpy as np

from simengine.policy import GridJob, PolicyError, policy_raised

__all__ = ["DeadlineJob", "placed"]


class DeadlineJob(GridJob):
    """A global co-allocated job at one placement attempt: ``sizes`` (its components, all of one
    size), ``submit``; and ``id`` (its index among the global jobs, in submit order: the same job
    at every attempt), ``deadline`` (D, the absolute time all components must start), ``now``
    (this attempt's time), ``tries`` (attempts made before this one) and ``final`` (True at the
    attempt at D: under GP a job not placed then gets room by killing local jobs, under LP it
    fails)."""

    __slots__ = ("id", "deadline", "now", "tries", "final")

    def __init__(self, id: int, sizes: tuple[int, ...], submit: float, deadline: float, now: float, tries: int):
        super().__init__(sizes, submit)
        self.id, self.deadline, self.now, self.tries = id, deadline, now, tries
        self.final = now >= deadline

    def __repr__(self) -> str:
        return (f"DeadlineJob(id={self.id}, sizes={self.sizes}, submit={self.submit}, deadline={self.deadline}, "
                f"now={self.now}, tries={self.tries})")


def placed(policy, job: DeadlineJob, idle: np.ndarray) -> list[int] | None:
    """The cluster of each component of ``job`` that ``policy`` answers on ``idle`` processors
    per cluster, or None (it does not fit now); a wrong answer or an exception of the policy
    becomes a PolicyError naming the policy, the job and the moment."""
    try:
        got = policy.place(job, idle.copy())
    except Exception as exc:  # noqa: BLE001 - the researcher's code: any failure
        raise policy_raised(policy.name, f"place() for {_moment(job)}", exc) from exc
    if got is None:
        return None
    got = list(got)
    if len(got) != len(job.sizes):
        raise PolicyError(f"{policy.name}: placed {len(got)} components of {_moment(job)}, which has "
                          f"{len(job.sizes)}")
    left = idle.tolist()
    C = len(left)
    for c, s in zip(got, job.sizes):
        if not (isinstance(c, (int, np.integer)) and not isinstance(c, bool) and 0 <= c < C):
            raise PolicyError(f"{policy.name}: a component of {_moment(job)} was placed on {c!r}, not a cluster "
                              f"index 0..{C - 1} (co-allocated jobs have no file sites)")
        if left[c] < s:
            raise PolicyError(f"{policy.name}: the components of {_moment(job)} were placed on cluster {c} beyond "
                              f"its {int(idle[c])} idle processors")
        left[c] -= s
    return [int(c) for c in got]


def _moment(job: DeadlineJob) -> str:
    """The job and the attempt, for an error message."""
    return (f"global job {job.id} ({len(job.sizes)} x {job.sizes[0]} processors, submitted at t={job.submit:g}, "
            f"deadline {job.deadline:g}) at t={job.now:g}")
