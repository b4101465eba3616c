"""What every kind of policy shares, in a module of its own so the engine's parts that run
policies (simengine.local.external) need not import simengine.policy, which imports them: the job
as a scheduler sees it and the error a policy's mistake becomes. simengine.policy re-exports both."""
from __future__ import annotations

import math
import traceback
from pathlib import Path

from simengine.errors import SimEngineError

__all__ = ["Job", "PolicyError", "policy_raised"]


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
    stream's; higher first), ``status`` (waiting, running, suspended, done, killed, rejected),
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
