"""Bokeh figures of the run, compare and sweep pages (built in Python, embedded with
``bokeh.embed.components``; BokehJS of the same version is served from ``static/bokeh/``).

The figures read a run's stored result arrays (``gantt_data.result_arrays``): the time series
of replication 0 (``series_*``) and the jobs of every replication (``jobs_*``). Distributions
count the *measured* jobs, as the metrics do (docs/output.md): not warm-up, completed or killed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from bokeh.core.properties import value as literal
from bokeh.embed import components
from bokeh.models import ColumnDataSource, FactorRange, HoverTool, Whisker
from bokeh.palettes import Category10_10
from bokeh.plotting import figure
from bokeh.transform import dodge

from simengine.results import measured_rows
from simengine.statistics import stored_shaky

PLOT_HEIGHT = 260
LEGEND_ROW = 20  # pixels per legend item under a figure
LEGEND_CHARS = 48  # longer legend labels are cut (the full name is in the page's table)
TOOLS = "pan,wheel_zoom,box_zoom,reset,save"


def colour(i: int) -> str:
    return Category10_10[i % len(Category10_10)]


def _figure(title: str, x_label: str, y_label: str, **kwargs: Any):
    fig = figure(title=title, height=PLOT_HEIGHT, sizing_mode="stretch_width", tools=TOOLS,
                 x_axis_label=x_label, y_axis_label=y_label, **kwargs)
    fig.toolbar.logo = None
    return fig


def legend_below(fig, ncols: int = 1) -> None:
    """Move the legend under the plot in ``ncols`` columns (the figure grows to keep its plot
    area): inside, it hid the points and lines in its corner. Clicking an item hides its line."""
    if not fig.legend:
        return
    legend = fig.legend[0]
    legend.click_policy = "hide"
    legend.ncols = ncols
    legend.location = "top_left"
    for item in legend.items:  # a label cannot wrap: a long one ran past the figure's edge
        text = getattr(item.label, "value", None)
        if isinstance(text, str) and len(text) > LEGEND_CHARS:
            item.label = literal(text[:LEGEND_CHARS - 1] + "…")
    fig.center = [r for r in fig.center if r is not legend]
    fig.add_layout(legend, "below")
    fig.height = PLOT_HEIGHT + LEGEND_ROW * math.ceil(len(legend.items) / ncols)


def time_unit(longest: float) -> tuple[float, str]:
    """Seconds per unit and the unit's name for an axis whose values reach ``longest`` seconds:
    a year-long trace reads better in days than in tens of millions of seconds."""
    if longest >= 3 * 86400:
        return 86400.0, "days"
    if longest >= 3 * 3600:
        return 3600.0, "hours"
    return 1.0, "s"


def embed(figures: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """``(script, {name: div})`` for a template; nothing when there are no figures."""
    if not figures:
        return "", {}
    script, divs = components(figures)
    return script, divs


# --- What the figures plot -----------------------------------------------------------------------

def measured(arrays: dict[str, np.ndarray], column: str) -> np.ndarray:
    """``column`` of the measured jobs of every replication, without NaNs: the rows the engine's
    job metrics average (its ``measured`` column; results stored before it existed: the engine's
    usual rule, simengine.results.measured_rows)."""
    if "jobs_measured" in arrays:
        keep = arrays["jobs_measured"].astype(bool)
    else:
        keep = measured_rows({k.removeprefix("jobs_"): v for k, v in arrays.items() if k.startswith("jobs_")})
    values = arrays[f"jobs_{column}"][keep].astype(float)
    return values[np.isfinite(values)]


def utilisation_series(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``{"all": u, "<cluster>": u, ...}`` over ``series_time`` (replication 0)."""
    out = {"all": arrays["series_utilisation"]} if "series_utilisation" in arrays else {}
    for name, values in arrays.items():
        if name.startswith("series_utilisation."):
            out[name.removeprefix("series_utilisation.")] = values
    return out


def wait_bins(values: Sequence[np.ndarray], bins: int = 40) -> np.ndarray:
    """Common linear bins from 0 to the largest 99th percentile (a few long waits would
    otherwise squeeze every other job into the first bin)."""
    tops = [float(np.percentile(v, 99)) for v in values if len(v)]
    top = max(tops, default=1.0) or 1.0
    return np.linspace(0.0, top, bins + 1)


