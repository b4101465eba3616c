"""Side by side: the metrics table of one or more runs (mean and 95% CI) and the scenario diff.

The run page shows the table of one run; ``/compare/?runs=1,2,...`` shows several runs' columns
side by side, their overlaid plots (``plots.compare_figures``) and the dotted paths of the
scenario documents whose values differ.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from simengine.statistics import paired_difference, stored_shaky, within_domain

#: Metrics in the order the table lists them, with a label and a unit (docs/output.md, "Metrics").
METRICS: dict[str, tuple[str, str]] = {
    "jobs_measured": ("jobs measured", ""),
    "mean_wait": ("mean wait", "s"),
    "p95_wait": ("95th percentile wait", "s"),
    "mean_response": ("mean response", "s"),
    "max_response": ("max response", "s"),
    "mean_slowdown": ("mean slowdown", ""),
    "mean_bounded_slowdown": ("mean bounded slowdown", ""),
    "utilisation": ("utilisation", ""),
    "throughput": ("throughput", "jobs/s"),
    "makespan": ("makespan", "s"),
    # runs with advance reservations or preemption (docs/reservations.md)
    "reservations_accepted": ("reservations accepted", ""),
    "reservations_rejected": ("reservations rejected", ""),
    "preemptions": ("preemptions", ""),
    "jobs_preempted_killed": ("jobs killed for good (preemption or failure)", ""),
    "lost_work": ("work lost to kills (preemption, failures)", "processor-s"),
    # runs with resource failures (docs/failures.md)
    "availability": ("availability (processor time up)", ""),
    "goodput": ("goodput (runs over runs and killed runs)", ""),
    "failures_per_job": ("failures per job", ""),
    "jobs_lost_to_failures": ("jobs lost to failures", ""),
    "broken_reservations": ("broken reservations", ""),
    "jobs_withdrawn": ("cancelled jobs withdrawn while waiting", ""),
    "jobs_cancelled_running": ("cancelled jobs killed while running", ""),
    # workloads whose jobs carry users (docs/output.md, per-user metrics)
    "users_measured": ("users measured", ""),
    "jain_wait": ("fairness of waits between users (Jain's index)", ""),
    "jain_bounded_slowdown": ("fairness of bounded slowdowns between users (Jain's index)", ""),
    "worst_user_mean_wait": ("worst user's mean wait", "s"),
    "worst_user_mean_bounded_slowdown": ("worst user's mean bounded slowdown", ""),
}

#: metrics with a value per cluster too (``<metric>.<cluster>``), listed after the total
PER_CLUSTER = ("utilisation", "availability")

ABSENT = "(not set)"


def format_number(value: float | None) -> str:
    """Four significant figures, thousands separated; a dash for no value."""
    if value is None:
        return "—"
    if abs(value) >= 1e5 or (float(value).is_integer() and abs(value) >= 1000):
        return f"{value:,.0f}"
    if abs(value) >= 1e4:  # :.4g would print 1.203e+04 here
        return f"{round(value, -1):,.0f}"
    return f"{value:.4g}"


@dataclass
class MetricCell:
    mean: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    half_width: float | None = None
    replications: int = 0
    shaky: str | None = None  # why the interval should not be trusted (simengine.statistics)
    verdict: str | None = None  # a paired difference: lower, higher, no difference shown

    @property
    def text(self) -> str:
        return format_number(self.mean)

    @property
    def ci_text(self) -> str:
        """The 95% confidence interval, or why there is none."""
        if self.mean is None:
            return ""
        if self.ci_low is None or self.ci_high is None:
            return "no CI (1 replication)" if self.replications <= 1 else "no CI"
        # a dash, not a comma, between the ends: the numbers have thousands commas ([147,379 – 169,661])
        return f"[{format_number(self.ci_low)} – {format_number(self.ci_high)}]"

    @property
    def half_width_text(self) -> str:
        return "" if self.half_width is None else f"± {format_number(self.half_width)}"


@dataclass
class MetricRow:
    name: str
    label: str
    unit: str
    cells: list[MetricCell] = field(default_factory=list)


def metric_order(names: set[str]) -> list[str]:
    """Known metrics first in the table's order (per-cluster utilisation and availability after the total),
    then any other metric alphabetically."""
    ordered: list[str] = []
    for name in METRICS:
        if name in names:
            ordered.append(name)
        if name in PER_CLUSTER:
            ordered += sorted(n for n in names if n.startswith(f"{name}."))
    return ordered + sorted(names - set(ordered))


def different_jobs(labelled: list[tuple[str, dict[str, Any]]]) -> str | None:
    """What to say when runs' job metrics average different numbers of jobs (``jobs_measured``):
    e.g. a trace replayed on a smaller cluster that rejects its largest jobs. ``labelled``: (run
    label, summary) pairs. None when every run measured as many jobs (or none says)."""
    found = []
    for label, summary in labelled:
        m = ((summary or {}).get("metrics") or {}).get("jobs_measured")
        if isinstance(m, dict) and m.get("mean") is not None:
            rejected = int(((summary or {}).get("job_counts") or {}).get("rejected") or 0)
            found.append((label, float(m["mean"]), rejected))
    if len({round(mean, 6) for _, mean, _ in found}) <= 1:
        return None
    parts = [f"{label}: {format_number(mean)}" + (f" ({rejected:,} jobs rejected)" if rejected else "")
             for label, mean, rejected in found]
    return ("These runs' job metrics (waits, responses, slowdowns) average different numbers of jobs — jobs "
            "measured per replication: " + "; ".join(parts) + ". A difference of their means comes from which "
            "jobs were measured as well as from how they were scheduled.")


def metrics_table(summaries: list[dict[str, Any]]) -> list[MetricRow]:
    """One row per metric, one cell per summary (``Result.summary()``: ``metrics`` maps a name to
    ``{mean, ci_low, ci_high, half_width, values}``)."""
    names = {name for s in summaries for name in (s or {}).get("metrics", {})}
    rows = []
    for name in metric_order(names):
        if name.partition(".")[0] in PER_CLUSTER and "." in name:
            total, _, cluster = name.partition(".")
            label, unit = f"{total} of {cluster}", ""
        elif "." in name:  # a breakdown (KOALA's per priority and per number of components)
            total, _, group = name.partition(".")
            label, unit = METRICS.get(total, (total.replace("_", " "), ""))
            label = f"{label} ({group.replace('_', ' ')})"
        else:
            label, unit = METRICS.get(name, (name.replace("_", " "), ""))
        row = MetricRow(name, label, unit)
        for s in summaries:
            m = ((s or {}).get("metrics") or {}).get(name)
            if not isinstance(m, dict):
                row.cells.append(MetricCell())
                continue
            known = (s or {}).get("replications") or (len(m["values"]) if "values" in m else None)
            replications = int(known or 0)
            low, high = m.get("ci_low"), m.get("ci_high")
            if low is not None and high is not None:  # (results stored before intervals kept to the domain)
                low, high = within_domain(name, low, high)
            row.cells.append(MetricCell(m.get("mean"), low, high, m.get("half_width"), replications,
                                        stored_shaky(m, known)))
        rows.append(row)
    return rows


# --- Paired differences (common random numbers) ---------------------------------------------------

def pairing_problem(baseline: Any, other: Any) -> str | None:
    """Why two runs cannot be compared replication by replication; None when they can: both
    done, the same seed, the same workload (so replication r of each drew the same jobs) and
    per-replication values of the same replications."""
    if baseline.seed is None or other.seed != baseline.seed:
        return f"its seed ({other.seed}) is not #{baseline.pk}'s ({baseline.seed})"
    if (other.spec or {}).get("workload") != (baseline.spec or {}).get("workload"):
        return f"its workload is not #{baseline.pk}'s"
    a, b = (baseline.summary or {}).get("replications"), (other.summary or {}).get("replications")
    if not a or a != b:
        return f"its {b} replications are not #{baseline.pk}'s {a}"
    if a < 2:
        return "one replication: nothing to pair"
    return None


@dataclass
class PairedColumn:
    """One run against the first (the baseline), or why it cannot be paired."""

    run: Any
    problem: str | None = None


def paired_table(runs: list[Any]) -> tuple[list[PairedColumn], list[MetricRow]]:
    """For each run after the first: the difference of every metric from the first run's,
    replication by replication (simengine.statistics.paired_difference), as cells whose mean is
    the difference, whose interval is its 95% CI and whose ``verdict`` says what it shows."""
    baseline = runs[0]
    columns = [PairedColumn(run, pairing_problem(baseline, run)) for run in runs[1:]]
    mine = (baseline.summary or {}).get("metrics") or {}
    rows = []
    if not any(c.problem is None for c in columns):
        return columns, rows
    for name in metric_order(set(mine)):
        base_values = (mine.get(name) or {}).get("values")
        if not base_values:
            continue
        label, unit = ((f"utilisation of {name.removeprefix('utilisation.')}", "") if name.startswith("utilisation.")
                       else METRICS.get(name, (name.replace("_", " "), "")))
        row = MetricRow(name, label, unit)
        for column in columns:
            other = (((column.run.summary or {}).get("metrics") or {}).get(name) or {}).get("values")
            found = paired_difference(base_values, other) if column.problem is None and other else None
            if found is None:
                row.cells.append(MetricCell())
                continue
            row.cells.append(MetricCell(found["mean"], found["ci_low"], found["ci_high"], found["half_width"],
                                        found["pairs"], found["shaky"], found["verdict"]))
        rows.append(row)
    return columns, rows


# --- Scenario diff ---------------------------------------------------------------------------------

def flatten(document: Any, prefix: str = "") -> dict[str, Any]:
    """Every leaf of a JSON document by dotted path (list items by index), e.g.
    ``platform.clusters.0.processors``. Empty objects and lists are leaves."""
    if isinstance(document, dict) and document:
        out: dict[str, Any] = {}
        for key, value in document.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(document, list) and document:
        out = {}
        for i, value in enumerate(document):
            out.update(flatten(value, f"{prefix}.{i}" if prefix else str(i)))
        return out
    return {prefix: document}


@dataclass
class DiffRow:
    path: str
    values: list[str]


def scenario_diff(documents: list[Any]) -> list[DiffRow]:
    """The dotted paths whose values are not the same in every document, with each
    document's value as JSON (``(not set)`` where a document lacks the path)."""
    flat = [flatten(d) for d in documents]
    paths = list(dict.fromkeys(p for f in flat for p in f))
    rows = []
    for path in paths:
        values = [json.dumps(f[path], sort_keys=True) if path in f else ABSENT for f in flat]
        if len(set(values)) > 1:
            rows.append(DiffRow(path, values))
    return rows


def parse_run_ids(raw: list[str]) -> tuple[list[int], str | None]:
    """Run ids from ``?runs=1,2`` (or ``?runs=1&runs=2``), in order, without repeats; an error
    message naming the bad value otherwise."""
    ids: list[int] = []
    for chunk in raw:
        for part in chunk.split(","):
            part = part.strip()
            if not part:
                continue
            if not part.isdigit():
                return [], f"runs: {part!r} is not a run number"
            if int(part) not in ids:
                ids.append(int(part))
    return ids, None
