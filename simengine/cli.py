"""Command line: ``python -m simengine validate|run|replay|reproduce|sweep|schedulers|policies``.

Exit codes: 0 success, 2 bad input (every problem printed with its field path),
1 an unexpected engine failure.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from simengine import reproductions
from simengine.errors import FieldError, ScenarioError, SimEngineError, TraceError

BAD_INPUT = 2


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ScenarioError as e:
        print(f"error: invalid {e.source or 'input'}:", file=sys.stderr)
        for err in e.errors:
            print(f"  {err}", file=sys.stderr)
        return BAD_INPUT
    except TraceError as e:
        print(f"error: bad trace: {e}", file=sys.stderr)
        return BAD_INPUT
    except SimEngineError as e:
        print(f"error: {e}", file=sys.stderr)
        return BAD_INPUT


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m simengine", description="GridWeb simulation engine")
    sub = p.add_subparsers(dest="command", required=True)

    v = sub.add_parser("validate", help="check a scenario file and print every error with its field path")
    v.add_argument("scenario")
    v.set_defaults(func=cmd_validate)

    r = sub.add_parser("run", help="simulate a scenario file")
    r.add_argument("scenario")
    r.add_argument("--out", required=True, help="output folder (jobs.csv, summary.json, ...)")
    r.add_argument("--seed", type=int, help="override run.seed")
    r.add_argument("--replications", type=int, help="override run.replications")
    r.add_argument("--workers", type=int, help="processes for replications (default: automatic)")
    r.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    r.add_argument("--swf-precision", type=_precision, default=0, metavar="N|exact", help=SWF_PRECISION_HELP)
    r.add_argument("--batsim", action="store_true", help=BATSIM_HELP)
    r.add_argument("--batsim-precision", type=_precision, default=None, metavar="N|exact",
                   help=BATSIM_PRECISION_HELP)
    r.set_defaults(func=cmd_run)

    t = sub.add_parser("replay", help="replay a workload trace (SWF/GWF) on one cluster")
    t.add_argument("trace")
    t.add_argument("--processors", type=int, help="cluster size (default: the trace's MaxProcs)")
    t.add_argument("--scheduler", default="fcfs", help="local scheduler: fcfs, easy, conservative, ...")
    t.add_argument("--target-load", type=float, help="scale submit times so the offered load is this")
    t.add_argument("--limit", type=int, help="replay only the first N jobs")
    t.add_argument("--enforce-walltime", action=argparse.BooleanOptionalAction, default=None,
                   help="kill jobs at their requested time, or not (default: a Batsim workload's jobs are "
                        "killed there, as Batsim does; an SWF or GWF trace's run to their end)")
    t.add_argument("--out", required=True)
    t.add_argument("--quiet", action="store_true")
    t.add_argument("--swf-precision", type=_precision, default=0, metavar="N|exact", help=SWF_PRECISION_HELP)
    t.add_argument("--batsim", action="store_true", help=BATSIM_HELP)
    t.add_argument("--batsim-precision", type=_precision, default=None, metavar="N|exact",
                   help=BATSIM_PRECISION_HELP)
    t.set_defaults(func=cmd_replay)

    z = sub.add_parser("reproduce", help="rerun a paper's experiments: figure data, plots and claims")
    z.add_argument("name", help="which reproduction: " + ", ".join(sorted(reproductions.RECIPES)))
    z.add_argument("--quick", action="store_true", help="few short replications (under a minute)")
    z.add_argument("--out", help="output folder (default: out/NAME)")
    z.set_defaults(func=cmd_reproduce)

    w = sub.add_parser("sweep", help="run a scenario over a grid of parameter values")
    w.add_argument("scenario")
    w.add_argument("--param", action="append", default=[], metavar="PATH=V1,V2,...",
                   help="a dotted scenario field and its values (JSON or plain text), repeatable; "
                        "e.g. platform.clusters.0.scheduler.name=fcfs,easy")
    w.add_argument("--out", required=True, help="output folder (sweep.csv, points/<k>/summary.json)")
    w.add_argument("--workers", type=int, help="processes (default: one per core)")
    w.add_argument("--quiet", action="store_true")
    w.set_defaults(func=cmd_sweep)

    s = sub.add_parser("schedulers", help="list the registered policies and their parameters (one line each)")
    s.set_defaults(func=cmd_schedulers)

    k = sub.add_parser("policies", help="every kind of policy: where a scenario names it, its policies and each "
                                        "parameter (type, default, meaning; a parameter naming another policy "
                                        "lists the names it takes)")
    k.add_argument("kind", nargs="?", help="only this kind (its registry, e.g. claiming, reservation_admission)")
    k.add_argument("--json", action="store_true", help="as JSON: each kind's fields and policies with their "
                                                       "parameters' JSON schemas")
    k.set_defaults(func=cmd_policies)
    return p


def cmd_validate(args) -> int:
    # (imported by the command that needs it, so --help answers at once)
    from simengine.scenario import load_scenario, scenario_hash

    scenario = load_scenario(args.scenario)
    print(f"{args.scenario}: valid scenario '{scenario.name}' ({len(scenario.platform.clusters)} clusters, "
          f"{len(scenario.workload.streams)} streams), hash {scenario_hash(scenario)[:16]}")
    return 0


def cmd_run(args) -> int:
    # (imported by the command that needs it, so --help answers at once)
    from simengine.scenario import load_scenario

    scenario = load_scenario(args.scenario)
    overrides: dict[str, Any] = {}
    if args.seed is not None:
        overrides["seed"] = args.seed
    if args.replications is not None:
        overrides["replications"] = args.replications
    if overrides:
        data = scenario.model_dump(mode="json")
        data["run"] |= overrides
        scenario = load_scenario(data, base_dir=Path(args.scenario).resolve().parent)
    return _simulate(scenario, args.out, args.quiet, workers=args.workers, swf_precision=args.swf_precision,
                     batsim=args.batsim, batsim_precision=args.batsim_precision)


def cmd_replay(args) -> int:
    # (imported by the command that needs it, so --help answers at once)
    from simengine.registry import LOCAL_SCHEDULERS
    from simengine.scenario import load_scenario
    from simengine.traces import read_trace

    serial = {n for n in LOCAL_SCHEDULERS.names() if "serial" in LOCAL_SCHEDULERS.get(n).capabilities}
    if args.scheduler not in LOCAL_SCHEDULERS or args.scheduler in serial:  # (a trace's jobs are parallel)
        known = ", ".join(n for n in LOCAL_SCHEDULERS.names() if n not in serial)
        raise ScenarioError(FieldError("--scheduler", f"unknown scheduler {args.scheduler!r}; known: {known}"),
                            source="command line")
    if args.processors is not None and args.processors <= 0:
        raise ScenarioError(FieldError("--processors", "must be greater than 0"), source="command line")
    if args.target_load is not None and not 0 < args.target_load <= 1.5:
        raise ScenarioError(FieldError("--target-load", "must be in (0, 1.5]"), source="command line")
    trace_path = Path(args.trace)
    if not trace_path.exists():
        raise ScenarioError(FieldError("TRACE", f"file not found: {trace_path}"), source="command line")
    processors = args.processors
    if processors is None:
        processors = read_trace(str(trace_path), limit=args.limit).max_procs
        if not processors:
            raise ScenarioError(FieldError("--processors", "the trace has no MaxProcs header: give --processors"),
                                source="command line")
    stream: dict[str, Any] = {"kind": "trace", "name": trace_path.name, "path": str(trace_path.resolve()),
                              "target": "cluster"}
    if args.target_load is not None:
        stream["target_load"] = args.target_load
    if args.limit is not None:
        stream["limit"] = args.limit
    if args.enforce_walltime is not None:
        stream["enforce_walltime"] = args.enforce_walltime
    scenario = load_scenario({
        "name": f"replay {trace_path.name} ({args.scheduler}, {processors} processors)",
        "platform": {"clusters": [{"name": "cluster", "processors": processors,
                                   "scheduler": {"name": args.scheduler}}]},
        "workload": {"streams": [stream]},
    })
    return _simulate(scenario, args.out, args.quiet, swf_precision=args.swf_precision, batsim=args.batsim,
                     batsim_precision=args.batsim_precision)


def cmd_reproduce(args) -> int:
    # (the recipes import bokeh, ~0.5 s: only for reproduce)
    from simengine import reproductions

    try:
        recipe = reproductions.get(args.name)
    except KeyError as e:
        raise ScenarioError(FieldError("NAME", e.args[0]), source="command line") from None
    claims = recipe(Path(args.out or f"out/{args.name}"), quick=args.quick)
    print(reproductions.format_claims(claims))
    return 0


def _parse_values(text: str) -> list:
    values = []
    for item in text.split(","):
        try:
            values.append(json.loads(item))
        except json.JSONDecodeError:
            values.append(item)
    return values


def cmd_sweep(args) -> int:
    # (imported by the command that needs it, so --help answers at once)
    from simengine.sweep import sweep

    parameters: dict[str, list] = {}
    for spec in args.param:
        path, sep, values = spec.partition("=")
        if not sep or not path or not values:
            raise ScenarioError(FieldError("--param", f"expected PATH=V1,V2,... but got {spec!r}"),
                                source="command line")
        parameters[path.strip()] = _parse_values(values)

    def report(k, point):
        if not args.quiet:
            m = point.summary["metrics"].get("mean_wait", {})
            print(f"  point {k}: {point.parameters}  mean_wait {m.get('mean')}")

    result = sweep(args.scenario, parameters, workers=args.workers, on_point=report,
                   base_dir=str(Path(args.scenario).resolve().parent))
    result.write(args.out)
    if not args.quiet:
        print(f"{len(result.points)} points -> {args.out}/sweep.csv")
    return 0


def _plural(kind: str) -> str:
    return kind[:-1] + "ies" if kind.endswith("y") else kind + "s"


def _default(field) -> Any:
    """A parameter's default as a scenario would write it (a default factory called)."""
    from pydantic import BaseModel  # (imported by the commands that list policies, so --help answers at once)

    value = field.get_default(call_default_factory=True)
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


