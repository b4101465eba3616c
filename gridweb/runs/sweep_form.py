"""The "new sweep" form: which parameters of a saved scenario to sweep, over which values.

The page (``/sweeps/new/?scenario=<id>``, view ``runs.views.sweep_new``) posts a plain HTML
form: the sweep's name, tags and sharing, optional overrides of the scenario's replications and
seed, and one row per swept parameter — its dotted path and its values, as a comma-separated
list (``0.5, 0.7, 0.9``; numbers are read as numbers, ``true``/``false`` as booleans, anything
else as text) or as a range (start, stop, step; the stop is included when a step lands on it).
``gridweb.runs.services.create_sweep`` then validates every point of the grid.

Errors are keyed so the page can put each one beside what it concerns (docs/gallery.md, Sweeps):
``param-<i>`` for row *i*, a form field's name (``name``, ``replications``, ``visibility``, ...),
``parameters`` for the grid as a whole, ``""`` for the rest.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.http import QueryDict

from gridweb.scenarios.forms import SharingForm
from simengine import policy_fields
from simengine.scenario import Scenario

from .services import MAX_SWEEP_POINTS

#: Most rows (swept parameters) one form takes.
MAX_ROWS = 12
#: Most values one range may expand to (more could never fit in a sweep anyway).
MAX_RANGE_VALUES = MAX_SWEEP_POINTS
#: Leaf keys that are not worth sweeping: labels and names others refer to, discriminators,
#: file references. A policy's ``name`` (a dict with ``params`` beside it) is kept.
NOT_SWEPT = {"name", "description", "kind", "process", "format", "path", "preset", "site_map"}

ROW_FIELD = re.compile(r"^param-(\d+)-(path|values|start|stop|step)$")
INTEGER = re.compile(r"^[+-]?\d+$")


# --- Values ------------------------------------------------------------------------------------


def parse_value(text: str) -> Any:
    """One value as typed: an integer, a number, ``true``/``false``, or text (quotes force text)."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    if INTEGER.match(text):
        return int(text)
    try:
        number = float(text)
    except ValueError:
        pass
    else:
        if math.isfinite(number):
            return number
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    return text


def parse_values(text: str) -> list[Any]:
    """A comma-separated list of values (raises ``ValueError`` naming the bad item)."""
    items = text.split(",")
    values: list[Any] = []
    for position, item in enumerate(items, start=1):
        if not item.strip():
            raise ValueError(f"value {position} of {len(items)} is empty (two commas in a row, or a comma at the end)")
        value = parse_value(item)
        if value in values and type(value) is type(values[values.index(value)]):
            raise ValueError(f"{item.strip()!r} is given twice: every value makes its own points")
        values.append(value)
    return values


def range_values(start: str, stop: str, step: str) -> list[Any]:
    """``start, start + step, ...`` up to ``stop`` included (raises ``ValueError``).

    Integers stay integers when all three are; otherwise the values are rounded to 10 decimals so
    ``0.1`` steps read as typed (0.3, not 0.30000000000000004).
    """
    numbers = []
    for label, text in (("start", start), ("stop", stop), ("step", step)):
        value = parse_value(text) if text.strip() else None
        if value is None or isinstance(value, (bool, str)):
            raise ValueError(f"the range's {label} must be a number" + (f", not {text.strip()!r}" if text.strip() else ""))
        numbers.append(value)
    first, last, increment = numbers
    if increment == 0:
        raise ValueError("the range's step must not be 0")
    if (last - first) * increment < 0:
        raise ValueError(f"a step of {increment:g} never gets from {first:g} to {last:g}")
    count = math.floor((last - first) / increment + 1e-9) + 1
    if count > MAX_RANGE_VALUES:
        raise ValueError(f"the range has {count} values; a sweep has at most {MAX_SWEEP_POINTS} points")
    integers = all(isinstance(n, int) for n in numbers)
    return [first + i * increment if integers else round(first + i * increment, 10) for i in range(count)]


# --- Rows --------------------------------------------------------------------------------------


