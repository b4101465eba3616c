"""The builder's live preview: what the job streams of a scenario document look like.

For each stream we draw a few thousand jobs with the engine's own generator
(``simengine.generate.generate_stream``; trace streams are read with the engine's trace
loader) and return histograms of job sizes and runtimes, and the offered load per cluster.

A co-allocated stream (``kind: coallocated``, Ballier et al., docs/grid.md) offers N_c
components of S processors each per job: its components per job are drawn from the stream's
``components`` distribution (as the grid layer does) and every component counts towards the
load, U_g = lambda E[N_c] E[S] E[runtime] / capacity. Where the components will run is decided
during the simulation by the grid's placement policy (``grid.placement``: the document's, else the
engine's default, Worst-Fit), from the clusters' state at each try: the preview cannot know it, so
it spreads their work over the clusters in proportion to their capacity, as a policy that evens out
the load would (``routing: "placement"``, ``placement``: the policy's name).

A KOALA stream (``kind: koala``, Mohamed's thesis, docs/grid.md "KOALA") is drawn with the
engine's own KOALA workload builder (``simengine.grid.koala_run.build_koala_workload``: shapes,
components, sizes and runtimes exactly as a run draws them). Every component counts towards the
load (a job's work is the sum of its components' processors x its runtime). KOALA places the
components during the simulation (Worst-Fit, Close-to-Files, cluster minimization, ...), so
the preview approximates: their work is spread in proportion to capacity (``routing:
"koala"``), and the background band adds its lower bound ``low`` to every cluster's load (the
band keeps each cluster's local load between ``low`` and ``high``). A note says so.

A Lublin-Feitelson stream (``kind: lublin``) is sampled with the engine's generator, at most
``jobs_per_stream`` of its ``count`` (with ``target_load`` the sample offers that load). Advance
reservations (``reservations``) are not jobs of a stream: each cluster reports the
processor-seconds they hold (``reserved``) and, when ``run.stop.horizon`` is given, their share
of the cluster's processor time up to it (``reserved_load``). Other kinds (evolving) are not
previewed; a note says so.

The preview works on documents that are still being edited: each stream is checked on its
own (with the platform), so one broken stream, or a missing stop rule, does not hide the
others. Problems are returned as ``errors`` (dotted path -> messages), like validation.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import ValidationError

from simengine.distributions import processor_counts
from simengine.errors import ScenarioError, SimEngineError
from simengine.generate import generate_stream
from simengine.grid.koala_run import build_koala_workload
from simengine.limits import shape_problems
from simengine.registry import SITE_ALLOCATION
from simengine.workload_build import load_trace_stream
from simengine.scenario import (
    GRID_TARGET,
    CoallocatedStream,
    Grid,
    KoalaStream,
    LublinStream,
    Platform,
    Reservation,
    Scenario,
    SyntheticStream,
    TraceStream,
    field_errors,
    huge_numbers,
    load_scenario,
)
from simengine.site_allocation import is_stateful
from simengine.workload import JobTable

from .validation import materialize_traces, site_limits, trace_dir

#: Jobs drawn per synthetic stream: enough for smooth histograms, fast enough to redraw while typing.
PREVIEW_JOBS = 4000
#: Jobs drawn over all streams: past 8 streams each draws fewer (never fewer than PREVIEW_MIN_JOBS).
#: With the limits' streams (GRIDWEB_MAX_STREAMS, 64) and clusters (1,000) a worst 5 MB document
#: validates and previews in under a second and 100 MB (measured, tests/web/test_hostile_scenarios.py).
PREVIEW_BUDGET = 32_000
PREVIEW_MIN_JOBS = 250
HISTOGRAM_BINS = 30
#: What the preview of a KOALA stream leaves to the simulation.
KOALA_NOTE = ("KOALA streams: every component counts (component size x runtime); KOALA places the components "
              "during the run, so their work is spread in proportion to capacity, and the background band adds "
              "its lower bound (low) to every cluster's load.")
#: Integer values spanning at most this many whole numbers get one bar per value.
DISCRETE_BARS = 64
#: A range of positive values wider than this ratio (max / min) is binned on a log scale (heavy tails).
LOG_RATIO = 100.0


def histogram(values: np.ndarray, *, discrete: bool = False, bins: int = HISTOGRAM_BINS) -> dict[str, Any]:
    """Bin ``values``: ``edges`` (one more than ``counts``), ``counts`` summing to every value,
    ``scale`` (``linear`` or ``log``) and the summary numbers the preview prints."""
    values = np.asarray(values, dtype=np.float64)
    total = len(values)
    if total == 0:
        return {"edges": [], "counts": [], "scale": "linear", "discrete": discrete, "total": 0,
                "min": None, "max": None, "mean": None}
    low, high = float(values.min()), float(values.max())
    scale = "linear"
    if discrete and high - low + 1 <= DISCRETE_BARS:
        edges = np.arange(low, high + 2) - 0.5  # one bar centred on each whole number
    elif low >= 0 and high > 0 and high / values[values > 0].min() > LOG_RATIO and _log_bins_exist(values, high, bins):
        # heavy tails, as real traces' run times: log bins over the positive values, and the zeros
        # (jobs that failed at once) in a first bar of their own -- a linear axis drew one bar
        scale = "log"
        positive_low = float(values[values > 0].min())
        edges = np.geomspace(positive_low, high, bins + 1)
        edges[0], edges[-1] = positive_low, high  # exact ends, so the extremes fall inside
        if low == 0:
            edges = np.concatenate([[0.0], edges])
    elif high > low:
        edges = np.linspace(low, high, bins + 1)
    else:
        edges = np.array([low - 0.5, high + 0.5])
    counts, edges = np.histogram(values, bins=edges)
    return {
        "edges": [float(e) for e in edges],
        "counts": [int(c) for c in counts],
        "scale": scale,
        "discrete": discrete,
        "total": int(counts.sum()),
        "min": low,
        "max": high,
        "mean": float(values.mean()),
    }


def _log_bins_exist(values: np.ndarray, high: float, bins: int) -> bool:
    """Log-spaced edges from the smallest positive value to ``high`` increase (not among denormals)."""
    with np.errstate(all="ignore"):
        edges = np.geomspace(float(values[values > 0].min()), high, bins + 1)
    return bool(np.all(np.isfinite(edges)) and np.all(np.diff(edges) > 0))


def _prefixed(exc: ScenarioError, index: int) -> dict[str, list[str]]:
    """Errors of a one-stream scenario, with the stream's path pointing at its real index."""
    errors: dict[str, list[str]] = {}
    for error in exc.errors:
        path = error.path
        if path == "workload.streams.0" or path.startswith("workload.streams.0."):
            path = f"workload.streams.{index}" + path[len("workload.streams.0"):]
        errors.setdefault(path, []).append(error.message)
    return errors


