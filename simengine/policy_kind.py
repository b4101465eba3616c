"""The base of every kind of policy and the one way a policy is filed (:func:`register`): kept
apart from simengine.policy (which re-exports both) so the engine's own kinds -- victim choice in
simengine.preemption -- can be declared without importing the policy API, which imports the engine.
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel

from simengine.registry import NoParams

__all__ = ["PolicyKind", "register"]


class PolicyKind:
    """The base of every kind of policy a researcher writes. A kind (a direct subclass, e.g.
    :class:`LocalScheduler`) sets ``kind_registry`` (where :func:`register` files its policies)
    and ``kind_methods`` (a policy must define at least one of them); a policy sets ``name``,
    ``Params`` (a pydantic model; the builder's form is made from it) and ``summary``."""

    name: ClassVar[str] = ""
    Params: ClassVar[type[BaseModel]] = NoParams
    summary: ClassVar[str] = ""
    kind_registry: ClassVar = None
    kind_methods: ClassVar[tuple[str, ...]] = ()
    #: registry capabilities (registry.CAPABILITIES) the policy declares
    capabilities: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def implementation_of(cls, policy: type) -> object:
        """What the registry holds for ``policy`` (the class itself unless the kind wraps it)."""
        return policy

    @classmethod
    def capabilities_of(cls, policy: type) -> tuple[str, ...]:
        return tuple(policy.capabilities)

    @staticmethod
    def kinds() -> list[type]:
        """Every kind of policy defined so far (those of the model packages once imported)."""
        out, todo = [], [PolicyKind]
        while todo:
            for sub in todo.pop().__subclasses__():
                if "kind_registry" in vars(sub) and sub.kind_registry is not None:
                    out.append(sub)
                todo.append(sub)
        return out


def register(policy: type) -> type:
    """Class decorator: put ``policy`` into the registry of its kind under its ``name``. A kind is
    a base class that says where its policies go (:class:`PolicyKind`): LocalScheduler ->
    LOCAL_SCHEDULERS, PlacementPolicy -> GRID_PLACEMENT, SiteAllocationPolicy -> SITE_ALLOCATION,
    and the kinds the model packages declare (docs/write-a-policy.md lists them all)."""
    kind = next((b for b in getattr(policy, "__mro__", ()) if "kind_registry" in vars(b)), None)
    if kind is None or kind.kind_registry is None:
        known = ", ".join(k.__name__ for k in PolicyKind.kinds())
        raise TypeError(f"{policy!r} is not a subclass of a policy kind ({known})")
    if not policy.name:
        raise ValueError(f"{policy.__name__} has no name")
    methods = kind.kind_methods
    if all(getattr(policy, m) is getattr(kind, m) for m in methods):
        raise TypeError(f"{policy.__name__} does not define {' or '.join(m + '()' for m in methods)}")
    summary = policy.summary or (policy.__doc__ or "").strip().split("\n")[0]
    kind.kind_registry.register(policy.name, policy.Params, summary, kind.capabilities_of(policy))(
        kind.implementation_of(policy))
    return policy
