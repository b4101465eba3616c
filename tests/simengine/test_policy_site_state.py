"""Stateful site allocation written in plain Python (simengine.site_state,
docs/policies/site-allocation.md): the worked Deferred and SB-Deferred (examples/policies) give the
compiled pass's schedule job for job, a new policy matches a reference simulation written here, and
a policy's mistakes are reported naming it, the job and the moment."""
from __future__ import annotations

import itertools
import math
import re
import subprocess
import sys
from collections import deque

import numpy as np
import pytest
import yaml

import simengine
from simengine.errors import ScenarioError
from simengine.policy import PolicyError, StatefulSiteAllocation, register
from simengine.registry import SITE_ALLOCATION
from simengine.workload import JobTable
from tests.conftest import ROOT

PAIRS = [("deferred", "python-deferred", {}), ("deferred", "python-deferred", {"allocation_interval": 2.5}),
         ("sb_deferred", "python-sb-deferred", {"sdt": 2.0}),
         ("sb_deferred", "python-sb-deferred", {"sdt": 1.0, "weights": "equal", "allocation_interval": 0.5})]


def zikos(policy: str, params: dict, completions: int = 6000, replications: int = 2) -> dict:
    data = yaml.safe_load((ROOT / "examples" / "zikos-random.yaml").read_text())
    data["grid"]["site_allocation"] = {"name": policy, "params": params}
    data["run"].update(replications=replications, stop={"completions": completions}, warmup={"completions": 500})
    return data


@pytest.mark.parametrize("compiled,python,params", PAIRS)
def test_the_python_deferred_policies_give_the_compiled_schedule_on_the_zikos_example(compiled, python, params):
    a = simengine.run(zikos(compiled, params))
    b = simengine.run(zikos(python, params))
    assert set(a.jobs) == set(b.jobs) and len(a.jobs["start"]) > 10000
    for column, values in a.jobs.items():  # site (cluster), start, end, response ... of every job
        np.testing.assert_array_equal(values, b.jobs[column], err_msg=column)
    assert a.metrics.keys() == b.metrics.keys()
    for name, value in a.metrics.items():
        assert value.mean == b.metrics[name].mean or (value.mean != value.mean and b.metrics[name].mean != b.metrics[name].mean), name


def stepped(name: str, params: dict, jobs: JobTable, work, fixed, processors, speed, seed: int, slices=None):
    """(site, processor, dispatch, start) of every job under ``name``'s stepper, advanced to each
    time of ``slices`` and then to the end."""
    entry = SITE_ALLOCATION.get(name)
    n = len(jobs)
    out = (np.full(n, -1, np.int64), np.full(n, -1, np.int64), np.full(n, np.nan), np.full(n, np.nan))
    advance = entry.implementation.stepper(entry.validated(params), np.asarray(processors, np.int64),
                                           np.asarray(speed, np.float64), None, jobs, work, fixed,
                                           np.random.default_rng(seed), *out)
    for T in ([] if slices is None else slices):
        advance(T)
    assert advance(math.inf)
    return out


def tied_workload(rng: np.random.Generator, n: int, pinned: bool):
    """Arrivals on a half-second grid (several at one instant, many on a batch instant), integer
    demands (equal remaining work at several sites), some jobs pinned to a site or rejected."""
    submit = np.cumsum(rng.integers(0, 3, n) / 2.0)
    work = rng.integers(1, 5, n).astype(np.float64)
    jobs = JobTable(job_id=np.arange(1, n + 1), submit=submit, runtime=work, estimate=work + 1,
                    processors=np.ones(n, np.int64), cluster=np.full(n, -1), stream=np.zeros(n))
    fixed = np.full(n, -1, np.int64)
    if pinned:
        fixed[rng.random(n) < 0.1] = rng.integers(0, 3)
        fixed[rng.random(n) < 0.05] = -2
    return jobs, work, fixed


