"""Local (cluster) schedulers, registered by name in ``LOCAL_SCHEDULERS``.

Each scheduler simulates one cluster: given the jobs routed to it (a JobTable sorted
by submit time) and its processor count it returns start times. The compiled kernels
live in one module per policy; this package only registers them.
"""
from simengine.schedulers import fcfs, easy, conservative, lwr  # noqa: F401  (registration)
