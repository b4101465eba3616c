"""What the engine offers, as plain JSON for the scenario builder.

Everything here is read from the engine at request time: the policy registries (with each
policy's parameter JSON schema from its pydantic params model), the distributions, the
presets and the scenario's own JSON schema. The builder's forms are generated from this, so
a policy registered in ``simengine.registry`` (or a new distribution kind) appears in the
browser with no front-end work.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

import simengine.registry as engine_registry
from simengine import policy_fields
from simengine import presets
from simengine.distributions import DISTRIBUTION_KINDS
from simengine.registry import Registry
from simengine.scenario import Cluster, Grid

#: Starting values the builder fills in when the user picks a distribution kind. Only a
#: convenience: a kind missing here starts with empty fields (its schema still drives the form).
DISTRIBUTION_EXAMPLES: dict[str, dict[str, Any]] = {
    "exponential": {"mean": 600},
    "uniform": {"low": 1, "high": 16, "integer": True},
    "constant": {"value": 1},
    "choice": {"values": [1, 2, 4, 8]},
    "empirical": {"values": [1, 2, 4]},
    "hyperexponential": {"p": [0.9, 0.1], "means": [300, 3600]},
    "bounded_pareto": {"alpha": 1.5, "high": 100, "mean": 1},
    "rsd": {"low": 1, "high": 32, "q": 0.9},
    "lognormal": {"mean": 600, "sigma": 1},
}


def _registries() -> dict[str, Registry]:
    """Every policy registry the engine has, by its module-level name lowercased
    (``LOCAL_SCHEDULERS`` -> ``local_schedulers``): simengine.policy_fields.registries."""
    return policy_fields.registries()


def _policies(registry: Registry, registries: dict[str, Registry]) -> list[dict[str, Any]]:
    """Each policy's name, summary and parameter schema; a parameter naming another policy (rars-heft's
    ``admission``) is marked with its registry (``x-registry``), so the builder draws a policy picker."""
    return [{"name": name, "summary": registry.get(name).summary,
             "params_schema": policy_fields.params_schema(registry, name, registries)} for name in registry.names()]


def _default_policy(model: type[BaseModel], field: str) -> str | None:
    info = model.model_fields[field]
    default = info.default_factory() if info.default_factory is not None else info.default
    return getattr(default, "name", None)


#: Titles of policy fields whose field name alone says too little.
POLICY_TITLES = {"scheduler": "Local scheduler"}


def _section_policies(model: type[BaseModel], registries: dict[str, Registry] | None) -> list[dict[str, Any]]:
    """One entry per field of ``model`` (a section of the scenario) that names a policy: the field,
    its title, the registry it draws from and its default policy."""
    registries = registries if registries is not None else _registries()
    schema = policy_fields.annotate(model.model_json_schema(by_alias=True), registries)
    return [{"field": field, "title": POLICY_TITLES.get(field, field.replace("_", " ").capitalize()),
             "registry": raw[policy_fields.REGISTRY_KEY], "default": _default_policy(model, field)}
            for field, raw in schema["properties"].items() if policy_fields.REGISTRY_KEY in raw]


def grid_policies(registries: dict[str, Registry] | None = None) -> list[dict[str, Any]]:
    """One entry per policy field of the scenario's ``grid`` section."""
    return _section_policies(Grid, registries)


def cluster_policies(registries: dict[str, Registry] | None = None) -> list[dict[str, Any]]:
    """One entry per policy field of a cluster (``scheduler``, ``preemption``, ``victims``, …)."""
    return _section_policies(Cluster, registries)


def distributions() -> list[dict[str, Any]]:
    found = []
    for kind, model in DISTRIBUTION_KINDS.items():
        doc = (model.__doc__ or "").strip().split("\n")[0]
        found.append({
            "kind": kind,
            "summary": doc,
            "schema": model.model_json_schema(by_alias=True),
            "example": copy.deepcopy(DISTRIBUTION_EXAMPLES.get(kind, {})),
        })
    return found


def scenario_presets() -> list[dict[str, Any]]:
    return [
        {"name": name, "title": spec.get("name", name), "description": spec.get("description", "")}
        for name, spec in presets.SCENARIOS.items()
    ]


def preset_document(name: str) -> dict[str, Any]:
    """The engine's preset scenario ``name`` with its platform preset written out as explicit
    clusters, so every cluster can be edited in the builder (raises ``KeyError``)."""
    spec = presets.scenario(name)
    platform = spec.get("platform") or {}
    if platform.get("preset") and "clusters" not in platform:
        expanded = presets.platform(platform["preset"])
        platform = {**{k: v for k, v in platform.items() if k != "preset"}, **expanded}
        spec["platform"] = platform
    return spec


