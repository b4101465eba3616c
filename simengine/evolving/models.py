"""Evolution profiles and the evolving-scheduling input, validated with pydantic v2.

An application's *evolution profile* (EP) is a list of stages ``(duration, nodes)``; a
rigid application has one stage. :func:`load_evolving` validates a whole input
(``n_max``, the algorithm and its options, the applications) and reports every problem
at once as a :class:`~simengine.errors.ScenarioError` whose messages name the field,
e.g. ``applications.3.stages: must have at least one stage``.

A stage may be written ``{"duration": 500, "nodes": 5}`` or as the pair ``[500, 5]``;
an application as ``{"name": ..., "stages": [...]}`` or as its bare list of stages.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from simengine.errors import FieldError, ScenarioError

#: n_max of MODELS.md §7 (the report omits it; 100 reproduces its tables)
DEFAULT_N_MAX = 100


@dataclass(frozen=True)
class Algorithm:
    """A scheduling algorithm of the paper: stretch limit l, +c compacting, or rigid CBF."""

    name: str
    stretch_limit: float
    compact: bool
    rigid: bool = False


#: The six algorithms of Tables 1-2.
ALGORITHMS: dict[str, Algorithm] = {
    "cbf": Algorithm("CBF", 1.0, False, rigid=True),
    "nos": Algorithm("nos", 1.0, False),
    "mic": Algorithm("mic", 2.0, False),
    "mic+c": Algorithm("mic+c", 2.0, True),
    "inf": Algorithm("inf", math.inf, False),
    "inf+c": Algorithm("inf+c", math.inf, True),
}


class _Model(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)


class Stage(_Model):
    """One stage: ``nodes`` nodes for ``duration`` seconds of computation."""

    duration: float = Field(gt=0, description="Seconds of computation, > 0")
    nodes: int = Field(ge=1, description="Nodes used, from 1 to the target's processors (n_max)")

    @model_validator(mode="before")
    @classmethod
    def _pair(cls, v: Any) -> Any:
        if isinstance(v, (list, tuple)):
            if len(v) != 2:
                raise PydanticCustomError("stage_pair", "a stage is a pair [duration, nodes] or a "
                                          "mapping with duration and nodes, not {count} values",
                                          {"count": len(v)})
            return {"duration": v[0], "nodes": v[1]}
        return v

    @field_validator("nodes")
    @classmethod
    def _at_most_n_max(cls, v: int, info: ValidationInfo) -> int:
        n_max = (info.context or {}).get("n_max", DEFAULT_N_MAX)
        if v > n_max:
            raise PydanticCustomError("too_many_nodes", "must be at most n_max ({n_max}); got {nodes}",
                                      {"n_max": n_max, "nodes": v})
        return v


class Application(_Model):
    """One application: its requested evolution profile (rigid = one stage)."""

    name: str | None = Field(None, description="Optional label of the application")
    stages: list[Stage] = Field(description="Its evolution profile: stages {duration, nodes} or "
                                            "[duration, nodes], at least one (one stage: rigid)")

    @model_validator(mode="before")
    @classmethod
    def _bare_list(cls, v: Any) -> Any:
        return {"stages": v} if isinstance(v, (list, tuple)) else v

    @field_validator("stages")
    @classmethod
    def _not_empty(cls, v: list[Stage]) -> list[Stage]:
        if not v:
            raise PydanticCustomError("no_stages", "must have at least one stage")
        return v

    @property
    def durations(self) -> list[float]:
        return [s.duration for s in self.stages]

    @property
    def nodes(self) -> list[int]:
        return [s.nodes for s in self.stages]


class EvolvingScenario(_Model):
    """Offline scheduling of rigid and evolving applications on one homogeneous cluster.

    ``algorithm`` picks one of :data:`ALGORITHMS`; ``stretch_limit`` (l >= 1, or
    ``"inf"``) and ``compact`` override its settings. ``move_first_stage``: the first
    stage is moved right rather than stretched (the paper's Algorithm 3, lines 30-33).
    ``release``: which nodes a shrinking application frees in the node mapping
    (Algorithm 1): ``last_acquired`` keeps the nodes it holds longest (its first node
    runs the driver), ``highest`` frees its highest-numbered ones. Growing takes the
    lowest-numbered free nodes.
    """

    n_max: int = Field(DEFAULT_N_MAX, ge=1)
    algorithm: Literal["cbf", "nos", "mic", "mic+c", "inf", "inf+c"] = "nos"
    stretch_limit: float | Literal["inf"] | None = None
    compact: bool | None = None
    move_first_stage: bool = True
    release: Literal["last_acquired", "highest"] = "last_acquired"
    applications: list[Application]

    @field_validator("stretch_limit")
    @classmethod
    def _limit(cls, v):
        if isinstance(v, (int, float)) and v < 1:
            raise PydanticCustomError("stretch_limit", "must be at least 1 (1: no stretching) or 'inf'")
        return v

    @field_validator("applications")
    @classmethod
    def _some(cls, v):
        if not v:
            raise PydanticCustomError("no_applications", "must have at least one application")
        return v

    @model_validator(mode="after")
    def _options(self) -> EvolvingScenario:
        if self.algorithm == "cbf":
            for name in ("stretch_limit", "compact"):
                if getattr(self, name) is not None:
                    raise PydanticCustomError("option", "{name}: does not apply to cbf (rigid applications)",
                                              {"name": name})
        return self

    @property
    def policy(self) -> Algorithm:
        """The algorithm with the overrides applied."""
        base = ALGORITHMS[self.algorithm]
        limit = base.stretch_limit
        if self.stretch_limit is not None:
            limit = math.inf if self.stretch_limit == "inf" else float(self.stretch_limit)
        comp = base.compact if self.compact is None else self.compact
        name = base.name
        if (limit, comp) != (base.stretch_limit, base.compact):
            name = f"l={limit:g}" + ("+c" if comp else "")
        return Algorithm(name, limit, comp, base.rigid)


_TAG = re.compile(r"^(float|int|str|bool|none|literal\[.*\]|function-\w+\[.*\])$")


def _path(loc: tuple) -> tuple:
    """The field path of a pydantic ``loc`` without its union / validator tags."""
    return tuple(p for p in loc if isinstance(p, int) or not _TAG.match(p))


def _message(err: dict) -> str:
    kind, msg, ctx = err["type"], err["msg"], err.get("ctx") or {}
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "greater_than":
        return f"must be greater than {ctx.get('gt'):g}"
    if kind == "greater_than_equal":
        return f"must be at least {ctx.get('ge'):g}"
    if kind == "finite_number":
        return "must be a finite number"
    if kind == "literal_error" and err["loc"] and err["loc"][-1] == "algorithm":
        return f"unknown algorithm {err['input']!r}; known: {', '.join(ALGORITHMS)}"
    if msg.startswith("Input should be "):
        return "must be " + msg.removeprefix("Input should be ")
    return msg


def field_errors(exc: ValidationError) -> list[FieldError]:
    """Every problem of ``exc`` as a FieldError with a dotted path."""
    out: list[FieldError] = []
    for err in exc.errors(include_url=False):
        path = _path(tuple(err["loc"]))
        if err["type"] == "option":
            out.append(FieldError(err["ctx"]["name"], "does not apply to cbf (rigid applications)"))
            continue
        if path == ("stretch_limit",) and err["type"] != "stretch_limit":
            fe = FieldError("stretch_limit", "must be a number >= 1 or 'inf'")
        else:
            fe = FieldError(".".join(map(str, path)), _message(err))
        if fe not in out:
            out.append(fe)
    return out


def load_evolving(data: Any) -> EvolvingScenario:
    """Validate ``data`` (a dict, or an EvolvingScenario returned as is); ScenarioError on bad input."""
    if isinstance(data, EvolvingScenario):
        return data
    if not isinstance(data, dict):
        raise ScenarioError(f"an evolving scenario must be a mapping of fields, not {type(data).__name__}")
    n_max = data.get("n_max", DEFAULT_N_MAX)
    usable = isinstance(n_max, int) and not isinstance(n_max, bool) and n_max >= 1
    context = {"n_max": n_max if usable else math.inf}  # a bad n_max is reported by itself
    try:
        return EvolvingScenario.model_validate(data, context=context)
    except ValidationError as e:
        raise ScenarioError(field_errors(e)) from None


def validate_profile(stages: Any, n_max: int = DEFAULT_N_MAX, where: str = "stages") -> list[Stage]:
    """Validate one evolution profile; errors are reported under ``where``."""
    try:
        app = Application.model_validate({"stages": stages}, context={"n_max": n_max})
    except ValidationError as e:
        raise ScenarioError([FieldError(".".join([where, *fe.path.split(".")[1:]]), fe.message)
                             for fe in field_errors(e)]) from None
    return app.stages
