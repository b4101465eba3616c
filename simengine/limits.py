"""Resource limits a deployment puts on the scenarios it accepts (docs/deploy.md, Limits).

The engine itself simulates whatever it is given (the CLI and the Python API have no limits);
a server checks each scenario against its :class:`Limits` before it queues a run, so a run that
could not finish or be stored is refused at once, with the field to change, instead of failing
hours later. The job counts are estimates made before simulating: a stream's ``count``, a trace's
length, or an endless stream's arrival rate times the stop rule (``run.stop.completions``
shared by rate, with the margin the engine draws, or ``run.stop.horizon``).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

from simengine.distributions import processor_count_mean
from simengine.errors import TraceError
from simengine.scenario import EvolvingStream, Scenario, SyntheticStream, TraceStream
from simengine.workload_build import DRAW_MARGIN, load_trace_stream

@dataclass(frozen=True)
class Limits:
    """The largest scenario a deployment runs (every field: None means no limit)."""

    jobs: int | None = None  # jobs per replication
    replications: int | None = None
    cluster_processors: int | None = None
    platform_processors: int | None = None
    horizon: float | None = None  # simulated seconds
    stored_rows: int | None = None  # job rows a Result keeps (over the replications it keeps)
    evolving_stages: int | None = None  # stages of evolving applications per replication (planned in O(stages^2))
    # the shape of the document, checked before the schema reads it (shape_problems)
    clusters: int | None = None
    file_sites: int | None = None
    streams: int | None = None
    reservations: int | None = None
    list_items: int | None = None  # items in any one list of the document (a choice's values, ...)


#: (field of Limits, path in the document, what its items are)
SHAPE = (("clusters", ("platform", "clusters"), "clusters"), ("file_sites", ("platform", "file_sites"), "file sites"),
         ("streams", ("workload", "streams"), "streams"), ("reservations", ("reservations",), "reservations"))


def shape_problems(data: object, limits: Limits) -> list[tuple[str, str]]:
    """(dotted field path, message) for every list of ``data`` (a scenario document, not yet
    validated) longer than ``limits`` allows. Checked before the schema: validating takes time
    and memory growing with these lists (some checks pair every stream with every cluster), so a
    5 MB body of 100,000 streams is refused in microseconds rather than validated for seconds."""
    problems = []
    for name, path, what in SHAPE:
        most = getattr(limits, name)
        node = data
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if most is not None and isinstance(node, list) and len(node) > most:
            problems.append((".".join(path), f"{len(node):,} {what}; this server allows at most {most:,} "
                                             "per scenario"))
    if limits.list_items is not None:
        # (a list refused above is not walked: 20,000 streams took seconds to look through)
        problems += long_lists(data, limits.list_items, skip={tuple(path.split(".")) for path, _ in problems})
    return problems


def long_lists(data: object, most: int, report: int = 10, skip: set[tuple] = frozenset()) -> list[tuple[str, str]]:
    """(path, message) for the first ``report`` lists in ``data`` longer than ``most`` items, not
    looking into the lists at the paths ``skip`` (tuples of keys)."""
    found = []
    stack: list[tuple[object, tuple]] = [(data, ())]
    while stack and len(found) < report:
        node, path = stack.pop()
        if path in skip:
            continue
        if isinstance(node, list) and len(node) > most:
            found.append((".".join(map(str, path)), f"{len(node):,} items; this server allows at most {most:,} "
                                                    "in one list (a longer sample belongs in an uploaded trace)"))
            continue
        if isinstance(node, list) and not {dict, list} & set(map(type, node)):
            continue  # (a list of numbers: its types are taken in C, not item by item in Python)
        items = node.items() if isinstance(node, dict) else enumerate(node)
        stack.extend((value, (*path, key)) for key, value in items if isinstance(value, (dict, list)))
    return sorted(found)


def estimated_jobs(scenario: Scenario) -> list[tuple[str, float]]:
    """Per workload stream, in order: (the field that sets how many jobs it has, about how many per
    replication; 0 when nothing estimates it)."""
    run, platform = scenario.run, scenario.platform
    streams = scenario.workload.streams
    rates = [s.arrival_rate(platform) if isinstance(s, SyntheticStream) and s.count is None else 0.0
             for s in streams]
    total_rate = sum(r for r in rates if math.isfinite(r))
    out = []
    for i, stream in enumerate(streams):
        here = f"workload.streams.{i}"
        if isinstance(stream, TraceStream):
            jobs, _ = load_trace_stream(stream, scenario, i)  # (a bad trace raises its TraceError)
            out.append((f"{here}.limit", float(len(jobs))))
        elif isinstance(stream, EvolvingStream):  # (one job row per application)
            if stream.applications is not None:
                out.append((f"{here}.applications", float(len(stream.applications))))
            else:
                out.append((f"{here}.generate.applications", float(stream.generate.applications[1])))
        elif getattr(stream, "count", None) is not None:
            out.append((f"{here}.count", float(stream.count)))
        elif run.stop.completions is not None:
            share = rates[i] / total_rate if total_rate > 0 else 1.0
            out.append(("run.stop.completions", run.stop.completions * DRAW_MARGIN * share))
        elif run.stop.horizon is not None:
            out.append(("run.stop.horizon", rates[i] * run.stop.horizon))
        else:
            out.append((here, 0.0))  # (one item per stream: component_problems reads them by index)
    return out


def evolving_problems(scenario: Scenario, most: int) -> list[tuple[str, str]]:
    """Evolving applications past ``most`` stages per replication (at most, when drawn): Algorithm
    2 plans them in time that grows with the square of their stages (33,000 stages: about 1.5 s;
    200,000: about a minute), in one compiled pass that nothing interrupts."""
    out = []
    for i, stream in enumerate(scenario.workload.streams):
        if not isinstance(stream, EvolvingStream):
            continue
        if stream.applications is not None:
            stages, field = sum(len(a.stages) for a in stream.applications), f"workload.streams.{i}.applications"
        else:
            g = stream.generate
            stages, field = g.applications[1] * g.stages[1], f"workload.streams.{i}.generate.applications"
        if stages > most:
            out.append((field, f"up to {stages:,} stages of evolving applications per replication; this server "
                               f"plans at most {most:,} (fewer applications, or fewer stages each)"))
    return out


def components_per_job(stream) -> tuple[float, str] | None:
    """(mean components per job, the field that sets them) of a stream whose jobs have components
    (co-allocated, KOALA), each a job row of its own; None for other streams."""
    components, shapes = getattr(stream, "components", None), getattr(stream, "shapes", None)
    if shapes:
        weight = sum(shape.weight for shape in shapes)
        return sum(shape.weight * shape.components for shape in shapes) / weight, "shapes"
    if components is not None and getattr(stream, "request", None) != "flexible":
        return processor_count_mean(components), "components"
    return None


def component_problems(scenario: Scenario, counts: list[tuple[str, float]], most: int) -> list[tuple[str, str]]:
    """Streams whose jobs' components (a row and a placement each) come to more than ``most`` per
    replication: the job estimate counts jobs, and a job may ask for a billion components."""
    rows = 0.0
    worst = None
    for i, (stream, (_, jobs)) in enumerate(zip(scenario.workload.streams, counts, strict=True)):
        found = components_per_job(stream)
        here = jobs * (found[0] if found else 1.0)
        rows += here
        if found and (worst is None or here > worst[1]):
            worst = (f"workload.streams.{i}.{found[1]}", here, found[0])
    if worst is None or not rows > most:  # (also NaN)
        return []
    return [(worst[0], f"about {rows:,.0f} job components per replication (about {worst[2]:,.3g} per job here); "
                       f"this server runs at most {most:,} (fewer components per job, or fewer jobs)")]


def limit_problems(scenario: Scenario, limits: Limits) -> list[tuple[str, str]]:
    """(dotted field path, message) for every limit ``scenario`` goes past; empty when it fits."""
    problems = []
    run = scenario.run
    if limits.replications is not None and run.replications > limits.replications:
        problems.append(("run.replications", f"{run.replications:,} replications; this server runs at most "
                                             f"{limits.replications:,} per run"))
    if limits.horizon is not None and run.stop.horizon is not None and run.stop.horizon > limits.horizon:
        problems.append(("run.stop.horizon", f"{run.stop.horizon:,.0f} s of simulated time; this server "
                                             f"simulates at most {limits.horizon:,.0f} s"))
    clusters = scenario.platform.clusters
    if limits.cluster_processors is not None:
        for i, c in enumerate(clusters):
            if c.processors > limits.cluster_processors:
                problems.append((f"platform.clusters.{i}.processors",
                                 f"{c.processors:,} processors; this server allows at most "
                                 f"{limits.cluster_processors:,} per cluster"))
    total = sum(c.processors for c in clusters)
    if limits.platform_processors is not None and total > limits.platform_processors:
        problems.append(("platform.clusters", f"{total:,} processors in all; this server allows at most "
                                              f"{limits.platform_processors:,} per platform"))
    if limits.evolving_stages is not None:
        problems += evolving_problems(scenario, limits.evolving_stages)
    if limits.jobs is None and limits.stored_rows is None:
        return problems
    try:
        counts = estimated_jobs(scenario)
    except TraceError as exc:  # the trace cannot be read: say so now rather than when the run starts
        bad = [i for i, s in enumerate(scenario.workload.streams)
               if isinstance(s, TraceStream) and os.path.basename(s.resolved_path) == os.path.basename(exc.file)]
        problems.append((f"workload.streams.{bad[0]}.path" if bad else "workload.streams", str(exc)))
        return problems
    jobs = sum(n for _, n in counts)
    if not math.isfinite(jobs):
        problems.append(("workload.streams", "the arrival rates cannot be estimated (an infinite or zero mean?)"))
        return problems
    if limits.jobs is not None and jobs > limits.jobs:
        field = max(counts, key=lambda c: c[1])[0]
        problems.append((field, f"about {jobs:,.0f} jobs per replication; this server runs at most "
                                f"{limits.jobs:,} (lower the count, the completions or the horizon)"))
    elif limits.jobs is not None:
        problems += component_problems(scenario, counts, limits.jobs)
    kept = run.replications if run.keep_jobs == "all" else 1
    if limits.stored_rows is not None and kept > 1 and jobs * kept > limits.stored_rows:
        problems.append(("run.keep_jobs", f"about {jobs * kept:,.0f} job rows to store; this server stores at "
                                          f"most {limits.stored_rows:,} per run (keep_jobs: first keeps "
                                          "replication 0's only)"))
    if limits.horizon is not None:
        for i, stream in enumerate(scenario.workload.streams):
            rate = stream.arrival_rate(scenario.platform) if isinstance(stream, SyntheticStream) else math.inf
            if not rate * limits.horizon >= 1:  # (also NaN)
                problems.append((f"workload.streams.{i}.arrival",
                                 f"an arrival rate of {rate:.3g} jobs/s: not one job in {limits.horizon:,.0f} s "
                                 "of simulated time (is the runtime's or size's mean right?)"))
    return problems
