"""Every kind of policy, and every field that names one: what the CLI (``python -m simengine
policies``), the builder and the API schema list, with no code per kind.

A policy is named by a field holding ``{name, params}``: the scenario's ``PolicyRef`` fields (a
cluster's scheduler and preemption, the grid's site allocation, placement, claiming, ...) and the
fields of policies' own parameters that name another policy (rars-heft's ``admission``, KOALA's
``preemption``). :func:`annotate` finds them in a JSON schema and marks each with the registry it
draws from (``"x-registry"``); :func:`policy_fields` lists where they are; :func:`named_policies`
reads the policies a scenario document names, nested ones included.

Which registry a field draws from is read from the schema, in this order: the names its ``name``
allows (an ``enum``: the registry that has them all), the registry its description names in
capitals (``(CLAIMING)``, ``(RESERVATION_ADMISSION)``), or the field's own name (``preemption`` ->
``PREEMPTION``, ``placement`` -> "placement policy", ``scheduler`` -> "local scheduler").
"""
from __future__ import annotations

import copy
import re
import sys
from typing import Any, Iterator, NamedTuple

import simengine.registry as engine_registry
from simengine.registry import Registry

__all__ = ["registries", "annotate", "policy_fields", "params_schema", "scenario_schema", "named_policies",
           "allowed_names", "Named", "REGISTRY_KEY"]

#: the JSON schema keyword :func:`annotate` marks a field naming a policy with (its registry's key)
REGISTRY_KEY = "x-registry"


def registries() -> dict[str, Registry]:
    """Every policy registry, by its module-level name lowercased (``LOCAL_SCHEDULERS`` ->
    ``local_schedulers``): simengine.registry's (in ``REGISTRIES`` order) and any a kind of policy
    declares in its own module (``PolicyKind.kinds()``). Imports the built-in policies and the
    installed packages' first (simengine.parts)."""
    import simengine.parts  # noqa: F401  (fills the registries; loads the entry points)
    from simengine.policy import PolicyKind  # (simengine.parts has imported it already)

    modules = [engine_registry, *(sys.modules[kind.__module__] for kind in PolicyKind.kinds())]
    named: dict[int, str] = {}
    for module in modules:
        for name, value in vars(module).items():
            if isinstance(value, Registry):
                named.setdefault(id(value), name.lower())
    ordered = list(engine_registry.REGISTRIES) + [value for module in modules for value in vars(module).values()
                                                  if isinstance(value, Registry)]
    found: dict[str, Registry] = {}
    for registry in ordered:
        key = named.get(id(registry)) or re.sub(r"\W+", "_", registry.kind)
        found.setdefault(key, registry)
    return found


# --- finding the fields ---------------------------------------------------------------------------


def _resolve(schema: dict, defs: dict) -> dict:
    """``schema`` with its ``$ref`` followed and an optional (``X | None``) unwrapped."""
    for _ in range(20):
        if isinstance(schema.get("anyOf"), list):
            rest = [s for s in schema["anyOf"] if s.get("type") != "null"]
            if len(rest) == 1 and len(rest) < len(schema["anyOf"]):
                schema = rest[0]
                continue
        if "$ref" in schema:
            schema = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
            continue
        return schema
    return schema


def _is_policy_ref(schema: dict) -> bool:
    """An object of a policy's ``name`` (text) and its free-form ``params`` (checked by the policy)."""
    props = schema.get("properties") or {}
    name, params = props.get("name"), props.get("params")
    return (schema.get("type") == "object" and isinstance(name, dict) and isinstance(params, dict)
            and (name.get("type") == "string" or "enum" in name)
            and params.get("type") == "object" and "properties" not in params)


def _registry_of(field: str, raw: dict, ref: dict, found: dict[str, Registry]) -> str | None:
    """The key of the registry the policy field ``field`` (its schema ``raw``, the object ``ref``)
    draws from, or None when nothing says."""
    candidates = dict(found)
    names = ref["properties"]["name"].get("enum")
    if names:  # the names it allows: a registry that has them all
        candidates = {k: r for k, r in found.items() if set(names) <= set(r.names())}
        if len(candidates) == 1:
            return next(iter(candidates))
    text = f"{raw.get('description', '')} {ref.get('description', '')}"
    mentioned = [k for k in candidates if re.search(rf"\b{re.escape(k.upper())}\b", text)]
    if len(mentioned) == 1:
        return mentioned[0]
    words = field.replace("_", " ")
    for key, registry in candidates.items():
        if key in (field, field + "s") or registry.kind.startswith(words):
            return key
    for key, registry in candidates.items():
        if registry.kind.endswith(words):
            return key
    return None