def cmd_schedulers(args) -> int:
    # (imported by the command that needs it, so --help answers at once)
    from simengine.policy_fields import registries

    for registry in registries().values():
        print(f"{_plural(registry.kind)}:")
        width = max(map(len, registry.names()), default=0)
        for name in registry.names():
            entry = registry.get(name)
            params = ", ".join(f"{k}={_default(f)!r}" for k, f in entry.params.model_fields.items())
            capabilities = ", ".join(sorted(entry.capabilities))
            print(f"  {name:{width}s}  {entry.summary}" + (f"  [{params}]" if params else "")
                  + (f"  ({capabilities})" if capabilities else ""))
    return 0


def _type_text(raw: dict, defs: dict) -> str:
    """A JSON schema property's type in a few words (``number >= 0``, ``one of 'a', 'b'``)."""
    if "enum" in raw:
        return "one of " + ", ".join(map(repr, raw["enum"]))
    if "$ref" in raw:
        ref = defs.get(raw["$ref"].rsplit("/", 1)[-1], {})
        return _type_text(ref, defs) if "enum" in ref else ref.get("title", "object")
    if "anyOf" in raw:
        return " or ".join(_type_text(s, defs) for s in raw["anyOf"])
    text = raw.get("type", "any")
    if text == "array" and isinstance(raw.get("items"), dict):
        text = f"list of {_type_text(raw['items'], defs)}"
    bounds = [f"{op} {raw[key]:g}" for key, op in (("minimum", ">="), ("exclusiveMinimum", ">"),
                                                   ("maximum", "<="), ("exclusiveMaximum", "<")) if key in raw]
    return f"{text} {' and '.join(bounds)}" if bounds else text