def _features(schema: dict[str, Any]) -> dict[str, bool]:
    """Which optional sections the scenario schema has (the builder shows only those)."""
    defs = schema.get("$defs", {})
    platform = defs.get("Platform", {}).get("properties", {})
    return {
        "file_sites": "file_sites" in platform,
        "bandwidth": "bandwidth" in platform,
        "grid": "grid" in schema.get("properties", {}),
        "run": "run" in schema.get("properties", {}),
        "reservations": "reservations" in schema.get("properties", {}),
    }


def engine_catalog() -> dict[str, Any]:
    """Everything the builder needs to know about the engine, JSON-serialisable. Every field that
    names a policy, in the scenario's schema and in the policies' parameter schemas, carries
    ``x-registry``: the registry the builder offers there (simengine.policy_fields)."""
    registries = _registries()
    schema = policy_fields.scenario_schema(registries)
    # The clusters' scheduler field draws from LOCAL_SCHEDULERS (the schema checks it there).
    scheduler_registry = next(k for k, r in registries.items() if r is engine_registry.LOCAL_SCHEDULERS)
    return {
        "registries": {
            key: {"kind": registry.kind, "policies": _policies(registry, registries)}
            for key, registry in registries.items()
        },
        "cluster_scheduler": {"registry": scheduler_registry, "default": _default_policy(Cluster, "scheduler")},
        "cluster_policies": cluster_policies(registries),
        "grid_policies": grid_policies(registries),
        "distributions": distributions(),
        "presets": scenario_presets(),
        "platform_presets": {name: presets.platform(name)["clusters"] for name in presets.PLATFORMS},
        "features": _features(schema),
        "scenario_schema": schema,
    }


def spec_schema() -> dict[str, Any]:
    """The OpenAPI schema of a scenario document (the API's ``spec`` fields): an object whose
    policy fields -- wherever the scenario's schema has one, and inside each policy's parameters
    (rars-heft's ``admission``, KOALA's ``preemption``) -- name the policies registered in this
    server's engine, the built-in ones and those of installed packages (docs/write-a-policy.md);
    the rest is left to the engine's validation (docs/scenario.md)."""
    registries = _registries()
    skeleton = _skeleton(policy_fields.scenario_schema(registries), registries, ())
    return {"type": "object", "description": "the engine's scenario document (docs/scenario.md)",
            **skeleton, "additionalProperties": True}


def _skeleton(schema: dict[str, Any], registries: dict[str, Registry], within: tuple[str, ...]) -> dict[str, Any]:
    """The objects and lists of ``schema`` (annotated) that lead to its policy fields, each policy
    field as :func:`_policy_schema`; ``within``: the registries being expanded (no endless nesting)."""
    root: dict[str, Any] = {"type": "object", "properties": {}}
    for path, key, raw in policy_fields.policy_fields(schema):
        node = root
        for part, following in zip(path, path[1:]):
            if part == "*":
                continue
            shape = {"type": "array", "items": {"type": "object", "properties": {}}} if following == "*" \
                else {"type": "object", "properties": {}}
            node = node["properties"].setdefault(part, shape)
            node = node["items"] if following == "*" else node
        registry = registries[key]
        node["properties"][path[-1]] = _policy_schema(
            key, policy_fields.allowed_names(raw, schema, registry), registries, within)
    return {"properties": root["properties"]} if root["properties"] else {}


def _policy_schema(key: str, names: list[str], registries: dict[str, Registry], within: tuple[str, ...]
                   ) -> dict[str, Any]:
    """A policy field: ``name`` one of ``names`` of registry ``key``, ``params`` an object; and one
    alternative per policy with its summary and, when its parameters name policies, those fields."""
    registry = registries[key]
    alternatives = []
    for name in names:
        nested = {} if key in within else _skeleton(
            policy_fields.params_schema(registry, name, registries), registries, (*within, key))
        alternatives.append({"type": "object", "title": name, "description": registry.get(name).summary,
                             "properties": {"name": {"type": "string", "enum": [name]},
                                            "params": {"type": "object", **nested}}})
    return {"type": "object", "description": f"a {registry.kind} ({key}) by name, with its parameters",
            "properties": {"name": {"type": "string", "enum": names}, "params": {"type": "object"}},
            "anyOf": alternatives}
