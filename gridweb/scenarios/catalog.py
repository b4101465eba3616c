"""What the engine offers, as plain JSON for the scenario builder.

Everything here is read from the engine at request time: the policy registries (with each
policy's parameter JSON schema from its pydantic params model), the distributions, the
presets and the scenario's own JSON schema. The builder's forms are generated from this, so
a policy registered in ``simengine.registry`` (or a new distribution kind) appears in the
browser with no front-end work.
"""

from __future__ import annotations

import copy
import typing
from typing import Any

from pydantic import BaseModel

import simengine.registry as engine_registry
from simengine import presets
from simengine.distributions import DISTRIBUTION_KINDS
from simengine.registry import Registry
from simengine.scenario import Cluster, Grid, PolicyRef, Scenario

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
    """Every policy registry the engine defines, by its module-level name lowercased
    (``LOCAL_SCHEDULERS`` -> ``local_schedulers``)."""
    return {
        name.lower(): value for name, value in vars(engine_registry).items() if isinstance(value, Registry)
    }


def _policies(registry: Registry) -> list[dict[str, Any]]:
    found = []
    for name in registry.names():
        entry = registry.get(name)
        found.append({
            "name": name,
            "summary": entry.summary,
            "params_schema": entry.params.model_json_schema(),
        })
    return found


def _is_policy_ref(annotation: Any) -> bool:
    if annotation is PolicyRef:
        return True
    return any(arg is PolicyRef for arg in typing.get_args(annotation))


def _registry_for_field(field: str, registries: dict[str, Registry]) -> str | None:
    """The registry a ``PolicyRef`` field draws from: the registry of the same name
    (``site_allocation`` -> ``SITE_ALLOCATION``, ``preemption`` -> ``PREEMPTION``), or the one
    whose kind starts with the field's words (``placement`` -> "placement policy"), or else the
    one whose kind ends with them (``scheduler`` -> "local scheduler")."""
    words = field.replace("_", " ")
    for key, registry in registries.items():
        if key in (field, field + "s") or registry.kind.startswith(words):
            return key
    for key, registry in registries.items():
        if registry.kind.endswith(words):
            return key
    return None


def _default_policy(model: type[BaseModel], field: str) -> str | None:
    info = model.model_fields[field]
    default = info.default_factory() if info.default_factory is not None else info.default
    return getattr(default, "name", None)


def grid_policies(registries: dict[str, Registry] | None = None) -> list[dict[str, Any]]:
    """One entry per policy field of the scenario's ``grid`` section."""
    registries = registries if registries is not None else _registries()
    found = []
    for field, info in Grid.model_fields.items():
        if not _is_policy_ref(info.annotation):
            continue
        registry = _registry_for_field(field, registries)
        found.append({
            "field": field,
            "title": field.replace("_", " ").capitalize(),
            "registry": registry,
            "default": _default_policy(Grid, field),
        })
    return found


#: Titles of cluster policy fields whose field name alone says too little.
CLUSTER_POLICY_TITLES = {"scheduler": "Local scheduler"}


def cluster_policies(registries: dict[str, Registry] | None = None) -> list[dict[str, Any]]:
    """One entry per policy field of a cluster (``scheduler``, ``preemption``, …): the field,
    its title, the registry it draws from and its default policy."""
    registries = registries if registries is not None else _registries()
    found = []
    for field, info in Cluster.model_fields.items():
        if not _is_policy_ref(info.annotation):
            continue
        found.append({
            "field": field,
            "title": CLUSTER_POLICY_TITLES.get(field, field.replace("_", " ").capitalize()),
            "registry": _registry_for_field(field, registries),
            "default": _default_policy(Cluster, field),
        })
    return found


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
    """Everything the builder needs to know about the engine, JSON-serialisable."""
    registries = _registries()
    schema = Scenario.model_json_schema(by_alias=True)
    # The clusters' scheduler field draws from LOCAL_SCHEDULERS (the schema checks it there).
    scheduler_registry = next(k for k, r in registries.items() if r is engine_registry.LOCAL_SCHEDULERS)
    return {
        "registries": {
            key: {"kind": registry.kind, "policies": _policies(registry)} for key, registry in registries.items()
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
    policy fields name the policies registered in this server's engine -- the built-in ones and
    those of installed packages (docs/write-a-policy.md) -- with the rest left to the engine's
    validation (docs/scenario.md)."""
    registries = _registries()

    def policy(registry: str | None) -> dict[str, Any]:
        names = registries[registry].names() if registry else []
        return {"type": "object", "properties": {"name": {"type": "string", "enum": names}, "params": {"type": "object"}}}

    cluster = {field["field"]: policy(field["registry"]) for field in cluster_policies(registries)}
    grid = {field["field"]: policy(field["registry"]) for field in grid_policies(registries)}
    return {"type": "object", "description": "the engine's scenario document (docs/scenario.md)",
            "properties": {"platform": {"type": "object", "properties": {
                               "clusters": {"type": "array", "items": {"type": "object", "properties": cluster}}}},
                           "grid": {"type": "object", "properties": grid}},
            "additionalProperties": True}