def cmd_policies(args) -> int:
    # (imported by the command that needs it, so --help answers at once)
    from simengine.policy_fields import (REGISTRY_KEY, allowed_names, params_schema, policy_fields, registries,
                                         scenario_schema)

    found = registries()
    if args.kind is not None and args.kind not in found:
        raise ScenarioError(FieldError("KIND", f"unknown kind of policy {args.kind!r}; known: {', '.join(found)}"),
                            source="command line")
    # where each kind is named: the scenario's fields, then fields of policies' params
    where: dict[str, list[str]] = {key: [] for key in found}
    for path, key, _ in policy_fields(scenario_schema(found)):
        where[key].append(".".join(path))
    schemas = {(key, name): params_schema(registry, name, found) for key, registry in found.items()
               for name in registry.names()}
    for (key, name), schema in schemas.items():
        for path, nested, _ in policy_fields(schema):
            where[nested].append(f"the params.{'.'.join(path)} of {key} {name}")
    kinds = [args.kind] if args.kind else list(found)
    if args.json:
        print(json.dumps({key: {
            "kind": found[key].kind, "named_at": where[key],
            "policies": [{"name": name, "summary": found[key].get(name).summary,
                          "capabilities": sorted(found[key].get(name).capabilities),
                          "params_schema": schemas[key, name]} for name in found[key].names()],
        } for key in kinds}, indent=1))
        return 0
    for key in kinds:
        registry = found[key]
        print(f"{_plural(registry.kind)} ({key}; named at {', '.join(where[key]) or 'no scenario field'}):")
        for name in registry.names():
            entry, schema = registry.get(name), schemas[key, name]
            capabilities = ", ".join(sorted(entry.capabilities))
            print(f"  {name}  {entry.summary}" + (f"  ({capabilities})" if capabilities else ""))
            defs = schema.get("$defs", {})
            for field, info in entry.params.model_fields.items():
                raw = schema["properties"].get(field, {})
                if REGISTRY_KEY in raw:  # a parameter naming another policy: the names it takes
                    nested = found[raw[REGISTRY_KEY]]
                    kind = f"a {nested.kind} ({raw[REGISTRY_KEY]}): {', '.join(allowed_names(raw, schema, nested))}"
                else:
                    kind = _type_text(raw, defs)
                print(f"      {field}  {kind}; default {json.dumps(_default(info))}"
                      + (f" -- {info.description}" if info.description else ""))
    return 0