@dataclass
class ParameterRow:
    """One swept parameter as typed in the form (``index`` is the row's number in the page)."""

    index: int
    path: str = ""
    values_text: str = ""
    start: str = ""
    stop: str = ""
    step: str = ""
    values: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"param-{self.index}"

    @property
    def blank(self) -> bool:
        return not any(s.strip() for s in (self.path, self.values_text, self.start, self.stop, self.step))

    def parse(self) -> None:
        """Fill ``values`` from the values box, or from the range when the box is empty."""
        if not self.path.strip():
            self.errors.append("give the dotted path of the parameter to sweep, e.g. run.seed")
        elif " " in self.path.strip():
            self.errors.append(f"{self.path.strip()!r}: a dotted path has no spaces, e.g. platform.clusters.0.processors")
        try:
            if self.values_text.strip():
                self.values = parse_values(self.values_text)
            elif any(s.strip() for s in (self.start, self.stop, self.step)):
                self.values = range_values(self.start, self.stop, self.step)
            else:
                self.errors.append("give the values (comma-separated) or a range (start, stop, step)")
        except ValueError as exc:
            self.errors.append(str(exc))


def parameter_rows(data: QueryDict) -> list[ParameterRow]:
    """The non-blank rows of a posted form, in page order (blank rows are ignored)."""
    rows: dict[int, ParameterRow] = {}
    for key in data:
        match = ROW_FIELD.match(key)
        if match:
            index = int(match.group(1))
            row = rows.setdefault(index, ParameterRow(index))
            name = "values_text" if match.group(2) == "values" else match.group(2)
            setattr(row, name, data.get(key, "")[:10_000])
    return [row for _, row in sorted(rows.items()) if not row.blank]


def check_rows(rows: list[ParameterRow]) -> dict[str, list[str]]:
    """Parse every row; the errors of the rows themselves (before the engine sees the grid)."""
    errors: dict[str, list[str]] = {}
    if not rows:
        return {"parameters": ["add at least one parameter to sweep, with its values"]}
    if len(rows) > MAX_ROWS:
        return {"parameters": [f"at most {MAX_ROWS} swept parameters (got {len(rows)})"]}
    seen: dict[str, int] = {}
    for position, row in enumerate(rows, start=1):
        row.parse()
        path = row.path.strip()
        if path in seen:
            row.errors.append(f"{path} is already swept in row {seen[path]}: give all its values there")
        elif path:
            seen[path] = position
        if row.errors:
            errors[row.key] = row.errors
    if not errors:
        points = math.prod(len(row.values) for row in rows)
        if points > MAX_SWEEP_POINTS:
            errors["parameters"] = [f"the grid has {points} points; a sweep has at most {MAX_SWEEP_POINTS}"]
    return errors


def grid_of(rows: list[ParameterRow]) -> dict[str, list[Any]]:
    return {row.path.strip(): row.values for row in rows}


# --- Where create_sweep's errors go -------------------------------------------------------------