@pytest.mark.parametrize("compiled,python,params", PAIRS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_python_deferred_policies_give_the_compiled_schedule_with_ties(compiled, python, params, seed):
    rng = np.random.default_rng(seed)
    # the random part draws one uniform per grid job in the Python policy, per job in the compiled
    # pass: the same only when every job is the grid's (docs/policies/site-allocation.md)
    jobs, work, fixed = tied_workload(rng, 3000, pinned=compiled == "deferred")
    processors, speed = [2, 2, 4], [1.0, 1.0, 2.0]  # sites 0 and 1 alike: ties between sites
    want = stepped(compiled, params, jobs, work, fixed, processors, speed, seed)
    # the Python pass paused and resumed at arbitrary times (the live Gantt's slices) changes nothing
    got = stepped(python, params, jobs, work, fixed, processors, speed, seed,
                  slices=np.sort(rng.uniform(0, jobs.submit[-1], 40)))
    for a, b, what in zip(want, got, ("site", "processor", "dispatch", "start")):
        np.testing.assert_array_equal(a, b, err_msg=what)
    placed = want[0] >= 0
    assert (want[3][placed] > want[2][placed]).any() and (fixed[~placed] == -2).all()  # queues formed


# ---- a new stateful policy against a reference written here ---------------------------------------

@register
class MostIdleFirst(StatefulSiteAllocation):
    """Test policy: a job goes to the site with the most idle processors (the first on a tie) if
    any processor is idle and nobody waits before it, else it waits at the grid until a job ends."""

    name = "test-most-idle-first"

    def __init__(self, params, processors, speed, rng):
        super().__init__(params, processors, speed, rng)
        self.waiting = 0

    def site_for(self, now, sites):
        idle = [site.idle for site in sites]
        if max(idle) == 0:  # wait for the next end: every processor runs a job (none is queued)
            self.wake_at(min(job.end for site in sites for job in site.running))
            return None
        assert all(not site.queue for site in sites)  # jobs only ever go to idle processors
        return idle.index(max(idle))

    def choose(self, now, job, sites):
        k = None if self.waiting else self.site_for(now, sites)
        self.waiting += k is None
        return k

    def release(self, now, job, sites):
        k = self.site_for(now, sites)
        self.waiting -= k is not None
        return k


def most_idle_reference(submit, work, processors, speed):
    """One FCFS queue at the grid; whenever processors are idle the head goes to the site with the
    most idle ones, onto its first idle processor."""
    free = [[-math.inf] * c for c in processors]
    n = len(submit)
    site, start = np.full(n, -1), np.full(n, np.nan)
    queue, i, t = deque(), 0, -math.inf
    while i < n or queue:
        ends = [f for s in free for f in s if f > t]
        t = min(submit[i] if i < n else math.inf, min(ends) if queue and ends else math.inf)
        while i < n and submit[i] == t:
            queue.append(i)
            i += 1
        while queue:
            idle = [sum(f <= t for f in s) for s in free]
            k = idle.index(max(idle))
            if idle[k] == 0:
                break
            j = queue.popleft()
            p = next(p for p, f in enumerate(free[k]) if f <= t)
            free[k][p] = t + work[j] / speed[k]
            site[j], start[j] = k, t
    return site, start


@pytest.mark.parametrize("seed", [4, 5])
def test_a_new_stateful_policy_matches_a_reference_simulation(seed):
    rng = np.random.default_rng(seed)
    jobs, work, fixed = tied_workload(rng, 1500, pinned=False)
    processors, speed = [1, 3, 2], [1.0, 0.5, 2.0]
    site, _, dispatch, start = stepped("test-most-idle-first", {}, jobs, work, fixed, processors, speed, seed)
    ref_site, ref_start = most_idle_reference(jobs.submit.tolist(), work.tolist(), processors, speed)
    np.testing.assert_array_equal(site, ref_site)
    np.testing.assert_array_equal(start, ref_start)
    np.testing.assert_array_equal(dispatch, start)  # sent only to an idle processor
    assert (start > jobs.submit).mean() > 0.2  # jobs did wait at the grid


def test_a_stateful_policy_runs_through_the_scenario_like_the_built_in_ones():
    result = simengine.run(zikos("test-most-idle-first", {}, completions=3000))
    done = result.jobs["status"] == 0
    assert done.sum() > 3000 and (result.jobs["start"][done] >= result.jobs["submit"][done]).all()
    assert "stateful" in SITE_ALLOCATION.get("test-most-idle-first").capabilities


def test_the_schema_the_builder_and_the_cli_offer_the_python_policies():
    from gridweb.scenarios.catalog import engine_catalog, spec_schema

    grid = spec_schema()["properties"]["grid"]["properties"]  # the API's scenario schema
    assert {"python-deferred", "python-sb-deferred"} <= set(grid["site_allocation"]["properties"]["name"]["enum"])
    catalog = engine_catalog()  # what the builder makes its grid.site_allocation select from
    assert {"field": "site_allocation", "registry": "site_allocation"}.items() <= next(
        f for f in catalog["grid_policies"] if f["field"] == "site_allocation").items()
    offered = {p["name"] for p in catalog["registries"]["site_allocation"]["policies"]}
    assert {"python-deferred", "python-sb-deferred"} <= offered
    out = subprocess.run([sys.executable, "-m", "simengine", "schedulers"], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert re.search(r"python-sb-deferred +SB-Deferred in plain Python.*sdt=4.0.*\(stateful\)", out)


def test_a_stateful_python_policy_needs_lwr_sites():
    data = zikos("python-deferred", {})
    data["platform"] = {"clusters": [{"name": "a", "processors": 4, "scheduler": {"name": "lwr"}},
                                     {"name": "b", "processors": 4, "scheduler": {"name": "fcfs"}}]}
    with pytest.raises(ScenarioError, match="needs every cluster to use the lwr"):
        simengine.load_scenario(data)


# ---- a policy's mistakes ---------------------------------------------------------------------------

_throwaway = itertools.count()


@pytest.fixture
def run_policy():
    """Runs ``choose`` and ``release`` of a throwaway policy over 40 jobs arriving every half second
    from t=0 on two sites; the policies leave the registry afterwards."""
    names = []

    def run(choose, release=None):
        methods = {"name": f"test-mistake-{next(_throwaway)}", "choose": choose}
        if release is not None:
            methods["release"] = release
        names.append(register(type("Mistake", (StatefulSiteAllocation,), methods)).name)
        n = 40
        submit = np.arange(n) / 2.0
        jobs = JobTable(job_id=np.arange(1, n + 1), submit=submit, runtime=np.ones(n), estimate=np.ones(n),
                        processors=np.ones(n, np.int64), cluster=np.full(n, -1), stream=np.zeros(n))
        return stepped(names[-1], {}, jobs, np.ones(n), np.full(n, -1), [2, 2], [1.0, 1.0], 0)

    yield run
    for name in names:
        del SITE_ALLOCATION._entries[name]


def test_a_policys_bad_answers_name_the_policy_the_job_and_the_moment(run_policy):
    with pytest.raises(PolicyError, match=r"test-mistake-.*: job 0 was sent to 2 at its arrival \(t=0\), not a site"):
        run_policy(lambda self, now, job, sites: 2)
    with pytest.raises(PolicyError, match=r"job 0 was sent to '0' at its arrival"):
        run_policy(lambda self, now, job, sites: "0")
    with pytest.raises(PolicyError, match=r"choose\(\) for job 3 at its arrival \(t=1.5\) raised ZeroDivisionError"):
        run_policy(lambda self, now, job, sites: 1 // (job.id - 3) and 0)
    with pytest.raises(PolicyError, match="40 jobs are held .* no wake-up"):  # held for good
        run_policy(lambda self, now, job, sites: None)
    with pytest.raises(PolicyError, match=r"wake_at\(-1\) while choosing for job 0 at t=0"):
        run_policy(lambda self, now, job, sites: self.wake_at(-1))
    with pytest.raises(PolicyError, match=r"release\(\) for job 0 at t=5 raised KeyError"):
        run_policy(lambda self, now, job, sites: self.wake_at(5), lambda self, now, job, sites: {}[job])
    with pytest.raises(PolicyError, match=r"wake_at\(5.0\) while releasing held jobs at t=5: .* after t"):
        run_policy(lambda self, now, job, sites: self.wake_at(5.0), lambda self, now, job, sites: self.wake_at(now))
    # one that answers well runs: every job held until t=5 (or its arrival, if later), then to site 1
    site, _, dispatch, _ = run_policy(lambda self, now, job, sites: self.wake_at(max(5, now)),
                                      lambda self, now, job, sites: 1)
    assert (site == 1).all() and dispatch.tolist() == [max(5.0, j / 2) for j in range(40)]


def test_what_a_policy_sees_of_the_sites():
    seen = []

    def choose(self, now, job, sites):
        s = sites[0]
        seen.append((now, job.id, s.idle, s.remaining_work, s.free_at, [j.id for j in s.running],
                     [j.id for j in s.queue]))
        return 0

    submit = np.array([0.0, 0.0, 0.0, 1.0, 2.5])
    work = np.array([2.0, 3.0, 1.0, 1.0, 1.0])
    n = len(submit)
    jobs = JobTable(job_id=np.arange(1, n + 1), submit=submit, runtime=work, estimate=work,
                    processors=np.ones(n, np.int64), cluster=np.full(n, -1), stream=np.zeros(n))
    policy = register(type("Looker", (StatefulSiteAllocation,), {"name": "test-looker", "choose": choose}))
    site, proc, dispatch, start = stepped(policy.name, {}, jobs, work, np.full(n, -1), [2], [1.0], 0)
    # job 0 -> p0 [0, 2), job 1 -> p1 [0, 3), job 2 -> p0 [2, 3), job 3 -> p0 or p1: both drain at 3
    # -> p0 [3, 4), job 4 -> p1 [3, 4)
    assert proc.tolist() == [0, 1, 0, 0, 1] and start.tolist() == [0, 0, 2, 3, 3]
    inf = -math.inf
    assert seen == [(0.0, 0, 2, 0.0, (inf, inf), [], []),
                    (0.0, 1, 1, 2.0, (2.0, inf), [0], []),
                    (0.0, 2, 0, 5.0, (2.0, 3.0), [0, 1], []),
                    (1.0, 3, 0, 1.0 + 2.0 + 1.0, (3.0, 3.0), [0, 1], [2]),
                    (2.5, 4, 0, 1.5 + 0.5, (4.0, 3.0), [2, 1], [3])]


@pytest.mark.parametrize("policy", ["python-deferred", "python-sb-deferred"])
def test_a_python_stateful_policy_streams_exactly_its_gantt_and_the_compiled_schedule(monkeypatch, policy):
    from simengine import kernel_feed, streaming
    from tests.simengine.live_stream import check_live_stream
    from tests.simengine.test_live_stream import fixed_slices

    monkeypatch.setattr(streaming, "LIVE_INTERVAL", 0.0)
    monkeypatch.setattr(kernel_feed, "run_in_slices", fixed_slices(300))
    data = zikos(policy, {"allocation_interval": 2.0}, completions=8000)
    chunks = []
    result = simengine.run(data, on_progress=chunks.append)
    seg = check_live_stream(chunks, result, during=True)
    assert sum(len(c["segments"]["t0"]) for c in seg[:-1]) > len(result.segments["t0"]) / 2
    compiled = simengine.run(zikos(policy.removeprefix("python-").replace("-", "_"), {"allocation_interval": 2.0},
                                   completions=8000))
    for column, values in compiled.segments.items():
        np.testing.assert_array_equal(values, result.segments[column], err_msg=column)


def test_a_python_stateful_replication_reports_progress_while_it_runs(monkeypatch):
    from simengine import kernel_model

    fractions = []
    monkeypatch.setattr(kernel_model, "run_in_slices", lambda begin, end, advance, report: [
        (advance(T), report(T)) for T in np.linspace(begin, end, 5)])
    scenario = simengine.load_scenario(zikos("python-deferred", {}))
    sliced = kernel_model.replicate_lwr_grid(scenario, 0, False, on_step=lambda fraction, t: fractions.append(fraction))
    assert fractions[-5:] == pytest.approx([0.0, 0.25, 0.5, 0.75, 1.0])
    whole = kernel_model.replicate_lwr_grid(scenario, 0, False)
    for column, values in whole.jobs.items():
        np.testing.assert_array_equal(values, sliced.jobs[column], err_msg=column)
