"""``simengine.run``: simulate a scenario with the model that handles it (simengine.models)
through the one replication driver (simengine.driver)."""
from __future__ import annotations

from typing import Any

import numpy as np

from simengine.driver import run_model
from simengine.models import model_of
from simengine.results import Result
from simengine.scenario import Scenario, load_scenario
from simengine.streaming import ProgressCallback, live_rows


def run(scenario: Any, on_progress: ProgressCallback | None = None, *, workers: int | None = None,
        base_dir: str | None = None) -> Result:
    """Simulate a scenario and return its :class:`~simengine.results.Result`.

    Parameters
    ----------
    scenario : Scenario, dict, str or path
        Anything :func:`simengine.load_scenario` accepts.
    on_progress : callable, optional
        Called with numbered chunks (dicts) as the run goes (docs/output.md, "Streaming"):
        ``kind`` "segments" while replication 0 is simulated, each with the Gantt segments that
        closed in a window of simulated time (typed numpy columns) and those in progress;
        ``kind`` "progress" with ``fraction`` done and ``sim_time``; ``kind`` "metrics" at the
        end. ``seq`` numbers every chunk from 0 so a late client can ask for what it missed.
        An exception it raises stops the run; so does one from its ``check()`` method, when it
        has one, which is called at least every half second while the run lasts.
    workers : int, optional
        Threads or processes for replications 1..R-1 (1: all in this process); default: as
        many as the machine has cores, when that pays (simengine.driver).
    """
    scenario = scenario if isinstance(scenario, Scenario) else load_scenario(scenario, base_dir=base_dir)
    return run_model(model_of(scenario), scenario, on_progress, workers)


def replication_segments(scenario: Any, replication: int, *, base_dir: str | None = None) -> dict[str, np.ndarray]:
    """Replication ``replication``'s Gantt segments as the live stream's rows (the job named by
    its job id and stream). A Result keeps replication 0's; this simulates any replication again
    (same scenario, seed and engine version give the same replication)."""
    scenario = scenario if isinstance(scenario, Scenario) else load_scenario(scenario, base_dir=base_dir)
    if not 0 <= replication < scenario.run.replications:
        raise ValueError(f"replication: must be within 0..{scenario.run.replications - 1}")
    model = model_of(scenario)
    if model.prepare is not None:
        model.prepare(scenario)
    out = model.replicate(scenario, replication, True)
    columns = dict(out.segments)
    rows = np.asarray(out.segments["job"], np.int64)
    columns["job_id"] = out.jobs["job_id"][rows]
    columns["stream"] = out.jobs["stream"][rows]
    return live_rows(columns)