def _related(a: str, b: str) -> bool:
    """True when one dotted path is the other or lies inside it."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def collapse_points(messages: list[str], row_path: str | None = None) -> list[str]:
    """One line per distinct problem instead of one per point.

    ``create_sweep`` prefixes a point's problem with the point's values (``a=1, b=x: message``);
    the same problem at several points is said once: with the values of ``row_path`` involved
    (``a = 1, 2: message``) when the row is known, else with the number of points and one example.
    """
    by_problem: dict[str, list[str]] = {}
    lines: list[str] = []
    for message in messages:
        label, colon, problem = message.partition(": ")
        if colon and "=" in label:
            by_problem.setdefault(problem, []).append(label)
        else:
            lines.append(message)
    for problem, labels in by_problem.items():
        values: list[str] = []
        for label in labels:
            for part in label.split(", "):
                key, _, value = part.partition("=")
                if key == row_path and value not in values:
                    values.append(value)
        if values:
            lines.append(f"{row_path} = {', '.join(values)}: {problem}")
        elif len(labels) == 1:
            lines.append(f"{labels[0]}: {problem}")
        else:
            lines.append(f"{problem} (at {len(labels)} points, e.g. {labels[0]})")
    return lines


def place_errors(errors: dict[str, list[str]], rows: list[ParameterRow], overridden: set[str]
                 ) -> dict[str, list[str]]:
    """``create_sweep``'s errors (keys: ``parameters.<path>``, scenario paths, ``visibility``,
    ``group``) under the page's keys: beside the row of the parameter they concern, beside the
    replications or seed field when the form set that field, else with their path at the top.

    ``overridden`` holds the scenario paths the form set (``run.replications``, ``run.seed``).
    """
    fields = {"run.replications": "replications", "run.seed": "seed"}
    placed: dict[str, list[str]] = {}
    by_path = {row.path.strip(): row for row in rows}
    for key, messages in errors.items():
        if key in ("visibility", "group", "parameters"):
            placed.setdefault(key, []).extend(messages)
            continue
        path = key.removeprefix("parameters.")
        row = by_path.get(path)
        if row is None and not key.startswith("parameters."):
            related = [r for p, r in by_path.items() if _related(p, path)]
            row = related[0] if len(related) == 1 else None
        if row is not None:
            where = row.key
            found = collapse_points(messages, row.path.strip())
            if path != row.path.strip():
                found = [f"{path}: {m}" for m in found]
        elif path in fields and path in overridden:
            where, found = fields[path], collapse_points(messages)
        else:
            where, found = "", [f"{path}: {m}" if path else m for m in collapse_points(messages)]
        placed.setdefault(where, []).extend(found)
    return placed


# --- The form ----------------------------------------------------------------------------------


class SweepForm(SharingForm):
    """Name, tags, sharing and the overrides; the rows are read by :func:`parameter_rows`."""

    name = forms.CharField(max_length=200)
    replications = forms.IntegerField(required=False, min_value=1, max_value=1000,
                                      help_text="replications of every point (empty: the scenario's)")
    seed = forms.IntegerField(required=False, min_value=0, help_text="the base seed of every point (empty: the scenario's)")

    field_order = ["name", "tags", "visibility", "group", "replications", "seed"]

    def overrides(self) -> dict[str, int]:
        """``{"run.replications": n, "run.seed": s}`` for the fields that were filled in."""
        data = self.cleaned_data
        return {path: data[name] for path, name in (("run.replications", "replications"), ("run.seed", "seed"))
                if data.get(name) is not None}


def with_overrides(spec: dict[str, Any], overrides: dict[str, int]) -> dict[str, Any]:
    """A copy of ``spec`` whose ``run`` section has the overridden values."""
    spec = {**spec, "run": dict(spec["run"]) if isinstance(spec.get("run"), dict) else {}}
    for path, value in overrides.items():
        spec["run"][path.split(".", 1)[1]] = value
    return spec


# --- Suggestions -------------------------------------------------------------------------------


def _policy_choices(data: dict[str, Any]) -> dict[str, list[str]]:
    """Dotted path of each policy the scenario document ``data`` names (``platform.clusters.0.scheduler``,
    ``grid.workflow_scheduling.params.admission``, ...) -> the names its registry offers there."""
    return {named.path: named.allowed for named in policy_fields.named_policies(data)}


def sweepable_parameters(scenario: Scenario | None) -> list[dict[str, Any]]:
    """The sweepable leaves of a validated scenario: ``[{"path", "value", "type", "choices"}]``.

    Read with the defaults filled in, so ``run.replications`` or a policy's parameters are there
    even when the document leaves them out: every number, text and yes/no leaf, and every
    policy's ``name`` with the names its registry offers as ``choices``. Names that other fields
    refer to (clusters, streams), kinds and file paths are left out. Empty for ``None`` (a
    scenario that does not validate).
    """
    if scenario is None:
        return []
    data = scenario.model_dump(mode="json")
    choices = _policy_choices(data)
    found: list[dict[str, Any]] = []

    def walk(node: Any, path: list[str]) -> None:
        if isinstance(node, dict):
            is_policy = "name" in node and "params" in node
            for key, value in node.items():
                if key == "name" and is_policy:
                    found.append({"path": ".".join([*path, key]), "value": value, "type": "policy",
                                  "choices": choices.get(".".join(path), [])})
                elif key not in NOT_SWEPT:
                    walk(value, [*path, key])
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, [*path, str(i)])
        elif isinstance(node, bool):
            found.append({"path": ".".join(path), "value": node, "type": "boolean", "choices": [True, False]})
        elif isinstance(node, (int, float)):
            found.append({"path": ".".join(path), "value": node,
                          "type": "integer" if isinstance(node, int) else "number", "choices": []})
        elif isinstance(node, str):
            found.append({"path": ".".join(path), "value": node, "type": "text", "choices": []})

    walk(data, [])
    return found
