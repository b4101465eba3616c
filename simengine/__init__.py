"""GridWeb's simulation engine: scenarios, workloads, schedulers, results.

Pure Python + numpy (kernels compiled with numba); never imports Django.

>>> import simengine
>>> result = simengine.run("examples/single-cluster-easy.yaml")   # doctest: +SKIP
>>> result.metrics["mean_wait"].mean                                # doctest: +SKIP

The names below are imported when first used: ``import simengine`` -- which ``python -m
simengine`` does before its command line is read -- costs nothing, so ``python -m simengine
--help`` answers at once.
"""
import sys
import types
from importlib import import_module

from simengine.version import ENGINE_VERSION as __version__  # noqa: E402 - raise it in version.py

#: public name -> the module that defines it
_PUBLIC = {"load_scenario": "simengine.scenario", "scenario_hash": "simengine.scenario",
           "run": "simengine.runner", "replication_segments": "simengine.runner",
           "sweep": "simengine.sweep", "expand_sweep": "simengine.sweep"}

__all__ = ["__version__", *_PUBLIC]


class _Engine(types.ModuleType):
    """This package's module type: its public names are looked up in their modules on first use.
    ``sweep`` is a property because the submodule of the same name, once imported, would
    otherwise take the name (the import system records a package's submodules as attributes)."""

    def __getattr__(self, name: str):
        if name in _PUBLIC:
            value = getattr(import_module(_PUBLIC[name]), name)
            self.__dict__[name] = value  # (looked up once)
            return value
        raise AttributeError(f"module 'simengine' has no attribute {name!r}")

    def __dir__(self) -> list[str]:
        return sorted([*self.__dict__, *_PUBLIC])

    @property
    def sweep(self):
        return getattr(import_module("simengine.sweep"), "sweep")

    @sweep.setter
    def sweep(self, module) -> None:
        """(the import system recording the submodule: the name stays the function's)"""


sys.modules[__name__].__class__ = _Engine
