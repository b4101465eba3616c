"""Every field of the scenario schema carries a description: the browser builder shows it as help text
next to the field's input (gridweb/scenarios/catalog.py hands it Scenario.model_json_schema(by_alias=True))."""

from simengine.scenario import Scenario


def _undescribed(schema: dict) -> list[str]:
    """``Model.field`` for every property, of every model and of the top level, without a non-empty description."""
    models = {"Scenario": schema, **schema.get("$defs", {})}
    return sorted(
        f"{model}.{field}"
        for model, definition in models.items()
        for field, prop in definition.get("properties", {}).items()
        if not str(prop.get("description", "")).strip()
    )


def test_every_scenario_field_has_a_description():
    schema = Scenario.model_json_schema(by_alias=True)
    missing = _undescribed(schema)
    assert not missing, (
        f"{len(missing)} scenario field(s) without a description (give them Field(..., description=...), "
        f"see docs/scenario.md): {', '.join(missing)}"
    )


def test_the_check_sees_nested_models_and_aliases():
    # the checker itself must be able to fail: a nested model's field and an aliased field are caught
    schema = {
        "properties": {"name": {"type": "string", "description": "A label"}, "run": {"$ref": "#/$defs/Run"}},
        "$defs": {
            "Run": {"properties": {"seed": {"type": "integer"}, "mean": {"type": "number", "description": " "}}},
            "Stop": {"properties": {"horizon": {"description": "End time (s)"}}},
        },
    }
    assert _undescribed(schema) == ["Run.mean", "Run.seed", "Scenario.run"]


def test_schema_covers_the_models_the_builder_draws():
    # the walk above only means something if the nested models really are in $defs
    defs = Scenario.model_json_schema(by_alias=True)["$defs"]
    for model in ("Cluster", "SyntheticStream", "KoalaStream", "Exponential", "BoundedPareto", "Stage", "Warmup"):
        assert model in defs
    assert "mean" in defs["BoundedPareto"]["properties"]  # by alias, as the builder sees it
