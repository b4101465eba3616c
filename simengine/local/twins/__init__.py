"""The built-in local schedulers written again in plain Python against the public event API
(simengine.policy.EventScheduler), each giving exactly its compiled twin's schedules -- the tests
compare every start, end and piece. They prove the API can decide everything the built-ins decide,
they are what a researcher copies to start a variant, and the engine runs them where a decision
of a compiled pass is made in Python instead (a Python victim choice, docs/write-a-policy.md).

Registered in simengine.parts, like every built-in policy.
"""
from simengine.local.twins import queue  # noqa: F401  events-fcfs, events-easy
from simengine.local.twins import conservative  # noqa: F401  events-conservative
from simengine.local.twins import lwr  # noqa: F401  events-lwr