def _one_stream_scenario(platform: Platform, raw: Any) -> Scenario:
    """A scenario of the document's platform (validated once, not once per stream) and this one
    stream (raises ``ScenarioError``).

    The grid policy and run control are left out (they are previewed separately or not at
    all); a stop rule is given so an endless stream still validates.
    """
    return load_scenario(
        {"name": "preview", "platform": platform, "workload": {"streams": [raw]},
         "run": {"stop": {"horizon": 1.0}}},
        base_dir=str(trace_dir()),
    )


def _grid_policy(spec: dict[str, Any]):
    """The document's site-allocation policy when it can route jobs up front, else None."""
    try:
        grid = Grid.model_validate(spec.get("grid") or {})
    except Exception:  # noqa: BLE001 - an invalid grid section is reported by validation, not here
        return None
    ref = grid.site_allocation
    if is_stateful(ref.name):
        return None
    return ref


def _placement(spec: dict[str, Any]) -> str | None:
    """The name of the document's co-allocation placement policy (None: not set, or the grid
    section does not validate)."""
    try:
        placement = Grid.model_validate(spec.get("grid") or {}).placement
    except Exception:  # noqa: BLE001 - an invalid grid section is reported by validation, not here
        return None
    return placement.name if placement is not None else None


def _route(jobs: JobTable, processors: np.ndarray, policy, rng: np.random.Generator) -> np.ndarray | None:
    """Cluster index per grid job chosen by ``policy`` (None: the policy needs the simulation)."""
    if policy is None:
        return None
    try:
        return np.asarray(SITE_ALLOCATION.get(policy.name).implementation(jobs, processors, policy.params, rng))
    except (TypeError, ValueError):
        return None


