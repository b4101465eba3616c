"""GridWeb's simulation engine: scenarios, workloads, schedulers, results.

Pure Python + numpy (kernels compiled with numba); never imports Django.

>>> import simengine
>>> result = simengine.run("examples/single-cluster-easy.yaml")   # doctest: +SKIP
>>> result.metrics["mean_wait"].mean                                # doctest: +SKIP
"""
from simengine.version import ENGINE_VERSION as __version__  # noqa: E402 - raise it in version.py

from simengine.scenario import load_scenario, scenario_hash  # noqa: E402
from simengine.runner import replication_segments, run  # noqa: E402
from simengine.sweep import expand_sweep, sweep  # noqa: E402

__all__ = ["__version__", "load_scenario", "scenario_hash", "run", "replication_segments", "sweep", "expand_sweep"]