def slowdown_bins(values: Sequence[np.ndarray], bins: int = 40) -> np.ndarray:
    """Common log-spaced bins for bounded slowdowns (which are at least 1)."""
    tops = [float(v.max()) for v in values if len(v)]
    top = max(max(tops, default=10.0), 1.01)
    return np.logspace(0.0, math.log10(top), bins + 1)


def fractions(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Fraction of the jobs in each bin (values beyond the last edge count in the last bin)."""
    if not len(values):
        return np.zeros(len(edges) - 1)
    counts, _ = np.histogram(np.clip(values, edges[0], edges[-1]), bins=edges)
    return counts / len(values)


# --- One run ---------------------------------------------------------------------------------------

def run_figures(arrays: dict[str, np.ndarray] | None) -> dict[str, Any]:
    """Utilisation over time, wait and bounded-slowdown distributions of one run."""
    if arrays is None:
        return {}
    figures: dict[str, Any] = {}
    series = utilisation_series(arrays)
    if "series_time" in arrays and series:
        scale, unit = time_unit(float(arrays["series_time"].max(initial=0.0)))
        fig = _figure("Utilisation over time (replication 0)", f"simulated time ({unit})", "utilisation",
                      y_range=(0, 1.05))
        time = arrays["series_time"] / scale
        for i, (name, values) in enumerate(series.items()):
            fig.step(time, values, mode="after", color="black" if name == "all" else colour(i - 1),
                     line_width=2 if name == "all" else 1, legend_label="all clusters" if name == "all" else name)
        legend_below(fig, ncols=3)  # short names: clusters
        figures["utilisation"] = fig
    wait = measured(arrays, "wait")
    if len(wait):
        edges = wait_bins([wait])
        scale, unit = time_unit(float(edges[-1]))
        fig = _figure(f"Wait time ({len(wait):,} measured jobs; the last bin holds the slowest 1%)",
                      f"wait ({unit})", "fraction of jobs")
        fig.quad(left=edges[:-1] / scale, right=edges[1:] / scale, bottom=0, top=fractions(wait, edges),
                 fill_color=colour(0), line_color="white")
        figures["wait"] = fig
    slowdown = measured(arrays, "bounded_slowdown")
    if len(slowdown):
        edges = slowdown_bins([slowdown])
        fig = _figure("Bounded slowdown", "bounded slowdown (log scale)", "fraction of jobs", x_axis_type="log")
        fig.quad(left=edges[:-1], right=edges[1:], bottom=0, top=fractions(slowdown, edges),
                 fill_color=colour(1), line_color="white")
        figures["slowdown"] = fig
    return figures


# --- Several runs ------------------------------------------------------------------------------------

def compare_figures(labelled: list[tuple[str, dict[str, np.ndarray] | None]]) -> dict[str, Any]:
    """Overlaid utilisation over time and wait distributions of several runs (same bins)."""
    present = [(label, arrays) for label, arrays in labelled if arrays is not None]
    if not present:
        return {}
    figures: dict[str, Any] = {}
    longest = max((float(a["series_time"].max(initial=0.0)) for _, a in present if "series_time" in a), default=0.0)
    scale, unit = time_unit(longest)
    util = _figure("Utilisation over time (all clusters, replication 0)", f"simulated time ({unit})", "utilisation",
                   y_range=(0, 1.05))
    for i, (label, arrays) in enumerate(present):
        if "series_time" in arrays and "series_utilisation" in arrays:
            util.step(arrays["series_time"] / scale, arrays["series_utilisation"], mode="after", color=colour(i),
                      line_width=2, legend_label=label)
    legend_below(util)
    figures["utilisation"] = util
    waits = [measured(arrays, "wait") for _, arrays in present]
    edges = wait_bins(waits)
    scale, unit = time_unit(float(edges[-1]))
    wait = _figure("Wait time distribution (measured jobs; the last bin holds the slowest 1%)", f"wait ({unit})",
                   "fraction of jobs")
    centres = (edges[:-1] + edges[1:]) / 2 / scale
    for i, ((label, _), values) in enumerate(zip(present, waits)):
        wait.step(centres, fractions(values, edges), mode="center", color=colour(i), line_width=2,
                  legend_label=label)
    legend_below(wait)
    figures["wait"] = wait
    return figures


# --- Sweeps --------------------------------------------------------------------------------------------

#: path parts that only say where a setting lives, left out of a parameter's label
_CONTAINERS = {"platform", "workload", "run", "grid", "params", "stop", "warmup"}
#: collections whose items a path names by index: ``clusters.0`` reads "cluster 0"
_ITEMS = {"clusters": "cluster", "streams": "stream", "reservations": "reservation", "file_sites": "file site"}


def parameter_label(path: str) -> str:
    """A swept parameter as a person reads it: ``workload.streams.0.arrival.target_load`` ->
    "arrival target load (stream 0)", ``platform.clusters.1.scheduler.name`` -> "scheduler name
    (cluster 1)"."""
    parts = path.split(".")
    where, words = [], []
    i = 0
    while i < len(parts):
        part = parts[i]
        if part in _ITEMS and i + 1 < len(parts) and parts[i + 1].isdigit():
            where.append(f"{_ITEMS[part]} {parts[i + 1]}")
            i += 2
            continue
        if part not in _CONTAINERS and not part.isdigit():
            words.append(part.replace("_", " "))
        i += 1
    label = " ".join(words[-2:]) if words else path
    return f"{label} ({', '.join(where)})" if where else label


def sweep_figure(points: list[dict[str, Any]], x_parameter: str, metric: str):
    """The ``metric`` mean with its 95% CI (error bars) against ``x_parameter``; one series per
    combination of the other swept parameters. ``points``: ``{"values": {path: value},
    "metrics": {name: {"mean", "ci_low", "ci_high"}}}``. A numeric x draws lines; a categorical
    one (scheduler names ...) draws the series side by side within each category, unjoined, so
    none hides another."""
    xs = [p["values"].get(x_parameter) for p in points]
    categorical = not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in xs)
    factors = list(dict.fromkeys(str(x) for x in xs)) if categorical else None
    kwargs: dict[str, Any] = {"x_range": FactorRange(*factors)} if categorical else {}
    x_label = parameter_label(x_parameter)
    fig = _figure(f"{metric} against {x_label} (mean, 95% CI)", x_label, metric, **kwargs)
    groups: dict[str, list[dict[str, Any]]] = {}
    for p in points:
        others = ", ".join(f"{parameter_label(k)} = {v}" for k, v in p["values"].items() if k != x_parameter)
        groups.setdefault(others, []).append(p)
    width = 0.7 / max(len(groups), 1)  # of a category, for each series
    for i, (label, members) in enumerate(groups.items()):
        rows = [m for m in members if (m["metrics"].get(metric) or {}).get("mean") is not None]
        if not categorical:
            rows.sort(key=lambda m: m["values"][x_parameter])
        data = {
            "x": [str(m["values"][x_parameter]) if categorical else m["values"][x_parameter] for m in rows],
            "mean": [m["metrics"][metric]["mean"] for m in rows],
            # no interval (one replication): the bar collapses onto the mean
            "low": [_or(m["metrics"][metric].get("ci_low"), m["metrics"][metric]["mean"]) for m in rows],
            "high": [_or(m["metrics"][metric].get("ci_high"), m["metrics"][metric]["mean"]) for m in rows],
            # (a sweep's table keeps the replication count, a run's summary the values)
            "shaky": [stored_shaky(m["metrics"][metric], m["metrics"][metric].get("replications")) or ""
                      for m in rows],
        }
        data["fill"] = ["white" if s else colour(i) for s in data["shaky"]]
        source = ColumnDataSource(data)
        extra = {"legend_label": label} if label else {}
        x = dodge("x", (i - (len(groups) - 1) / 2) * width, range=fig.x_range) if categorical else "x"
        if not categorical:
            fig.line("x", "mean", source=source, color=colour(i), line_width=2, **extra)
        fig.scatter(x, "mean", source=source, line_color=colour(i), fill_color="fill", size=8, **extra)
        fig.add_layout(Whisker(source=source, base=x, lower="low", upper="high", line_color=colour(i)))
        # Annotations do not stretch the automatic y range: an invisible segment over each CI does.
        fig.segment(x, "low", x, "high", source=source, line_alpha=0)
    fig.add_tools(HoverTool(tooltips=[(x_parameter, "@x"), (metric, "@mean"), ("95% CI", "@low – @high"),
                                      ("", "@shaky")]))
    if any(groups):
        legend_below(fig)
    return fig


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value
