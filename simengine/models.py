"""Every model family the engine has, in the order they are asked whether they handle a
scenario: the first that does simulates it (:func:`model_of`). Each is a
:class:`simengine.driver.Model` its package declares; the kernel path, which takes any
scenario, comes last. A new model family is a package with a ``MODEL`` and a line here.
"""
from __future__ import annotations

from simengine.cao.run import MODEL as CAO
from simengine.driver import Model
from simengine.evolving.run import MODEL as EVOLVING
from simengine.grid.koala_run import MODEL as KOALA
from simengine.grid.run import MODEL as COALLOCATION
from simengine.kernel_model import KERNEL, LWR_GRID
from simengine.local.run import MODEL as EVENT_DRIVEN
from simengine.scenario import Scenario

MODELS: tuple[Model, ...] = (CAO, KOALA, COALLOCATION, EVOLVING, EVENT_DRIVEN, LWR_GRID, KERNEL)


def warm_up() -> None:
    """Load every model's compiled parts from numba's cache (a few seconds; compiling them the
    first time after an install takes minutes): a server's worker does it when it starts, so its
    first run does not pay it."""
    for model in MODELS:
        if model.warm_up is not None:
            model.warm_up()


def model_of(scenario: Scenario) -> Model:
    """The model that simulates ``scenario``."""
    return next(m for m in MODELS if m.handles(scenario))
