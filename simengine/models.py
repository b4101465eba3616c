"""Every model family the engine has, in the order they are asked whether they handle a
scenario: the first that does simulates it (:func:`model_of`). Each is a
:class:`simengine.driver.Model` its package declares as ``MODEL``; the kernel path, which takes
any scenario, comes last. Whether a family handles a scenario is asked of a predicate in its
schema module, and its package is imported only when a scenario of its own runs (or a worker
warms every model up): a command-line replay on the kernel path loads no other family.
A new model family is a package with a ``MODEL``, a predicate beside its schema, and a line here.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

from simengine.cao.schema import is_cao
from simengine.driver import Model
from simengine.evolving.schema import is_evolving
from simengine.grid.schema import is_grid, is_koala
from simengine.kernel_model import any_scenario, is_lwr_grid
from simengine.local.schema import needs_local
from simengine.scenario import Scenario


@dataclass(frozen=True)
class Family:
    """A model family as listed here: its name, the scenarios it handles, and where its
    :class:`~simengine.driver.Model` is (module and attribute)."""

    name: str
    handles: Callable[[Scenario], bool]
    module: str
    attribute: str = "MODEL"

    def model(self) -> Model:
        return getattr(importlib.import_module(self.module), self.attribute)


FAMILIES: tuple[Family, ...] = (
    Family("cao", is_cao, "simengine.cao.run"),
    Family("koala", is_koala, "simengine.grid.koala_run"),
    Family("co-allocation", is_grid, "simengine.grid.run"),
    Family("evolving", is_evolving, "simengine.evolving.run"),
    Family("event-driven cluster", needs_local, "simengine.local.run"),
    Family("lwr-grid", is_lwr_grid, "simengine.kernel_model", "LWR_GRID"),
    Family("kernel", any_scenario, "simengine.kernel_model", "KERNEL"),
)


def models() -> tuple[Model, ...]:
    """Every family's model (importing every model package)."""
    return tuple(f.model() for f in FAMILIES)


def warm_up() -> None:
    """Load every model's compiled parts from numba's cache (a few seconds; compiling them the
    first time after an install takes minutes): a server's worker does it when it starts, so its
    first run does not pay it."""
    for model in models():
        if model.warm_up is not None:
            model.warm_up()


def model_of(scenario: Scenario) -> Model:
    """The model that simulates ``scenario``."""
    return next(f for f in FAMILIES if f.handles(scenario)).model()
