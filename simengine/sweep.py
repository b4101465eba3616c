"""Parameter sweeps: a grid over scenario fields, each point run with its replications.

``expand_sweep`` turns a base scenario and ``{"dotted.path": [values...]}`` into one
validated scenario per point of the cartesian product (the web app fans these out as
Celery tasks); ``sweep`` runs them and ``SweepResult`` tabulates each point's metrics
with their 95% confidence intervals.
"""
from __future__ import annotations

import copy
import csv
import itertools
import json
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from simengine.errors import FieldError, ScenarioError
from simengine.scenario import NAME_MAX, Scenario, load_scenario, scenario_hash, trace_base_dir
from simengine.runner import run

#: Metrics put in the sweep table (when the runs have them).
TABLE_METRICS = ("mean_wait", "mean_response", "mean_slowdown", "mean_bounded_slowdown", "utilisation",
                 "throughput")


def _set_path(data: dict, path: str, value: Any) -> None:
    """Set ``value`` at a dotted ``path`` (list items by index) inside a scenario dict."""
    keys = path.split(".")
    node: Any = data
    for i, key in enumerate(keys[:-1]):
        nxt = keys[i + 1]
        if isinstance(node, list):
            if not key.isdigit() or int(key) >= len(node):
                raise ScenarioError(FieldError(f"sweep.{path}", f"no item {key} at '{'.'.join(keys[:i])}'"))
            node = node[int(key)]
        else:
            if key not in node or node[key] is None:
                node[key] = [] if nxt.isdigit() else {}
            node = node[key]
    last = keys[-1]
    if isinstance(node, list):
        if not last.isdigit() or int(last) >= len(node):
            raise ScenarioError(FieldError(f"sweep.{path}", f"no item {last} in '{'.'.join(keys[:-1])}'"))
        node[int(last)] = value
    else:
        node[last] = value


def _reset_params(data: dict, policy_path: str) -> None:
    node: Any = data
    for key in policy_path.split("."):
        node = node[int(key)] if isinstance(node, list) else node.get(key)
        if node is None:
            return
    if isinstance(node, dict) and "params" in node:
        node["params"] = {}


def point_name(base: str, label: str, most: int = NAME_MAX) -> str:
    """A sweep point's name, "<base> [<point>]", cut to ``most`` characters (the base first:
    the point is what tells the points apart)."""
    name = f"{base} [{label}]"
    if len(name) <= most:
        return name
    label = label if len(label) <= most // 2 else label[:most // 2 - 1] + "…"
    return f"{base[:max(0, most - len(label) - 4)]}… [{label}]"


def expand_sweep(base: Any, parameters: dict[str, list], *, base_dir: str | None = None
                 ) -> list[tuple[dict[str, Any], Scenario]]:
    """One (point, scenario) per combination of ``parameters`` values, in grid order.

    Every point is validated; all problems of all points are reported together, each
    field path prefixed with the point's parameter values. Sweeping a policy's ``name``
    resets its ``params`` to that policy's defaults unless the sweep sets them too.
    """
    if not parameters:
        raise ScenarioError(FieldError("sweep", "give at least one parameter to sweep"))
    for path, values in parameters.items():
        if not isinstance(values, (list, tuple)) or not values:
            raise ScenarioError(FieldError(f"sweep.{path}", "needs a non-empty list of values"))
    base_scenario = base if isinstance(base, Scenario) else load_scenario(base, base_dir=base_dir)
    data = base_scenario.model_dump(mode="json")
    names = list(parameters)
    points, problems = [], []
    for combo in itertools.product(*(parameters[n] for n in names)):
        point = dict(zip(names, combo))
        d = copy.deepcopy(data)
        for path, value in point.items():
            _set_path(d, path, value)
            if path.endswith(".name"):
                # another policy: the old one's parameters do not apply, unless also swept
                parent = path[: -len(".name")]
                if not any(q.startswith(parent + ".params") for q in point):
                    _reset_params(d, parent)
        label = ", ".join(f"{k}={v}" for k, v in point.items())
        d["name"] = point_name(base_scenario.name, label)
        try:
            points.append((point, load_scenario(d, base_dir=base_dir or trace_base_dir(base_scenario))))
        except ScenarioError as e:
            problems += [FieldError(f"[{label}] {err.path}", err.message) for err in e.errors]
    if problems:
        raise ScenarioError(problems, source="sweep")
    return points



@dataclass
class SweepPoint:
    parameters: dict[str, Any]
    scenario_hash: str
    summary: dict[str, Any]


@dataclass
class SweepResult:
    base_name: str
    parameters: list[str]
    points: list[SweepPoint]

    def table(self) -> list[dict[str, Any]]:
        """One row per point: parameter values, then mean and 95% CI of each table metric."""
        rows = []
        for p in self.points:
            row = dict(p.parameters)
            for m in TABLE_METRICS:
                v = p.summary["metrics"].get(m)
                if v is not None:
                    row[m], row[f"{m}_ci_low"], row[f"{m}_ci_high"] = v["mean"], v["ci_low"], v["ci_high"]
            row["scenario_hash"] = p.scenario_hash
            rows.append(row)
        return rows

    def write(self, out_dir: str | os.PathLike) -> Path:
        """``sweep.csv`` (the table) and ``points/<k>/summary.json`` for every point."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        rows = self.table()
        columns = list(dict.fromkeys(k for r in rows for k in r))
        with open(out / "sweep.csv", "w", newline="") as fh:
            w = csv.DictWriter(fh, columns)
            w.writeheader()
            w.writerows(rows)
        for k, p in enumerate(self.points):
            (out / "points" / str(k)).mkdir(parents=True, exist_ok=True)
            (out / "points" / str(k) / "summary.json").write_text(
                json.dumps({"parameters": p.parameters, **p.summary}, indent=2) + "\n")
        return out


def _run_point(scenario_json: str, base_dir: str | None) -> dict[str, Any]:
    return run(load_scenario(scenario_json, base_dir=base_dir), workers=1).summary()


def sweep(base: Any, parameters: dict[str, list], *, workers: int | None = None,
          on_point: Callable[[int, SweepPoint], None] | None = None, base_dir: str | None = None) -> SweepResult:
    """Run every point of the grid (in a process pool when ``workers`` > 1) and tabulate them."""
    points = expand_sweep(base, parameters, base_dir=base_dir)
    n_workers = workers if workers is not None else min(len(points), os.cpu_count() or 1)
    results: list[SweepPoint] = []
    jobs = [(s.model_dump_json(), trace_base_dir(s)) for _, s in points]
    if n_workers > 1 and len(points) > 1:
        with ProcessPoolExecutor(max_workers=n_workers) as pool:
            summaries = pool.map(_run_point, *zip(*jobs))
            for k, ((point, scenario), summary) in enumerate(zip(points, summaries)):
                results.append(SweepPoint(point, scenario_hash(scenario), summary))
                if on_point:
                    on_point(k, results[-1])
    else:
        for k, ((point, scenario), job) in enumerate(zip(points, jobs)):
            results.append(SweepPoint(point, scenario_hash(scenario), _run_point(*job)))
            if on_point:
                on_point(k, results[-1])
    base_name = points[0][1].name.split(" [")[0]
    return SweepResult(base_name, list(parameters), results)
