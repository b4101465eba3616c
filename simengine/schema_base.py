"""What the scenario schema (simengine.scenario) and the model packages' schema parts share.

A model package owns its part of the schema: its stream kinds, parameter models and the
cross-field checks that need the whole scenario (``simengine/grid/schema.py``,
``simengine/evolving/schema.py``, ``simengine/cao/schema.py``, ``simengine/local/schema.py``).
Its checks register here with :func:`scenario_check`; the scenario runs every registered check
after its fields validate and reports all their problems at once, each with its field path.
"""
from __future__ import annotations

from typing import Callable

from pydantic import BaseModel, ConfigDict
from pydantic_core import PydanticCustomError

__all__ = ["GRID_TARGET", "PROBLEMS", "StrictModel", "problems", "scenario_check", "SCENARIO_CHECKS", "Problems",
           "known_list"]

#: The stream target meaning "the grid's site-allocation policy chooses the cluster".
GRID_TARGET = "grid"

#: The error type :func:`simengine.scenario.load_scenario` unpacks into one error per problem.
PROBLEMS = "scenario_problems"

#: (field path below the validated object, message) pairs
Problems = list[tuple[tuple, str]]


#: Names a message lists ("known: a, b, ..."), and the characters each may take there.
KNOWN_NAMES, KNOWN_NAME_CHARS = 10, 60


def known_list(names) -> str:
    """``names`` for a message, the first :data:`KNOWN_NAMES` of them (each shortened) and how many
    more: one such message per stream or reservation must not repeat every cluster's name (2,000
    streams naming none of 2,000 clusters made 2,000 messages of 30 kB each)."""
    names = list(names)
    shown = [n if len(n) <= KNOWN_NAME_CHARS else n[:KNOWN_NAME_CHARS - 1] + "…" for n in names[:KNOWN_NAMES]]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" and {more:,} more" if more else "")


def problems(items: Problems) -> PydanticCustomError:
    """An error carrying several (sub-path, message) problems below the validator's location.

    Pydantic only lets a validator report at its own location; :func:`load_scenario`
    unpacks these so each problem gets its full dotted path.
    """
    message = "; ".join(f"{'.'.join(map(str, p))}: {m}" if p else m for p, m in items)
    return PydanticCustomError(PROBLEMS, "{message}", {"message": message, "problems": items})


class StrictModel(BaseModel):
    """A schema object: no coercion (no bool as int, no number in a string), no unknown field,
    no NaN or infinity."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)


#: (order, check): each ``check(scenario, check_policy) -> Problems`` with paths from the
#: scenario's root; ``check_policy(ref, registry, path)`` validates a policy reference there.
#: Problems are listed by order: 10 evolving, 20 reservations, 30 Cao, 50 the core streams and
#: run control (simengine.scenario), 90 the grid layer.
SCENARIO_CHECKS: list[tuple[int, Callable]] = []


def scenario_check(order: int) -> Callable:
    """Decorator: run this cross-field check on every scenario (at ``order`` among the others)."""

    def register(check: Callable) -> Callable:
        SCENARIO_CHECKS.append((order, check))
        SCENARIO_CHECKS.sort(key=lambda item: item[0])
        return check

    return register
