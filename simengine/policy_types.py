"""What every kind of policy shares, in a module of its own so the engine's parts that run
policies (simengine.local.external) need not import simengine.policy, which imports them: the job
as a scheduler sees it, the error a policy's mistake becomes, the free-processor profile a local
scheduler reads and the codes of a reservation's status (simengine.local.core keeps them).
simengine.policy re-exports the job and the error."""
from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
import traceback
from pathlib import Path

from simengine.errors import SimEngineError

__all__ = ["Job", "PolicyError", "policy_raised", "Profile", "AR_PENDING", "AR_ACCEPTED", "AR_ACTIVE", "AR_DONE",
           "AR_REJECTED"]

#: a reservation's status (AdvanceReservation.status; the event core's codes)
AR_PENDING, AR_ACCEPTED, AR_ACTIVE, AR_DONE, AR_REJECTED = range(5)


class PolicyError(SimEngineError, RuntimeError):
    """A policy asked for something the cluster cannot do, or raised an exception of its own (the
    message names the policy and says what and when; the policy's exception is its cause)."""


def policy_raised(name: str, call: str, exc: Exception) -> PolicyError:
    """What a policy's own exception becomes: the policy, the call and where in the policy's
    code it was raised (the web shows a run's error text only, without a traceback)."""
    frames = traceback.extract_tb(exc.__traceback__)
    # the file by its package folder and name: enough to find it, and no server paths on a web page
    where = (f" ({'/'.join(Path(frames[-1].filename).parts[-2:])}, line {frames[-1].lineno}, in {frames[-1].name})"
             if frames else "")
    return PolicyError(f"{name}: {call} raised {type(exc).__name__}: {exc}{where}")


class Job:
    """A job as a scheduler sees it: ``id`` (its index among the cluster's jobs, in submit
    order), ``submit``, ``size`` (processors), ``estimate`` (requested time), ``priority`` (its
    stream's; higher first), ``status`` (waiting, running, suspended, done, killed, rejected, cancelled),
    ``start`` (when its current run started; NaN while it waits), ``plan`` (the time its current
    run is planned to take: the estimate, or what is left of it plus the preemption overhead
    after a suspension) and ``end`` (NaN until it ends)."""

    __slots__ = ("id", "submit", "size", "estimate", "start", "priority", "status", "plan", "end", "key")

    def __init__(self, id: int, submit: float, size: int, estimate: float, priority: int = 0):
        self.id, self.submit, self.size, self.estimate, self.priority = id, submit, size, estimate, priority
        self.start = self.end = math.nan
        self.plan = estimate
        self.status = "waiting"

    @property
    def expected_end(self) -> float:
        """When a running job is expected to end: start + plan."""
        return self.start + self.plan

    def __repr__(self) -> str:
        return f"Job(id={self.id}, submit={self.submit}, size={self.size}, estimate={self.estimate})"


class Profile:
    """Free processors over time, a step function: ``free[i]`` processors on [``times[i]``,
    ``times[i + 1]``), the last step for ever (plain lists: read them freely)."""

    __slots__ = ("times", "free")

    def __init__(self, times: list[float], free: list[int]):
        self.times, self.free = times, free

    def _index(self, t: float) -> int:
        """The step holding t (the first one when t is before it)."""
        return max(bisect_right(self.times, t) - 1, 0)

    def min_free(self, a: float, b: float) -> int:
        """The fewest processors free at any time of [a, b) (at a when b <= a)."""
        times, free = self.times, self.free
        i = self._index(a)
        low = free[i]
        for k in range(i + 1, len(times)):
            if times[k] >= b:
                break
            low = min(low, free[k])
        return low

    def fits(self, start: float, duration: float, size: int) -> bool:
        """Do ``size`` processors stay free over [start, start + duration)? (Asking for no time
        holds nothing: always.)"""
        return duration <= 0 or self.min_free(start, start + duration) >= size

    def earliest(self, after: float, duration: float, size: int) -> float:
        """The earliest start at or after ``after`` with ``size`` processors free for ``duration``
        (inf: never)."""
        times, free = self.times, self.free
        n = len(times)
        k = self._index(after)
        s = after
        while s < math.inf:
            end, j, blocked = s + duration, k, None
            while True:
                seg_end = times[j + 1] if j + 1 < n else math.inf
                if free[j] < size:
                    blocked = seg_end
                    break
                if seg_end >= end or seg_end == math.inf:
                    break
                j += 1
            if blocked is None:
                return s
            s = blocked  # nothing can start before the blocking step ends
            while k + 1 < n and times[k + 1] <= s:
                k += 1
        return math.inf

    def take(self, a: float, b: float, size: int) -> None:
        """Count ``size`` processors as busy over [a, b) (a at or after the profile's start)."""
        if b <= a:
            return
        i, j = self._split(a), self._split(b)
        free = self.free
        for k in range(i, j):
            free[k] -= size

    def _split(self, x: float) -> int:
        times = self.times
        i = bisect_left(times, x)
        if i == len(times) or times[i] != x:
            times.insert(i, x)
            self.free.insert(i, self.free[i - 1])
        return i
