"""The evolving model's plan while a run is watched (docs/evolving.md, "While a run goes on"):
how long Algorithm 2's plan and Algorithm 1's mapping take, what slicing the plan costs, and how
soon the first chunk reaches a watcher.

    .venv/bin/python benchmarks/evolving_plan.py [--applications 20000] [--stages 10]

Input: one generated test (``--applications`` applications of ``--stages`` stages, durations
500-3600 s, 1-75 nodes, n_max 100, mic+c, seed 1; the default is the server's limit of 200,000
stages). It prints, side by side on that input:

* the plan in one compiled call against the plan in slices (``schedule_flat``'s ``on_planned``),
  and whether both give the same schedule;
* the mapping (Algorithm 1, ``Mapping.advance`` to the end) on its own;
* the stage count at which plan and mapping would take equally long (the plan grows with the
  square of the stages, the mapping linearly);
* a whole ``simengine.run`` with a progress callback: seconds to the first chunk, to the first
  and the last live Gantt chunk, and in all; and the same even point for the mapping as that run
  streams it (its live chunks' span), which simengine.evolving.run.EVEN_STAGES is set from.
"""
from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import simengine  # noqa: E402
from simengine.evolving.generate import FlatWorkload  # noqa: E402
from simengine.evolving.mapping import Mapping  # noqa: E402
from simengine.evolving.run import EVEN_STAGES, applications  # noqa: E402
from simengine.scenario import load_scenario  # noqa: E402

plan = importlib.import_module("simengine.evolving.schedule")  # (the package's ``schedule`` is the function)


def scenario(apps: int, stages: int) -> dict:
    return {"platform": {"clusters": [{"name": "c", "processors": 100, "scheduler": {
                "name": "evolving", "params": {"algorithm": "mic+c"}}}]},
            "workload": {"streams": [{"kind": "evolving", "name": "apps", "target": "c", "generate": {
                "applications": [apps, apps], "stages": [stages, stages]}}]},
            "run": {"seed": 1}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--applications", type=int, default=20_000)
    ap.add_argument("--stages", type=int, default=10)
    args = ap.parse_args()
    spec = scenario(args.applications, args.stages)
    requested = applications(load_scenario(spec), 0)
    w = FlatWorkload.from_tests([requested])
    S = len(w.d)
    plan.schedule_flat(FlatWorkload.from_tests([requested[:10]]), "mic+c", 100)  # loaded outside the timing
    plan.schedule_flat(FlatWorkload.from_tests([requested[:10]]), "mic+c", 100, on_planned=lambda a, b: None)

    t0 = time.perf_counter()
    whole = plan.schedule_flat(w, "mic+c", 100)
    t_whole = time.perf_counter() - t0
    calls = []
    t0 = time.perf_counter()
    sliced = plan.schedule_flat(w, "mic+c", 100, on_planned=lambda done, of: calls.append(done))
    t_sliced = time.perf_counter() - t0
    same = all(np.array_equal(getattr(whole, k), getattr(sliced, k)) for k in ("hold", "start", "end"))

    sched = plan.schedule({"n_max": 100, "algorithm": "mic+c",
                           "applications": [{"stages": [list(s) for s in app]} for app in requested]})
    t0 = time.perf_counter()
    Mapping(sched).advance(float("inf"))
    t_map = time.perf_counter() - t0
    even = S * t_map / t_whole  # plan = a S^2, mapping = b S: equal at S = b / a

    print(f"{args.applications:,} applications, {S:,} stages, n_max 100, mic+c")
    print(f"plan, one compiled call      {t_whole:8.2f} s")
    print(f"plan, in slices              {t_sliced:8.2f} s  ({len(calls)} slices, {t_sliced / t_whole:.2f}x; "
          f"same schedule: {'yes' if same else 'NO'})")
    print(f"mapping (Algorithm 1)        {t_map:8.2f} s")
    print(f"plan and bare mapping equally long at about {even:,.0f} stages")

    first, gantt = [], []  # seconds to the first chunk; to every live Gantt chunk
    t0 = time.perf_counter()

    def watch(chunk: dict) -> None:
        now = time.perf_counter() - t0
        if not first:
            first.append(now)
        if chunk["kind"] == "segments" and not chunk.get("final"):
            gantt.append(now)

    simengine.run(spec, on_progress=watch)
    done = time.perf_counter() - t0
    watched_map = gantt[-1] - gantt[0]  # the mapping as a watched run streams it (about: from its first slice)
    print(f"simengine.run, watched: first chunk after {first[0]:.2f} s, first Gantt chunk after "
          f"{gantt[0]:.2f} s, last live Gantt chunk after {gantt[-1]:.2f} s, done after {done:.2f} s")
    print(f"plan and the watched mapping equally long at about {S * watched_map / t_whole:,.0f} stages "
          f"(what EVEN_STAGES = {EVEN_STAGES:,} is set from: the share of the progress bar)")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
