"""Event-driven local (cluster) schedulers with advance reservations, priorities and
preemption (docs/reservations.md).

The compiled kernels of :mod:`simengine.schedulers` only return start times; this package
simulates a cluster event by event, tracking which processors each job holds, so it can
express reservation windows, suspended jobs and several segments per job. The runner uses
it only for scenarios with reservations, preemption or stream priorities
(:func:`simengine.local.run.needs_local`); without them it gives the kernels' start times.

The event core is :class:`simengine.local.cluster.ClusterSim`. (Nothing is imported here: the
schema's checks, :mod:`simengine.local.schema`, are read by every scenario, the event core only
by the scenarios that need it.)
"""
