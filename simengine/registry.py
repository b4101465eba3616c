"""Policy registries: one per kind; a scenario names a policy and passes parameters.

A new policy is one module that defines a pydantic parameter model and registers
its implementation here; the schema, the CLI and the web forms pick it up from the
registry, nothing else changes (the scikit-learn way: estimators that all look alike).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict


class NoParams(BaseModel):
    """Parameter model for a policy that takes none."""

    model_config = ConfigDict(strict=True, extra="forbid")


@dataclass(frozen=True)
class Entry:
    name: str
    params: type[BaseModel]
    implementation: Any
    summary: str


class Registry:
    """Name -> (parameter model, implementation) for one kind of policy."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, Entry] = {}

    def register(self, name: str, params: type[BaseModel] = NoParams, summary: str = "") -> Callable:
        def decorate(implementation: Any) -> Any:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            doc = summary or (implementation.__doc__ or "").strip().split("\n")[0]
            self._entries[name] = Entry(name, params, implementation, doc)
            return implementation

        return decorate

    def get(self, name: str) -> Entry:
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "(none)"
            raise KeyError(f"unknown {self.kind} {name!r}; known: {known}") from None

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self._entries


LOCAL_SCHEDULERS = Registry("local scheduler")
SITE_ALLOCATION = Registry("site allocation policy")
#: Co-allocation grid layer (simengine.grid): where a global job's components go, and how
#: start deadlines are met (placement tries, claiming, Wait-X, GP/LP).
GRID_PLACEMENT = Registry("placement policy")
DEADLINE_POLICY = Registry("deadline policy")
#: What happens to a running job another job (or an advance reservation) preempts:
#: none, kill, requeue, suspend (simengine.preemption, docs/reservations.md).
PREEMPTION = Registry("preemption policy")
#: How workflow grid jobs are made and placed with reservations: none, rars-heft (Cao's
#: relaxed reservations, simengine.cao.scheduler, docs/cao.md).
WORKFLOW_SCHEDULING = Registry("workflow scheduling policy")

#: every registry, in the order `python -m simengine schedulers` lists them
REGISTRIES = (LOCAL_SCHEDULERS, SITE_ALLOCATION, GRID_PLACEMENT, DEADLINE_POLICY, PREEMPTION, WORKFLOW_SCHEDULING)