BATSIM_HELP = "also write batsim_jobs.csv: the jobs as Batsim's _jobs.csv, which evalys reads"
BATSIM_PRECISION_HELP = ("decimals of the times in batsim_jobs.csv: 'exact' (default) for the simulated values, or "
                         "0 to 9 (0: whole seconds; rounding keeps the order of events, so tools that add up "
                         "processors in use never see more than the platform)")
SWF_PRECISION_HELP = ("decimals of the times in schedule.swf: 0 (default) for the integer seconds SWF readers "
                      "expect, up to 9, or 'exact' for the simulated values")


def _precision(text: str) -> int | None:
    if text == "exact":
        return None
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 9:
        raise argparse.ArgumentTypeError(f"must be an integer from 0 to 9 or 'exact'; got {text!r}")
    return value


def _simulate(scenario, out: str, quiet: bool, workers: int | None = None, swf_precision: int | None = 0,
              batsim: bool = False, batsim_precision: int | None = None) -> int:
    # (imported by the command that needs it, so --help answers at once)
    from simengine.runner import run

    bar = _ProgressBar(enabled=not quiet)
    result = run(scenario, on_progress=bar if bar.enabled else None, workers=workers)
    bar.close()
    result.write(out, swf_precision=swf_precision, batsim=batsim, batsim_precision=batsim_precision)
    if not quiet:
        s = result.summary()
        counts = ", ".join(f"{k} {v}" for k, v in s["job_counts"].items() if v)
        print(f"{scenario.name}: {s['jobs']} jobs ({counts}) in {result.engine_seconds:.2f} s -> {out}")
        for key in ("mean_wait", "mean_response", "mean_bounded_slowdown", "utilisation"):
            m = s["metrics"].get(key)
            if m and m["mean"] is not None:
                ci = f"  95% CI [{m['ci_low']:.4g}, {m['ci_high']:.4g}]" if m["ci_low"] is not None else ""
                flag = f"  ! {m['shaky']}" if m.get("shaky") else ""
                print(f"  {key:24s} {m['mean']:.6g}{ci}{flag}")
        for note in result.notes:
            print(f"  note: {note}")
    return 0


class _ProgressBar:
    """A terminal progress bar that only appears once a run has taken more than a second (the
    run's progress callback: it follows progress only, so no Gantt is built for it)."""

    wants_segments = False

    def __init__(self, enabled: bool):
        self.enabled = enabled and sys.stderr.isatty()
        self.t0 = time.monotonic()
        self.bar = None

    def __call__(self, chunk: dict) -> None:
        if not self.enabled or chunk.get("kind") != "progress":
            return
        if self.bar is None and time.monotonic() - self.t0 > 1.0:
            # (tqdm only with a progress bar)
            from tqdm import tqdm

            self.bar = tqdm(total=100, unit="%", file=sys.stderr, leave=False)
        if self.bar is not None:
            self.bar.n = round(100 * chunk["fraction"])
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