def annotate(schema: dict, found: dict[str, Registry] | None = None) -> dict:
    """A copy of the JSON ``schema`` (a pydantic model's) in which every property that names a
    policy -- in the root and in ``$defs`` -- carries ``"x-registry": <registry key>``."""
    found = registries() if found is None else found
    schema = copy.deepcopy(schema)
    defs = schema.get("$defs", {})
    for node in [schema, *defs.values()]:
        for field, raw in (node.get("properties") or {}).items():
            ref = _resolve(raw, defs)
            if _is_policy_ref(ref):
                key = _registry_of(field, raw, ref, found)
                if key is not None:
                    raw[REGISTRY_KEY] = key
    return schema


def policy_fields(schema: dict) -> Iterator[tuple[tuple[str, ...], str, dict]]:
    """``(path, registry key, property schema)`` of every field of an :func:`annotate`-d schema
    that names a policy, reachable from its root; path parts are property names, ``"*"`` for the
    items of a list (``("platform", "clusters", "*", "scheduler")``)."""
    defs = schema.get("$defs", {})

    def walk(node: dict, path: tuple[str, ...], seen: frozenset) -> Iterator:
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            if name in seen:  # (a recursive model)
                return
            node, seen = defs.get(name, {}), seen | {name}
        for alternative in (*node.get("anyOf", ()), *node.get("oneOf", ()), *node.get("allOf", ())):
            yield from walk(alternative, path, seen)
        for field, raw in (node.get("properties") or {}).items():
            if REGISTRY_KEY in raw:
                yield (*path, field), raw[REGISTRY_KEY], raw
            else:
                yield from walk(raw, (*path, field), seen)
        if isinstance(node.get("items"), dict):
            yield from walk(node["items"], (*path, "*"), seen)

    seen_paths = set()
    for path, key, raw in walk(schema, (), frozenset()):
        if path not in seen_paths:  # (the alternatives of a union may share a field)
            seen_paths.add(path)
            yield path, key, raw


def params_schema(registry: Registry, name: str, found: dict[str, Registry] | None = None) -> dict:
    """The JSON schema of policy ``name``'s parameters, :func:`annotate`-d."""
    return annotate(registry.get(name).params.model_json_schema(), found)


def scenario_schema(found: dict[str, Registry] | None = None) -> dict:
    """The scenario document's JSON schema, :func:`annotate`-d."""
    from simengine.scenario import Scenario  # (imports the whole schema: only when asked)

    return annotate(Scenario.model_json_schema(by_alias=True), found)


def allowed_names(raw: dict, schema: dict, registry: Registry) -> list[str]:
    """The names a policy field accepts: its ``enum`` (a field may offer part of a registry, e.g.
    KOALA's preemption has no suspend), else every name of ``registry``."""
    names = _resolve(raw, schema.get("$defs", {}))["properties"]["name"].get("enum")
    return [n for n in registry.names() if n in names] if names else registry.names()


class Named(NamedTuple):
    """A policy a scenario document names: where, from which registry, which, and the names that
    field takes."""

    path: str
    registry: str
    name: str
    allowed: list[str]


def named_policies(document: dict, found: dict[str, Registry] | None = None) -> list[Named]:
    """Every policy a scenario document names (e.g. a validated scenario's ``model_dump(mode="json")``),
    nested ones too (a policy named in another policy's params), in the schema's order; names
    unknown to their registry are left out."""
    found = registries() if found is None else found
    out: list[Named] = []

    def at(node: Any, path: tuple[str, ...], where: list[str]) -> Iterator[tuple[list[str], Any]]:
        if not path:
            yield where, node
        elif path[0] == "*":
            for i, item in enumerate(node if isinstance(node, list) else ()):
                yield from at(item, path[1:], [*where, str(i)])
        elif isinstance(node, dict) and path[0] in node:
            yield from at(node[path[0]], path[1:], [*where, path[0]])

    def visit(node: Any, schema: dict, where: list[str], depth: int) -> None:
        for path, key, raw in policy_fields(schema):
            for place, ref in at(node, path, where):
                registry = found[key]
                if not (isinstance(ref, dict) and isinstance(ref.get("name"), str) and ref["name"] in registry):
                    continue
                out.append(Named(".".join(place), key, ref["name"], allowed_names(raw, schema, registry)))
                if depth < 8:  # (a policy naming a policy naming ...: a bound, not a model's need)
                    visit(ref.get("params") or {}, params_schema(registry, ref["name"], found),
                          [*place, "params"], depth + 1)

    visit(document, scenario_schema(found), [], 0)
    return out
