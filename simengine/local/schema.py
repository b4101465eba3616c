"""The event-driven local model's part of the scenario schema (docs/reservations.md): advance
reservations, and the check that reservations, stream priorities and preemption go to clusters
whose scheduler this model simulates (capability ``event_driven``), registered with
simengine.schema_base."""
from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from simengine.local.failures import problems as failure_problems
from simengine.registry import LOCAL_SCHEDULERS
from simengine.schema_base import GRID_TARGET, Problems, StrictModel, known_list, problems, scenario_check

__all__ = ["RelaxedFrame", "ReservationJob", "Reservation", "reservation_problems", "victim_problems", "needs_local",
           "PYTHON_TWINS"]

#: the plain-Python twin (simengine.local.twins: the same schedules, through the event API) of each
#: compiled pass that has one. The engine runs the twin where a decision the pass makes is written
#: in Python: a cluster's victim choice (simengine.local.cluster). A new twin is one entry here.
PYTHON_TWINS = {"fcfs": "events-fcfs", "easy": "events-easy-arrays", "conservative": "events-conservative"}


class RelaxedFrame(StrictModel):
    """The frame [earliest_start, latest_finish] a relaxed reservation may move in."""

    earliest_start: float = Field(ge=0, description="EST: the window never starts before this (s)")
    latest_finish: float = Field(gt=0, description="LFT: the window never ends after this (s)")


class ReservationJob(StrictModel):
    """The job that uses a reservation: it runs from the window's start on the reserved processors."""

    runtime: float = Field(ge=0, description="Run time (s), at most the window's length")


class Reservation(StrictModel):
    """An advance reservation: ``processors`` processors of ``cluster`` over [start, end),
    asked for at ``request_time`` and accepted or rejected then by the cluster's profile."""

    name: str = Field(min_length=1, description="Unique name, shown in the job table and notes")
    cluster: str = Field(description="Name of the cluster (its scheduler must be event-driven: fcfs, easy, "
                                     "conservative or a Python policy)")
    processors: int = Field(gt=0, description="Processors held over the whole window")
    start: float = Field(ge=0, description="Window start (s)")
    end: float = Field(description="Window end (s), after start; held until then even if the job ends sooner")
    request_time: float = Field(0.0, ge=0, description="When the reservation is asked for (s), at most start")
    relaxed: RelaxedFrame | None = Field(
        None, description="Make it relaxed: if the window does not fit at start it takes the earliest start "
                          "in [start, latest_finish - length] that fits; once accepted it slides earlier "
                          "(never before earliest_start or now) whenever processors free up")
    job: ReservationJob | None = Field(
        None, description="The job using the reservation (a job row in the 'reservations' stream)")

    @model_validator(mode="after")
    def _window(self):
        found: list[tuple[tuple, str]] = []
        if self.end <= self.start:
            found.append((("end",), f"must be after start ({self.start:g}); got {self.end:g}"))
        if self.start < self.request_time:
            found.append((("start",), f"must not be before request_time ({self.request_time:g}); "
                                      f"got {self.start:g}"))
        if self.relaxed is not None:
            if self.relaxed.earliest_start > self.start:
                found.append((("relaxed", "earliest_start"), f"must be at most start ({self.start:g}): the "
                                                             f"frame must contain the window; got "
                                                             f"{self.relaxed.earliest_start:g}"))
            if self.relaxed.latest_finish < self.end:
                found.append((("relaxed", "latest_finish"), f"must be at least end ({self.end:g}): the frame "
                                                            f"must contain the window; got "
                                                            f"{self.relaxed.latest_finish:g}"))
        if self.job is not None and self.end > self.start and self.job.runtime > self.end - self.start:
            found.append((("job", "runtime"), f"must fit in the window ({self.end - self.start:g} s); "
                                              f"got {self.job.runtime:g}"))
        if found:
            raise problems(found)
        return self

    @property
    def length(self) -> float:
        return self.end - self.start


