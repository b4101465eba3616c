"""Rigid and evolving applications on one homogeneous cluster (Klein & Pérez, MODELS.md §7).

- :mod:`.models`: evolution profiles and the input (pydantic v2, errors name the field);
- :mod:`.kernels`: the resource EP, ``fit`` (Algorithm 3) with stretch limit and the +c
  compacting pass, Algorithm 2 over many tests (numba);
- :mod:`.schedule`: :func:`schedule` for one input, :func:`schedule_flat` for many tests,
  CBF as the rigid baseline;
- :mod:`.mapping`: Algorithm 1 (node ids) and the Gantt segments;
- :mod:`.metrics`: the metrics of Tables 1-2; :mod:`.generate`: the paper's workload.

Model, options and decisions: docs/evolving.md.
"""
from simengine.evolving.generate import FlatWorkload, WorkloadSpec, generate
from simengine.evolving.models import (
    ALGORITHMS,
    DEFAULT_N_MAX,
    Algorithm,
    Application,
    EvolvingScenario,
    Stage,
    load_evolving,
    validate_profile,
)
from simengine.evolving.schedule import FlatSchedule, Schedule, schedule, schedule_flat

__all__ = [
    "ALGORITHMS", "DEFAULT_N_MAX", "Algorithm", "Application", "EvolvingScenario", "Stage",
    "load_evolving", "validate_profile", "FlatWorkload", "WorkloadSpec", "generate",
    "FlatSchedule", "Schedule", "schedule", "schedule_flat",
]
