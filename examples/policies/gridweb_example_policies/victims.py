"""Victim choices for GridWeb's clusters, written against simengine.policy
(docs/policies/victim-choice.md): which running jobs a preemption takes, in what order.

* ``python-lowest-priority-newest`` -- the built-in order (lowest priority first, then the newest
  start, then the order they started in) as a plain sort: the tests check that a cluster using it
  has exactly the built-in schedules, so the API shows everything the built-in order uses.
* ``least-work-lost`` -- a new rule: preempt the jobs that have run least, in processor-seconds
  since their current start (what a kill or a requeue throws away; under suspend, the progress
  checkpointed on the victim's processors), ties in the built-in order. It spares the long-running
  wide jobs the built-in order takes first when they are the newest.

A cluster names one beside its preemption mode:

    platform:
      clusters:
        - {name: c, processors: 64, scheduler: {name: easy},
           preemption: {name: requeue}, victims: {name: least-work-lost}}
"""
from __future__ import annotations

from simengine.policy import VictimChoice, register


def built_in_order(candidates):
    """Lowest priority first, then the newest start; ``sorted`` is stable, so the start order
    (the candidates' own) breaks the remaining ties."""
    return sorted(candidates, key=lambda job: (job.priority, -job.start))


@register
class PythonLowestPriorityNewest(VictimChoice):
    """The built-in victim order in plain Python (identical schedules to the default)."""

    name = "python-lowest-priority-newest"
    summary = "Lowest priority first, then the newest start, written with the public API (identical to the default)"

    def order(self, now, preemptor, candidates):
        return built_in_order(candidates)


@register
class LeastWorkLost(VictimChoice):
    """Preempt the jobs that lose the least work: fewest processor-seconds since their current start."""

    name = "least-work-lost"
    summary = ("Preempt the jobs that have run the fewest processor-seconds since their current start (what "
               "kill or requeue loses), ties lowest priority then newest start first")

    def order(self, now, preemptor, candidates):
        return sorted(built_in_order(candidates), key=lambda job: (now - job.start) * job.size)