@scenario_check(order=20)
def reservation_problems(s, check_policy=None) -> Problems:
    """Reservations name a cluster whose scheduler the event-driven simulator runs (capability
    ``event_driven``: fcfs, easy, conservative) and fit in it; priorities and preemption need
    those schedulers too; none of them goes with the grid layer's streams."""
    QUEUE_SCHEDULERS = LOCAL_SCHEDULERS.with_capability("event_driven")
    # named by the compiled ones: every Python local scheduler is event-driven too
    need = ", ".join(n for n in QUEUE_SCHEDULERS if "compiled" in LOCAL_SCHEDULERS.get(n).capabilities) \
        + " or a Python policy"
    found: list[tuple[tuple, str]] = []
    by_name = {c.name: c for c in s.platform.clusters}
    grid_kinds = [st.kind for st in s.workload.streams if st.kind in ("coallocated", "koala", "evolving")]
    seen: dict[str, int] = {}
    for i, r in enumerate(s.reservations):
        pre = ("reservations", i)
        if r.name in seen:
            found.append(((*pre, "name"), f"duplicate reservation name '{r.name}' (also reservations.{seen[r.name]})"))
        else:
            seen[r.name] = i
        cluster = by_name.get(r.cluster)
        if cluster is None:
            found.append(((*pre, "cluster"), f"unknown cluster '{r.cluster}'; known: {known_list(by_name)}"))
            continue
        if r.processors > cluster.processors:
            found.append(((*pre, "processors"), f"must be at most the {cluster.processors} processors of cluster "
                                                f"'{cluster.name}'; got {r.processors}"))
        if cluster.scheduler.name not in QUEUE_SCHEDULERS:
            found.append(((*pre, "cluster"), f"cluster '{cluster.name}' uses the {cluster.scheduler.name} "
                                             f"scheduler; reservations need {need}"))
    if s.reservations and grid_kinds:
        found.append((("reservations",), f"reservations are not simulated with {grid_kinds[0]} streams "
                                         "(only with synthetic and trace streams)"))
    for i, st in enumerate(s.workload.streams):
        if getattr(st, "priority", 0) == 0 or st.kind in ("coallocated", "koala"):
            continue
        targets = s.platform.clusters if st.target == GRID_TARGET else [by_name.get(st.target)]
        other = [c for c in targets if c is not None and c.scheduler.name not in QUEUE_SCHEDULERS]
        if other:
            found.append((("workload", "streams", i, "priority"),
                          f"cluster '{other[0].name}' uses the {other[0].scheduler.name} scheduler; priorities "
                          f"need {need}"))
    for i, st in enumerate(s.workload.streams):
        if getattr(st, "cancelled", "keep") != "withdraw":
            continue
        field = ("workload", "streams", i, "cancelled")
        if grid_kinds:
            found.append((field, f"withdraw is simulated on clusters event by event, not with {grid_kinds[0]} streams "
                                 "(give keep or drop)"))
            continue
        targets = s.platform.clusters if st.target == GRID_TARGET else [by_name.get(st.target)]
        other = [c for c in targets if c is not None and c.scheduler.name not in QUEUE_SCHEDULERS]
        if other:
            found.append((field, f"cluster '{other[0].name}' uses the {other[0].scheduler.name} scheduler; "
                                 f"withdrawing cancelled jobs needs {need} (or give keep or drop)"))
    for i, c in enumerate(s.platform.clusters):
        if c.failures is not None:
            pre = ("platform", "clusters", i, "failures")
            found += [((*pre, *path), message) for path, message in failure_problems(c.failures, c.processors)]
            if "koala" in grid_kinds:  # KOALA's clusters fail whole (docs/failures.md)
                if c.failures.mtbf is not None and c.failures.group != c.processors:
                    found.append(((*pre, "group"), f"KOALA's clusters fail whole: give group {c.processors} (the "
                                                   f"cluster's processors); got {c.failures.group}"))
                n = len(c.failures.down)
                for k, d in enumerate(c.failures.intervals):  # (those of down_file named by their row)
                    at, row = ((*pre, "down", k), "") if k < n else ((*pre, "down_file"), f"row {k - n + 1}: ")
                    if d.first != 0 or (d.processors is not None and d.processors != c.processors):
                        found.append((at, f"{row}KOALA's clusters fail whole: leave first and processors out (the "
                                          "whole cluster)"))
                    if d.notice > 0:
                        found.append(((*at, "notice") if k < n else at,
                                      f"{row}KOALA does not plan around announced maintenance: give 0 or leave it out"))
            elif grid_kinds:
                found.append((pre, f"resource failures are not simulated with {grid_kinds[0]} streams yet (only with "
                                   "synthetic, trace and koala streams)"))
            elif c.scheduler.name not in QUEUE_SCHEDULERS:
                found.append((pre, f"cluster '{c.name}' uses the {c.scheduler.name} scheduler; failures need {need}"))
        if c.preemption.name != "none" and c.scheduler.name not in QUEUE_SCHEDULERS:
            found.append((("platform", "clusters", i, "preemption", "name"),
                          f"cluster '{c.name}' uses the {c.scheduler.name} scheduler; preemption needs "
                          f"{need}"))
    return found


@scenario_check(order=21)
def victim_problems(s, check_policy=None) -> Problems:
    """A cluster's victim choice orders the jobs its preemptions take: it needs a preemption mode,
    and a Python one a scheduler that takes victims from Python (a Python scheduler, or a compiled
    pass with a plain-Python twin, PYTHON_TWINS)."""
    from simengine.preemption import DEFAULT_VICTIMS, victim_choice  # (it imports simengine.policy)

    found: list[tuple[tuple, str]] = []
    for i, c in enumerate(s.platform.clusters):
        field = ("platform", "clusters", i, "victims", "name")
        if c.victims.name == DEFAULT_VICTIMS:
            continue
        if c.preemption.name == "none":
            found.append((field, f"cluster '{c.name}' preempts nobody for a waiting job (preemption none): victim "
                                 f"choice {c.victims.name} needs preemption kill, requeue or suspend (or leave "
                                 f"victims out)"))
            continue
        entry = LOCAL_SCHEDULERS.get(c.scheduler.name) if c.scheduler.name in LOCAL_SCHEDULERS else None
        if (entry is not None and {"compiled", "event_driven"} <= entry.capabilities
                and c.scheduler.name not in PYTHON_TWINS and victim_choice(c.victims) is not None):
            found.append((field, f"cluster '{c.name}' uses the {c.scheduler.name} scheduler, which takes victims in "
                                 f"the event core's own order and has no plain-Python twin yet; a Python victim "
                                 f"choice ({c.victims.name}) needs {', '.join(PYTHON_TWINS)} or a Python scheduler"))
    return found


def needs_local(scenario: Any) -> bool:
    """Does the scenario need the event-driven simulator (reservations, preemption, priorities,
    failures or trace cancellations withdrawn, or a policy on the event API, which may reject and
    preempt jobs: more than start times)?"""
    return (bool(scenario.reservations)
            or any(getattr(s, "cancelled", "keep") == "withdraw" for s in scenario.workload.streams)
            or any(c.failures is not None for c in scenario.platform.clusters)
            or any(c.preemption.name != "none" for c in scenario.platform.clusters)
            or any(getattr(s, "priority", 0) != 0 for s in scenario.workload.streams)
            or any(not getattr(LOCAL_SCHEDULERS.get(c.scheduler.name).implementation, "kernel_path", True)
                   for c in scenario.platform.clusters if c.scheduler.name in LOCAL_SCHEDULERS))
