"""fcfs local scheduler (stub, being implemented)."""
from simengine.registry import LOCAL_SCHEDULERS


@LOCAL_SCHEDULERS.register("fcfs")
def schedule(jobs, processors, params, horizon=float("inf")):
    raise NotImplementedError