def _seed(spec: dict[str, Any]) -> int:
    run = spec.get("run") if isinstance(spec.get("run"), dict) else {}
    seed = run.get("seed", 1)
    return seed if isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0 else 1


def preview(spec: Any, user=None, *, jobs_per_stream: int = PREVIEW_JOBS) -> dict[str, Any]:
    """Histograms and offered load of every stream of ``spec`` that can be previewed.

    Returns ``{"streams": [...], "clusters": [...], "errors": {path: [messages]}, "notes": [...]}``.
    Each stream has ``jobs`` (sampled), ``sizes`` and ``runtimes`` (see :func:`histogram`),
    ``offered_load`` measured on the sample over its target's capacity, ``expected_load``
    (synthetic streams: lambda E[size] E[runtime] / capacity; co-allocated streams: lambda
    E[N_c] E[size] E[runtime] / capacity) and ``routing`` (how grid jobs were spread: ``policy``
    = drawn by the site-allocation policy, ``balanced`` = in proportion to capacity because the
    policy decides only during the simulation, ``placement`` = co-allocated components placed by
    the policy named in ``placement``, in proportion to capacity). A co-allocated stream also has
    ``components`` (histogram of the components per job); its ``sizes`` are the sizes of one component. Each cluster has
    ``offered_load``: the work offered to it per unit of its capacity (processors x speed).
    """
    result: dict[str, Any] = {"streams": [], "clusters": [], "errors": {}, "notes": [],
                              "jobs_per_stream": jobs_per_stream}
    if not isinstance(spec, dict):
        result["errors"][""] = ["a scenario must be a JSON object"]
        return result
    streams = (spec.get("workload") or {}).get("streams") if isinstance(spec.get("workload"), dict) else None
    if not isinstance(streams, list):
        return result
    jobs_per_stream = min(jobs_per_stream, max(PREVIEW_MIN_JOBS, PREVIEW_BUDGET // max(1, len(streams))))
    result["jobs_per_stream"] = jobs_per_stream
    # numbers and lists past what the engine may be asked to work through: said before any work
    for error in huge_numbers(spec):
        result["errors"].setdefault(error.path, []).append(error.message)
    for path, message in shape_problems(spec, site_limits()):
        result["errors"].setdefault(path, []).append(message)
    if result["errors"]:
        return result
    result["errors"].update(materialize_traces(spec, user))

    try:
        platform = Platform.model_validate(spec.get("platform"))
    except ValidationError as exc:
        for error in field_errors(exc, Platform):
            result["errors"].setdefault(f"platform.{error.path}".rstrip("."), []).append(error.message)
        return result
    seed = _seed(spec)
    policy = _grid_policy(spec)
    work = np.zeros(len(platform.clusters))  # offered processor-seconds per second, by cluster index
    finite_jobs, endless = 0, False  # the workload's size, when every stream has one
    for index, raw in enumerate(streams):
        path = f"workload.streams.{index}"
        if path + ".path" in result["errors"]:
            continue
        try:
            scenario = _one_stream_scenario(platform, raw)
        except ScenarioError as exc:
            for key, messages in _prefixed(exc, index).items():
                bucket = result["errors"].setdefault(key, [])
                bucket.extend(m for m in messages if m not in bucket)
            continue
        stream = scenario.workload.streams[0]
        rng = np.random.default_rng([seed, index])
        if isinstance(stream, KoalaStream):
            try:
                entry = _koala_preview(raw, stream, platform, seed, jobs_per_stream, work)
            except (ValueError, ArithmeticError, SimEngineError) as exc:  # (parameters at the floats' ends)
                result["errors"].setdefault(path, []).append(f"cannot sample this stream: {exc}")
                continue
            entry["index"] = index
            result["streams"].append(entry)
            endless = True  # (KOALA's runs end with its jobs, not with run.stop.completions)
            if KOALA_NOTE not in result["notes"]:
                result["notes"].append(KOALA_NOTE)
            continue
        try:
            if isinstance(stream, SyntheticStream):
                jobs = generate_stream(stream, platform, rng, n=jobs_per_stream, stream_index=index)
                endless = endless or stream.count is None or _horizon(spec) is not None
                finite_jobs += stream.count or 0
                window = float(jobs.submit[-1]) if len(jobs) else 0.0  # arrivals start at time 0
            elif isinstance(stream, LublinStream):
                # A Lublin stream always draws its whole count: sample a copy with at most ours.
                sample = stream.model_copy(update={"count": min(stream.count, jobs_per_stream)})
                jobs = generate_stream(sample, platform, rng, stream_index=index)
                window = float(jobs.submit[-1]) if len(jobs) else 0.0  # arrivals start at time 0
                finite_jobs += stream.count
            elif not isinstance(stream, TraceStream):
                result["notes"].append(f"stream {index + 1} ({stream.kind}): no preview for this kind")
                endless = True
                continue
            else:
                jobs, notes = load_trace_stream(stream, scenario, index, _horizon(spec))
                result["notes"].extend(notes)
                window = float(jobs.submit[-1] - jobs.submit[0]) if len(jobs) > 1 else 0.0
                finite_jobs += len(jobs)
        except (ValueError, ArithmeticError, SimEngineError) as exc:  # e.g. a trace whose sites the site map
            result["errors"].setdefault(path, []).append(f"cannot sample this stream: {exc}")  # does not cover
            continue
        # co-allocated jobs: the document's placement policy, else what the engine filled in (its default)
        placement = (_placement(spec) or scenario.grid.placement.name) if isinstance(stream, CoallocatedStream) \
            else None
        try:
            with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # extremes become None below
                entry = _stream_preview(stream, platform, jobs, window, policy, rng, work, placement)
        except (ValueError, ArithmeticError) as exc:  # (draws at the floats' ends: 5e-324 has no log bins)
            result["errors"].setdefault(path, []).append(f"cannot preview this stream: {exc}")
            continue
        entry["index"] = index
        if isinstance(stream, TraceStream):
            entry["too_large"] = _too_large(stream, platform, jobs)
        result["streams"].append(entry)

    stop = _early_stop(spec, finite_jobs) if result["streams"] and not endless else None
    if stop:
        result["stop"] = stop
        result["notes"].insert(0, stop["message"])
    with np.errstate(over="ignore", invalid="ignore"):
        loads = work / np.array([c.processors * c.speed for c in platform.clusters], dtype=np.float64)
    reserved = reserved_time(spec, platform)
    horizon = _horizon(spec)
    for cluster, load, held in zip(platform.clusters, loads, reserved, strict=True):
        result["clusters"].append({
            "name": cluster.name, "processors": cluster.processors, "speed": cluster.speed,
            "offered_load": float(load), "reserved": float(held),
            "reserved_load": float(held / (cluster.processors * horizon)) if horizon else None,
        })
    return _finite(result)


def _too_large(stream: TraceStream, platform: Platform, jobs: JobTable) -> dict[str, Any] | None:
    """A trace's jobs that need more processors than their cluster has (with target grid: than any
    cluster, or than the one a site map names), which the run rejects: how many, and what to say."""
    sizes = np.array([c.processors for c in platform.clusters], dtype=np.int64)
    if stream.target != GRID_TARGET:
        limit = np.full(len(jobs), sizes[platform.cluster_index(stream.target)])
        where = f"{stream.target}'s {int(limit[0]):,} processors" if len(jobs) else ""
    else:
        limit = np.where(jobs.cluster >= 0, sizes[np.maximum(jobs.cluster, 0)], sizes.max())
        where = f"the largest cluster's {int(sizes.max()):,} processors" if (jobs.cluster < 0).all() \
            else "their cluster's processors"
    over = jobs.processors > limit
    count = int(over.sum())
    if not count:
        return None
    return {"jobs": count, "largest": int(jobs.processors[over].max()),
            "message": f"{stream.name}: {count:,} of its {len(jobs):,} jobs need more than {where} (up to "
                       f"{int(jobs.processors[over].max()):,}): the run rejects them (status rejected; they are "
                       "not among the measured jobs)"}


def reserved_time(spec: dict[str, Any], platform: Platform) -> np.ndarray:
    """Processor-seconds held by the document's advance reservations, by cluster index
    (processors x window length; reservations with errors, or on unknown clusters, are left out)."""
    held = np.zeros(len(platform.clusters))
    raw = spec.get("reservations")
    names = {c.name: i for i, c in enumerate(platform.clusters)}
    for item in raw if isinstance(raw, list) else []:
        try:
            reservation = Reservation.model_validate(item)
        except ValidationError:
            continue
        if reservation.cluster in names:
            held[names[reservation.cluster]] += reservation.processors * reservation.length
    return held


def _early_stop(spec: dict[str, Any], workload: int) -> dict[str, Any] | None:
    """``{"completions", "workload", "message"}`` when run.stop.completions ends the run before its
    finite workload (traces, counted streams) is through: the builder says so before anything runs."""
    stop = ((spec.get("run") or {}).get("stop") or {}) if isinstance(spec.get("run"), dict) else {}
    completions = stop.get("completions") if isinstance(stop, dict) else None
    if not isinstance(completions, int) or isinstance(completions, bool) or not 0 < completions < workload:
        return None
    return {"completions": completions, "workload": workload,
            "message": f"run.stop.completions stops the run at {completions:,} of the workload's {workload:,} jobs: "
                       "the others are not simulated (leave the stop empty to run the whole workload)"}


def _horizon(spec: dict[str, Any]) -> float | None:
    """The document's run.stop.horizon when it is a positive number (reservations' share of it)."""
    stop = (spec.get("run") or {}).get("stop") if isinstance(spec.get("run"), dict) else None
    horizon = stop.get("horizon") if isinstance(stop, dict) else None
    if isinstance(horizon, (int, float)) and not isinstance(horizon, bool) and horizon > 0:
        return float(horizon)
    return None


def _finite(value: Any) -> Any:
    """``value`` with infinite or NaN numbers replaced by None (JSON has no Infinity)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


def _stream_preview(stream, platform, jobs: JobTable, window: float, policy, rng, work: np.ndarray,
                    placement: str | None = None) -> dict:
    """One stream's histograms and load; adds its offered work per second to ``work``."""
    demand = jobs.processors.astype(np.float64) * jobs.runtime  # processor-seconds at speed 1
    capacities = np.array([c.processors * c.speed for c in platform.clusters], dtype=np.float64)
    entry: dict[str, Any] = {
        "name": stream.name, "kind": stream.kind, "target": stream.target, "jobs": len(jobs),
        "sizes": histogram(jobs.processors, discrete=True), "runtimes": histogram(jobs.runtime),
        "offered_load": None, "expected_load": None, "routing": None,
    }
    if isinstance(stream, CoallocatedStream):
        return _coallocated_preview(stream, platform, jobs, window, rng, work, entry, placement)
    if isinstance(stream, SyntheticStream):
        entry["expected_load"] = float(
            stream.arrival_rate(platform) * stream.mean_size() * stream.runtime.mean() / stream.capacity(platform)
        )
    elif isinstance(stream, LublinStream) and stream.target_load is not None:
        entry["expected_load"] = float(stream.target_load)
    if not (window > 0 and math.isfinite(window)):
        return entry
    if stream.target != GRID_TARGET:
        target = platform.cluster_index(stream.target)
        entry["offered_load"] = float(demand.sum() / (window * capacities[target]))
        work += np.bincount([target], weights=[demand.sum() / window], minlength=len(capacities))
        return entry
    entry["offered_load"] = float(demand.sum() / (window * capacities.sum()))
    routed = jobs.cluster >= 0  # GWF jobs placed by a site map keep their cluster
    chosen = jobs.cluster.astype(np.int64)
    unrouted = ~routed
    if unrouted.any():
        picks = _route(jobs.take(unrouted), platform.processors, policy, rng)
        if picks is None:
            # The policy decides only during the simulation: assume it balances the load.
            entry["routing"] = "balanced"
            work += capacities / capacities.sum() * (demand[unrouted].sum() / window)
        else:
            entry["routing"] = "policy"
            chosen[unrouted] = picks
            routed = np.ones(len(jobs), dtype=bool)
    if routed.any():
        work += np.bincount(chosen[routed], weights=demand[routed], minlength=len(capacities)) / window
    return entry


def _coallocated_preview(stream, platform, jobs: JobTable, window: float, rng, work: np.ndarray,
                         entry: dict[str, Any], placement: str) -> dict[str, Any]:
    """A co-allocated stream: every job is N_c components of ``jobs.processors`` each.

    The components per job are drawn as the grid layer draws them (``processor_counts`` of
    the ``components`` distribution: rounded up, at least 1). The ``placement`` policy places
    them only during the simulation, so their work is spread in proportion to capacity.
    """
    capacities = np.array([c.processors * c.speed for c in platform.clusters], dtype=np.float64)
    components = processor_counts(stream.components.sample(rng, len(jobs)))
    demand = components * jobs.processors.astype(np.float64) * jobs.runtime  # all components' work
    entry["components"] = histogram(components, discrete=True)
    entry["routing"], entry["placement"] = "placement", placement
    entry["expected_load"] = float(
        stream.arrival_rate(platform) * stream.mean_components() * stream.mean_size() * stream.runtime.mean()
        / stream.capacity(platform)
    )
    if window > 0 and math.isfinite(window):
        entry["offered_load"] = float(demand.sum() / (window * capacities.sum()))
        work += capacities / capacities.sum() * (demand.sum() / window)
    return entry


def _koala_preview(raw: dict[str, Any], stream, platform, seed: int, jobs_per_stream: int,
                   work: np.ndarray) -> dict[str, Any]:
    """A KOALA stream: ``jobs_per_stream`` jobs drawn by the engine's KOALA workload builder.

    ``sizes`` counts every component (a flexible job: its total size), ``runtimes`` and
    ``components`` one value per job. The components' work is spread in proportion to capacity
    and the background band adds ``low`` of every cluster (see :data:`KOALA_NOTE`).
    """
    # The stream alone with a job count and no horizon: the builder draws the whole sample
    # (the one-stream scenario's 1 s stop rule would cut it to the first second).
    sample = load_scenario(
        {"name": "preview", "platform": platform,
         "workload": {"streams": [{**raw, "count": jobs_per_stream}]}, "run": {"seed": seed}},
        base_dir=str(trace_dir()),
    )
    jobs = build_koala_workload(sample, 0).jobs
    capacities = np.array([c.processors * c.speed for c in platform.clusters], dtype=np.float64)
    components = np.array([len(job.sizes) for job in jobs], dtype=np.int64)
    sizes = np.array([size for job in jobs for size in job.sizes], dtype=np.int64)
    runtimes = np.array([job.runtime for job in jobs], dtype=np.float64)
    demand = np.array([sum(job.sizes) * job.runtime for job in jobs], dtype=np.float64)
    window = float(jobs[-1].submit) if jobs else 0.0  # arrivals start at time 0
    entry: dict[str, Any] = {
        "name": stream.name, "kind": stream.kind, "target": stream.target, "jobs": len(jobs),
        "sizes": histogram(sizes, discrete=True), "runtimes": histogram(runtimes),
        "components": histogram(components, discrete=True), "routing": "koala", "offered_load": None,
        # the load the arrival rate is solved for: lambda E[total size x runtime] / all processors
        "expected_load": float(stream.arrival_rate(platform) * stream.expected_work()
                               / sum(c.processors for c in platform.clusters)),
        "background": None,
    }
    if window > 0 and math.isfinite(window):
        entry["offered_load"] = float(demand.sum() / (window * capacities.sum()))
        work += capacities / capacities.sum() * (demand.sum() / window)
    if stream.background is not None:
        entry["background"] = {"low": stream.background.low, "high": stream.background.high}
        work += stream.background.low * capacities
    return entry
