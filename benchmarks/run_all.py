"""GridWeb engine benchmarks: measured figures and ratios against peers run side by side.

    .venv/bin/python benchmarks/run_all.py [--quick]

Every figure printed is measured in this run, on this machine; GridWeb and its peers
run interleaved (GridWeb, peer, GridWeb, peer, ...) and the best of the repetitions
of each is compared. The table is also written to ``benchmarks/results/latest.json``.

(a) DAS2-fs1 replay at its real load: GridWeb FCFS and EASY vs a SimPy FCFS; the
    SimPy start times must equal GridWeb FCFS's exactly.
(b) DAS2-fs1 scaled to offered load 0.9: GridWeb EASY and conservative jobs/s, vs a
    pure-Python EASY whose start times must equal GridWeb EASY's.
(c) The Zikos & Karatza grid (examples/zikos-random.yaml): GridWeb over all
    replications vs SimPy and Ciw models on fewer jobs, as per-job throughput, with
    an exact cross-check on a shared workload and a statistical one on independent runs.
    Like for like: GridWeb keeping every job row vs peers keeping a record per job, and
    GridWeb with run.keep_jobs: first vs a SimPy model that only sums response times.
(d) LCG-2005-1 (188,041 jobs) replay with EASY: peak RSS of the CLI process.
(e) DAS2-fs1 at load 0.85 with reservations, priorities and suspend: the event core vs the
    previous (plain-Python) event loop (benchmarks/local_events.py).
(f) Cao's system: the compiled loop vs the previous one on the reproduction's runs, and the
    whole reproduction's wall time (benchmarks/cao_events.py; --quick skips the reproduction).

See docs/performance.md.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "gridweb" / "demo"  # the real traces the repository ships (PROVENANCE.txt there)
DAS2 = TRACES / "DAS2-fs1-2003-1.swf.gz"
LCG = TRACES / "LCG-2005-1.swf.gz"
ZIKOS = ROOT / "examples" / "zikos-random.yaml"
RESULTS = ROOT / "benchmarks" / "results" / "latest.json"

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import cao_events  # noqa: E402
import local_events  # noqa: E402
import peers  # noqa: E402
import simengine  # noqa: E402
from simengine.registry import LOCAL_SCHEDULERS  # noqa: E402
from simengine.kernel_model import warm_up_kernels  # noqa: E402
from simengine.traces import read_swf  # noqa: E402
from simengine.workload import STATUS_COMPLETED  # noqa: E402

# Targets (the issue's), not measurements.
TARGET_A_RATIO = 5.0
TARGET_B_EASY = 100_000.0
TARGET_B_CONSERVATIVE = 20_000.0
TARGET_C_SIMPY = 100.0
TARGET_C_CIW = 20.0
TARGET_D_RSS_GB = 2.0
#: A peer projected to need longer than this per repetition runs on a prefix of the trace.
PEER_BUDGET_SECONDS = 60.0

FULL = dict(reps=3, conservative_reps=3, zikos_replications=None, simpy_completions=80_000,
            ciw_completions=80_000, simpy_check_jobs=20_000, ciw_check_jobs=10_000, single_thread=True,
            cao_reproduction=True)
QUICK = dict(reps=3, conservative_reps=1, zikos_replications=10, simpy_completions=20_000,
             ciw_completions=5_000, simpy_check_jobs=5_000, ciw_check_jobs=3_000, single_thread=False,
             cao_reproduction=False)


# ---- helpers -------------------------------------------------------------------------------

def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def timed(fn, *args, **kw):
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0


def summary(values: list[float], best=min) -> dict:
    return {"best": best(values), "median": statistics.median(values), "all": values}


def replay_scenario(scheduler: str, target_load: float | None = None, processors: int = 64) -> dict:
    """The scenario ``python -m simengine replay DAS2... --scheduler S [--target-load L]`` builds."""
    stream = {"kind": "trace", "name": DAS2.name, "path": str(DAS2), "target": "cluster"}
    if target_load is not None:
        stream["target_load"] = target_load
    return {"name": f"bench {scheduler}", "workload": {"streams": [stream]},
            "platform": {"clusters": [{"name": "cluster", "processors": processors,
                                       "scheduler": {"name": scheduler}}]}}


def kernel_seconds(name: str, submit, runtime, estimate, size, processors: int) -> float:
    """Wall time of one call to the registered scheduler (the compiled kernel and its setup)."""
    entry = LOCAL_SCHEDULERS.get(name)
    params = entry.params()
    _, seconds = timed(entry.implementation, submit, runtime, estimate, size, processors, params)
    return seconds


class Report:
    def __init__(self):
        self.rows: list[dict] = []
        self.checks: list[dict] = []

    def row(self, id_, benchmark, gridweb, peer, ratio, target, ok, **raw):
        self.rows.append({"id": id_, "benchmark": benchmark, "gridweb": gridweb, "peer": peer,
                          "ratio": ratio, "target": target,
                          "status": "—" if ok is None else ("PASS" if ok else "MISS"), **raw})

    def check(self, id_, what, ok, detail):
        self.checks.append({"id": id_, "check": what, "status": "PASS" if ok else "FAIL", "detail": detail})
        log(f"  check {id_}: {'PASS' if ok else 'FAIL'} -- {detail}")


def fmt_s(x: float) -> str:
    return f"{x:.3g} s" if x >= 0.01 else f"{x * 1000:.3g} ms"


def fmt_rate(x: float) -> str:
    return f"{x:,.0f} jobs/s"


def fmt_summary(s: dict, fmt) -> str:
    return f"{fmt(s['best'])} (med {fmt(s['median'])})" if len(s["all"]) > 1 else fmt(s["best"])


# ---- (a) DAS2-fs1 at real load --------------------------------------------------------------

def bench_a(cfg: dict, rep: Report) -> None:
    log("(a) DAS2-fs1 replay at real load: GridWeb FCFS/EASY vs SimPy FCFS")
    trace = read_swf(str(DAS2))
    processors = trace.max_procs
    peer_jobs = peers.read_swf_jobs(str(DAS2))
    # the peer reads the trace with its own parser: same jobs, same order
    same = all(np.array_equal(a, b) for a, b in (
        (trace.jobs.job_id, peer_jobs.job_id), (trace.jobs.submit, peer_jobs.submit),
        (trace.jobs.runtime, peer_jobs.runtime), (trace.jobs.processors, peer_jobs.size)))
    rep.check("a.input", "SimPy model's own SWF parse = GridWeb's read_swf (ids, submit, runtime, size)",
              same,
              f"{len(peer_jobs.submit)} jobs, {peer_jobs.skipped} skipped (GridWeb: {len(trace.jobs)}, "
              f"{trace.skipped} skipped), {processors} processors")
    assert same, "the SimPy model and GridWeb read different jobs from the trace"
    j = trace.jobs
    fcfs_s = replay_scenario("fcfs", processors=processors)
    easy_s = replay_scenario("easy", processors=processors)
    arrays = (j.submit, j.runtime, j.estimate, j.processors, processors)
    simengine.run(fcfs_s)  # reads the trace into the cache and loads the kernels: not timed
    warm_up_kernels()
    t = {"fcfs_engine": [], "fcfs_kernel": [], "easy_engine": [], "easy_kernel": [], "simpy": []}
    gw_start = None
    for r in range(cfg["reps"]):
        res = simengine.run(fcfs_s)
        t["fcfs_engine"].append(res.engine_seconds)
        gw_start = dict(zip(res.jobs["job_id"].tolist(), res.jobs["start"].tolist()))
        t["fcfs_kernel"].append(kernel_seconds("fcfs", *arrays))
        t["easy_engine"].append(simengine.run(easy_s).engine_seconds)
        t["easy_kernel"].append(kernel_seconds("easy", *arrays))
        start, seconds = peers.simpy_fcfs(peer_jobs.submit, peer_jobs.runtime, peer_jobs.size, processors)
        t["simpy"].append(seconds)
        log(f"  rep {r + 1}: GridWeb FCFS {res.engine_seconds:.4f} s, EASY {t['easy_engine'][-1]:.4f} s, "
            f"SimPy FCFS {seconds:.3f} s")
        if r == 0:
            _check_fcfs_starts(rep, peer_jobs, start, gw_start)
    n = len(j)
    simpy = summary(t["simpy"])
    for key, label in (("fcfs_engine", "GridWeb FCFS, simengine.run() engine_seconds"),
                       ("fcfs_kernel", "GridWeb FCFS, bare kernel call"),
                       ("easy_engine", "GridWeb EASY, simengine.run() engine_seconds (peer is FCFS)"),
                       ("easy_kernel", "GridWeb EASY, bare kernel call (peer is FCFS)")):
        gw = summary(t[key])
        ratio = simpy["best"] / gw["best"]
        rep.row(f"a.{key}", f"(a) DAS2-fs1 {n} jobs, real load: {label}", fmt_summary(gw, fmt_s),
                "SimPy FCFS " + fmt_summary(simpy, fmt_s), ratio, f">= {TARGET_A_RATIO:g}x",
                ratio >= TARGET_A_RATIO, gridweb_seconds=gw, peer_seconds=simpy, jobs=n)


def _check_fcfs_starts(rep: Report, jobs: peers.SwfJobs, simpy_start: list[float], gw_start: dict) -> None:
    for i, jid in enumerate(jobs.job_id):
        if gw_start[jid] != simpy_start[i]:
            prev = "no previous job"
            if i:
                p = jobs.job_id[i - 1]
                prev = f"previous job {p} started {simpy_start[i - 1]!r} (GridWeb {gw_start[p]!r})"
            detail = (f"first differing job: #{i} in submit order, SWF job {jid}: submit {jobs.submit[i]!r}, "
                      f"size {jobs.size[i]}, runtime {jobs.runtime[i]!r}; "
                      f"GridWeb FCFS start {gw_start[jid]!r}, SimPy start {simpy_start[i]!r}; {prev}")
            rep.check("a.starts", "SimPy FCFS start times = GridWeb FCFS start times", False, detail)
            raise AssertionError(detail)
    rep.check("a.starts", "SimPy FCFS start times = GridWeb FCFS start times", True,
              f"all {len(jobs.job_id)} start times identical (exact float equality)")


# ---- (b) DAS2-fs1 at offered load 0.9 ------------------------------------------------------

def bench_b(cfg: dict, rep: Report) -> None:
    log("(b) DAS2-fs1 at offered load 0.9: GridWeb EASY/conservative vs pure-Python EASY")
    processors = read_swf(str(DAS2)).max_procs
    easy_s = replay_scenario("easy", 0.9, processors)
    cons_s = replay_scenario("conservative", 0.9, processors)
    first = simengine.run(easy_s)
    jobs = first.jobs
    n = len(jobs["submit"])
    note = next((x for x in first.notes if "scaled to" in x), "")
    # the peer gets exactly the jobs GridWeb simulated (submit times already scaled)
    sub, rt = jobs["submit"].tolist(), jobs["runtime"].tolist()
    est, size = jobs["estimate"].tolist(), jobs["processors"].tolist()
    # a short probe decides whether the peer can do the whole trace within its budget
    probe = min(n, 5000)
    _, probe_s = peers.python_easy(sub[:probe], rt[:probe], est[:probe], size[:probe], processors)
    m = n
    if probe_s * n / probe > PEER_BUDGET_SECONDS:
        m = max(probe, int(probe * PEER_BUDGET_SECONDS / 2 / probe_s))
        log(f"  the pure-Python EASY would need about {probe_s * n / probe:.0f} s: "
            f"running it on the first {m} jobs")
    t = {"easy": [], "easy_kernel": [], "cons": [], "peer": []}
    arrays = (jobs["submit"], jobs["runtime"], jobs["estimate"], jobs["processors"], processors)
    peer_start = None
    for r in range(cfg["reps"]):
        t["easy"].append(simengine.run(easy_s).engine_seconds)
        t["easy_kernel"].append(kernel_seconds("easy", *arrays))
        if r < cfg["conservative_reps"]:
            res = simengine.run(cons_s)
            t["cons"].append(res.engine_seconds)
        peer_start, seconds = peers.python_easy(sub[:m], rt[:m], est[:m], size[:m], processors)
        t["peer"].append(seconds)
        log(f"  rep {r + 1}: GridWeb EASY {t['easy'][-1]:.3f} s"
            + (f", conservative {t['cons'][-1]:.2f} s" if r < cfg["conservative_reps"] else "")
            + f", Python EASY {seconds:.2f} s ({m} jobs)")
    # cross-check: with the whole trace every start must agree; on a prefix, those before
    # the prefix's last submit time (nothing later can influence them)
    gw = jobs["start"][:m]
    ps = np.array(peer_start)
    cut = np.inf if m == n else sub[m - 1]
    comparable = gw < cut if m < n else np.ones(m, bool)
    diff = np.flatnonzero(comparable & (ps != gw))
    if len(diff):
        i = int(diff[0])
        detail = (f"{len(diff)} of {int(comparable.sum())} differ; first: job {int(jobs['job_id'][i])} "
                  f"(#{i}) submit {sub[i]!r} size {size[i]} runtime {rt[i]!r} estimate {est[i]!r}: "
                  f"GridWeb {gw[i]!r}, Python EASY {ps[i]!r}")
    else:
        detail = f"all {int(comparable.sum())} start times identical (exact float equality)"
    rep.check("b.starts", "pure-Python EASY start times = GridWeb EASY start times (load 0.9)",
              not len(diff), detail)
    assert not len(diff), detail
    peer_rate = summary([m / s for s in t["peer"]], best=max)
    easy_rate = summary([n / s for s in t["easy"]], best=max)
    cons_rate = summary([n / s for s in t["cons"]], best=max)
    prefix = "" if m == n else f" (first {m} jobs)"
    rep.row("b.easy", f"(b) DAS2-fs1 {n} jobs at load 0.9 ({note.split(': ', 1)[-1]}): GridWeb EASY",
            fmt_summary(easy_rate, fmt_rate), f"Python EASY{prefix} " + fmt_summary(peer_rate, fmt_rate),
            easy_rate["best"] / peer_rate["best"], f">= {TARGET_B_EASY:,.0f} jobs/s",
            easy_rate["best"] >= TARGET_B_EASY, gridweb_jobs_per_s=easy_rate, peer_jobs_per_s=peer_rate,
            gridweb_seconds=summary(t["easy"]), peer_seconds=summary(t["peer"]), jobs=n, peer_jobs=m)
    kernel_rate = summary([n / s for s in t["easy_kernel"]], best=max)
    rep.row("b.easy_kernel", f"(b) DAS2-fs1 {n} jobs at load 0.9: GridWeb EASY, bare kernel call",
            fmt_summary(kernel_rate, fmt_rate), f"Python EASY{prefix} " + fmt_summary(peer_rate, fmt_rate),
            kernel_rate["best"] / peer_rate["best"], "(information)", None, gridweb_jobs_per_s=kernel_rate,
            peer_jobs_per_s=peer_rate, gridweb_seconds=summary(t["easy_kernel"]), jobs=n, peer_jobs=m)
    rep.row("b.conservative", f"(b) DAS2-fs1 {n} jobs at load 0.9: GridWeb conservative"
            + (f" (best of {len(t['cons'])})" if len(t["cons"]) != cfg["reps"] else ""),
            fmt_summary(cons_rate, fmt_rate), "—", None, f">= {TARGET_B_CONSERVATIVE:,.0f} jobs/s",
            cons_rate["best"] >= TARGET_B_CONSERVATIVE, gridweb_jobs_per_s=cons_rate,
            gridweb_seconds=summary(t["cons"]), jobs=n)


# ---- (c) the Zikos & Karatza grid ----------------------------------------------------------

def grid_model(scenario) -> peers.GridModel:
    """The peers' model parameters, read from the GridWeb scenario (same network)."""
    d = scenario.model_dump(mode="json")
    (stream,) = d["workload"]["streams"]
    assert stream["size"] == {"kind": "constant", "value": 1.0}
    assert d["grid"]["site_allocation"]["name"] == "random"
    assert all(c["scheduler"]["name"] == "lwr" and c["speed"] == 1.0 for c in d["platform"]["clusters"])
    rt = stream["runtime"]
    return peers.GridModel(site_processors=tuple(c["processors"] for c in d["platform"]["clusters"]),
                           mean_interarrival=stream["arrival"]["mean_interarrival"], alpha=rt["alpha"],
                           high=rt["high"], mean_demand=rt["mean"])


def bench_c(cfg: dict, rep: Report) -> None:
    base = simengine.load_scenario(str(ZIKOS))
    data = base.model_dump(mode="json")
    if cfg["zikos_replications"]:
        data["run"]["replications"] = cfg["zikos_replications"]
    scenario = simengine.load_scenario(data, base_dir=str(ZIKOS.parent))
    R = scenario.run.replications
    stop, warm = scenario.run.stop.completions, scenario.run.warmup.completions
    model = grid_model(scenario)
    log(f"(c) Zikos grid: GridWeb {R} replications x {stop} completions vs "
        f"SimPy ({cfg['simpy_completions']}) and Ciw ({cfg['ciw_completions']}) completions per repetition")
    low = scenario.workload.streams[0].runtime.low
    rep.check("c.params", "peers' bounded-Pareto L (own solver) = GridWeb's", abs(model.low - low) < 1e-9,
              f"L = {model.low:.10f} (GridWeb {low:.10f}); sites {model.site_processors}, "
              f"1/lambda {model.mean_interarrival}, BP({model.alpha}, L, {model.high})")
    _exact_lwr_checks(cfg, rep, scenario, model)
    warm_up_kernels()
    first_only = simengine.load_scenario({**data, "run": {**data["run"], "keep_jobs": "first"}},
                                         base_dir=str(ZIKOS.parent))
    keys = ("gw", "gw_first", "gw1", "simpy", "simpy_sums", "ciw")
    t = {k: [] for k in keys}
    done = {k: [] for k in keys}
    gw_means, simpy_means, ciw_means = None, [], []
    same_metrics = True
    for r in range(cfg["reps"]):
        res = simengine.run(scenario)
        t["gw"].append(res.engine_seconds)
        done["gw"].append(int((res.jobs["status"] == STATUS_COMPLETED).sum()))
        gw_means = res.metrics["mean_response"].values
        gw_rows = len(res.jobs["status"])
        del res
        res = simengine.run(first_only)  # the same simulation, keeping replication 0's rows only
        t["gw_first"].append(res.engine_seconds)
        done["gw_first"].append(done["gw"][-1])
        same_metrics &= res.metrics["mean_response"].values == gw_means
        first_rows = len(res.jobs["status"])
        del res
        if cfg["single_thread"] and (os.cpu_count() or 1) > 1:
            res = simengine.run(scenario, workers=1)  # replications one at a time, on one core
            t["gw1"].append(res.engine_seconds)
            done["gw1"].append(int((res.jobs["status"] == STATUS_COMPLETED).sum()))
            del res
        sw = max(1, warm * cfg["simpy_completions"] // stop)
        o = peers.simpy_lwr(model, cfg["simpy_completions"], sw, seed=1000 + r)
        t["simpy"].append(o.seconds)
        done["simpy"].append(o.completions)
        simpy_means.append(o.mean_response)
        o = peers.simpy_lwr(model, cfg["simpy_completions"], sw, seed=1000 + r, records=False)
        t["simpy_sums"].append(o.seconds)
        done["simpy_sums"].append(o.completions)
        cw = max(1, warm * cfg["ciw_completions"] // stop)
        o = peers.ciw_lwr(model, cfg["ciw_completions"], cw, seed=2000 + r)
        t["ciw"].append(o.seconds)
        done["ciw"].append(o.completions)
        ciw_means.append(o.mean_response)
        log(f"  rep {r + 1}: GridWeb {t['gw'][-1]:.2f} s ({done['gw'][-1]} completions), "
            f"keep_jobs first {t['gw_first'][-1]:.2f} s"
            + (f", 1 worker {t['gw1'][-1]:.2f} s" if t["gw1"] else "")
            + f"; SimPy {t['simpy'][-1]:.2f} s, without records {t['simpy_sums'][-1]:.2f} s; "
            f"Ciw {t['ciw'][-1]:.2f} s")
    rep.check("c.keep_first", "GridWeb with run.keep_jobs: first computes the same metrics", same_metrics,
              f"mean response time of all {R} replications identical; {first_rows} job rows kept instead of "
              f"{gw_rows}")
    rate = {k: summary([c / s for c, s in zip(done[k], t[k])], best=max) for k in t if t[k]}
    label = (f"(c) Zikos grid, per-job throughput (completed jobs/s); "
             f"GridWeb {R} replications x {stop} completions")
    rows = (
        # id, GridWeb side, peer side, target
        ("c.simpy", "gw", f"keeping all {gw_rows:,} job rows", "simpy", "SimPy, keeping (end, response) of every job",
         TARGET_C_SIMPY),
        ("c.simpy.sums", "gw_first", f"run.keep_jobs: first ({first_rows:,} rows of replication 0)", "simpy_sums",
         "SimPy, summing response times (no per-job records)", TARGET_C_SIMPY),
        ("c.ciw", "gw", f"keeping all {gw_rows:,} job rows", "ciw", "Ciw (records every customer)", TARGET_C_CIW),
        ("c.simpy.1core", "gw1", f"on one core (workers=1), keeping all {gw_rows:,} job rows", "simpy",
         "SimPy, keeping (end, response) of every job", None),
        ("c.ciw.1core", "gw1", f"on one core (workers=1), keeping all {gw_rows:,} job rows", "ciw", "Ciw", None),
    )
    for id_, gw, gw_what, peer, peer_what, target in rows:
        if gw not in rate:
            continue
        base = peer.split("_")[0]
        ratio = rate[gw]["best"] / rate[peer]["best"]
        rep.row(id_, f"{label}, {gw_what}, vs {peer_what} ({cfg[base + '_completions']} completions per run)",
                fmt_summary(rate[gw], fmt_rate), {"simpy": "SimPy ", "ciw": "Ciw "}[base] + fmt_summary(rate[peer], fmt_rate),
                ratio,
                f">= {target:g}x" if target else "(information)", ratio >= target if target else None,
                gridweb_jobs_per_s=rate[gw], peer_jobs_per_s=rate[peer], gridweb_seconds=summary(t[gw]),
                peer_seconds=summary(t[peer]), gridweb_completions=done[gw][0], peer_completions=done[peer][0])
    _statistical_check(rep, "c.stat.simpy", "SimPy", gw_means, stop, simpy_means, cfg["simpy_completions"])
    _statistical_check(rep, "c.stat.ciw", "Ciw", gw_means, stop, ciw_means, cfg["ciw_completions"])


def _exact_lwr_checks(cfg: dict, rep: Report, scenario, model: peers.GridModel) -> None:
    """Replay GridWeb's replication 0 workload (arrival times, demands, sites) in the peers."""
    data = scenario.model_dump(mode="json")
    data["run"]["replications"] = 1
    res = simengine.run(simengine.load_scenario(data, base_dir=str(ZIKOS.parent)))
    jobs = res.jobs
    for peer, fn in (("simpy", peers.simpy_lwr), ("ciw", peers.ciw_lwr)):
        k = cfg[f"{peer}_check_jobs"]
        workload = (jobs["submit"][:k].tolist(), jobs["runtime"][:k].tolist(), jobs["cluster"][:k].tolist())
        out = fn(model, k, 0, workload=workload)
        gw = jobs["start"][:k]
        ps = np.array(out.start)
        both = ~np.isnan(gw)
        err = float(np.max(np.abs(ps[both] - gw[both]))) if both.any() else math.nan
        ok = bool(both.any()) and not np.isnan(ps[both]).any() and err <= 1e-9
        name = {"simpy": "SimPy", "ciw": "Ciw"}[peer]
        rep.check(f"c.exact.{peer}", f"{name} LWR on GridWeb's replication-0 workload (first {k} jobs): "
                  "same start times", ok,
                  f"{int(both.sum())} jobs compared, max |start difference| = {err:.3g} s")


def _statistical_check(rep: Report, id_: str, name: str, gw_values, gw_completions: int, peer_values,
                       peer_completions: int) -> None:
    """Independent runs: does the peers' mean response time agree with GridWeb's replications?

    The spread of one replication's mean response time is taken from GridWeb's R
    replications and scaled by sqrt(run length) for the peer's (shorter) runs; the
    difference of the two means is then compared with its standard error (|z| < 3).
    """
    gw = np.asarray([v for v in gw_values if v is not None and not math.isnan(v)])
    pv = np.asarray(peer_values)
    sd = float(gw.std(ddof=1))
    sd_peer = sd * math.sqrt(gw_completions / peer_completions)
    se = math.sqrt(sd ** 2 / len(gw) + sd_peer ** 2 / len(pv))
    z = (pv.mean() - gw.mean()) / se
    rel = pv.mean() / gw.mean() - 1
    rep.check(id_, f"{name} mean response time agrees with GridWeb's (independent random streams, |z| < 3)",
              abs(z) < 3,
              f"{name} {pv.mean():.4f} over {len(pv)} runs of {peer_completions} completions "
              f"({', '.join(f'{x:.3f}' for x in pv)}); GridWeb {gw.mean():.4f} over {len(gw)} replications "
              f"(per-replication sd {sd:.3f}); difference {rel:+.1%}, z = {z:+.2f}")


# ---- (d) LCG memory ------------------------------------------------------------------------

_RSS_WRAPPER = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
                "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(r.returncode)")


def bench_d(cfg: dict, rep: Report) -> None:
    log("(d) LCG-2005-1 replay with EASY: peak RSS of `python -m simengine replay`")
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-c", _RSS_WRAPPER, sys.executable, "-m", "simengine", "replay", str(LCG),
               "--scheduler", "easy", "--out", str(Path(tmp) / "out"), "--quiet"]
        proc, seconds = timed(subprocess.run, cmd, cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"LCG replay failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
        kib = int(proc.stdout.strip().splitlines()[-1])
        summary_json = json.loads((Path(tmp) / "out" / "summary.json").read_text())
    jobs = summary_json.get("jobs")
    gb = kib * 1024 / 1e9
    log(f"  peak RSS {gb:.3f} GB, wall {seconds:.1f} s, {jobs} jobs")
    rep.row("d.lcg", f"(d) LCG-2005-1 replay, EASY on MaxProcs, {jobs} jobs: peak RSS of the CLI process "
            f"(wall {seconds:.1f} s incl. start-up and writing outputs)", f"{gb:.3f} GB", "—", None,
            f"< {TARGET_D_RSS_GB:g} GB", gb < TARGET_D_RSS_GB, peak_rss_kib=kib, wall_seconds=seconds,
            jobs=jobs)


# ---- (e) the event core (reservations and preemption) ----------------------------------------

def bench_e(cfg: dict, rep: Report) -> None:
    log("(e) DAS2-fs1 at offered load 0.85, ten reservations, two priorities, suspend: the event core "
        "vs the previous event loop")
    submit, runtime, estimate, size = local_events.workload(10**9)
    rows = local_events.measure(submit, runtime, estimate, size, local_events.PROCESSORS, cfg["reps"],
                                out=lambda line: log("  " + line))
    for r in rows:
        rep.check(f"e.{r['policy']}.same", f"{r['policy']}: the event core's schedule = the kernel's (plain) and "
                  "the previous loop's (AR+suspend)", r["same"], f"{r['jobs']} jobs")
        target = r.get("target")
        rep.row(f"e.{r['policy']}", f"(e) DAS2-fs1 {r['jobs']} jobs at load 0.85 with reservations and suspend: "
                f"GridWeb {r['policy']} (event core)", fmt_rate(r["ar_suspend"]),
                f"previous event loop {fmt_rate(r['previous'])}", r["ar_suspend"] / r["previous"],
                f">= {target:,.0f} jobs/s" if target else "(information)",
                r["ar_suspend"] >= target if target else None, gridweb_jobs_per_s=r["ar_suspend"],
                peer_jobs_per_s=r["previous"], kernel_jobs_per_s=r["kernel"], plain_jobs_per_s=r["events"])


# ---- (f) Cao's system -------------------------------------------------------------------------

def bench_f(cfg: dict, rep: Report) -> None:
    log("(f) Cao's system: the compiled loop vs the previous loop on the reproduction's runs")
    for r in cao_events.measure_runs(cfg["reps"], out=lambda line: log("  " + line)):
        what = f"seed {r['seed']}, {r['fraction']:.0%} workflows, propagation {r['propagation']}"
        rep.check(f"f.{r['seed']}.{r['fraction']}.same", f"Cao {what}: the compiled loop's schedule = the "
                  "previous loop's", r["same"], f"{r['jobs']} jobs and tasks")
        rep.row(f"f.{r['seed']}.{r['fraction']}", f"(f) Cao, 4 x 20,000 jobs, {what}: GridWeb (compiled loop)",
                fmt_s(r["compiled"]), f"previous loop {fmt_s(r['previous'])}", r["previous"] / r["compiled"],
                "(information)", None, gridweb_seconds=r["compiled"], peer_seconds=r["previous"], jobs=r["jobs"])
    if cfg["cao_reproduction"]:
        r = cao_events.measure_reproduction(out=lambda line: log("  " + line))
        rep.row("f.reproduction", f"(f) python -m simengine reproduce cao: {r['runs']} runs on 2 workers, wall "
                f"({r['busy']:.0f} s of simulation)", fmt_s(r["wall"]), "—", None,
                f"< {r['target']:.0f} s", r["wall"] < r["target"], gridweb_seconds=r["wall"])


# ---- report --------------------------------------------------------------------------------

def machine() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        nproc = int(subprocess.run(["nproc"], capture_output=True, text=True).stdout)
    except (OSError, ValueError):
        nproc = len(os.sched_getaffinity(0))
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--", "simengine"], cwd=ROOT,
                                    capture_output=True, text=True).stdout.strip())
    except OSError:
        head, dirty = "unknown", False
    versions = {}
    for pkg in ("numpy", "numba", "simpy", "ciw"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    return {"cpu": cpu, "nproc": nproc, "python": platform.python_version(), "platform": platform.platform(),
            "versions": versions, "git": head + (" (simengine modified)" if dirty else "")}


def print_table(report: Report, info: dict) -> None:
    m = info["machine"]
    print(f"\nGridWeb engine benchmarks ({info['mode']}), {info['date']}: {m['cpu']}, {m['nproc']} cores, "
          f"Python {m['python']}, " + ", ".join(f"{k} {v}" for k, v in m["versions"].items())
          + f", commit {m['git']}")
    la = info["load_average"]
    print(f"total benchmark time {info['seconds']:.0f} s; best of {info['reps']} interleaved repetitions "
          f"(median in brackets); 1-min load average {la['before'][0]:.2f} before, "
          f"{la['after'][0]:.2f} after\n")
    for r in report.rows:
        ratio = "" if r["ratio"] is None else f"{r['ratio']:,.1f}x"
        print(f"{r['status']:4s}  {r['benchmark']}")
        print(f"      GridWeb: {r['gridweb']}   peer: {r['peer']}   ratio: {ratio or '—'}   "
              f"target: {r['target']}")
    print("\nCross-checks:")
    for c in report.checks:
        print(f"{c['status']:4s}  {c['check']}\n      {c['detail']}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer replications and shorter peer runs (< 2 min)")
    ap.add_argument("--only", default="abcdef", help="run only these sections, e.g. --only ab")
    ap.add_argument("--reps", type=int,
                    help="repetitions of each measurement (default 3); more on a busy machine")
    args = ap.parse_args(argv)
    cfg = dict(QUICK if args.quick else FULL)
    if args.reps:
        cfg["reps"] = args.reps
        cfg["conservative_reps"] = min(cfg["conservative_reps"], args.reps)
    report = Report()
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    for key, fn in (("a", bench_a), ("b", bench_b), ("c", bench_c), ("d", bench_d), ("e", bench_e),
                    ("f", bench_f)):
        if key in args.only:
            fn(cfg, report)
    info = {"date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "mode": "quick" if args.quick else "full", "reps": cfg["reps"], "config": cfg,
            "machine": machine(), "seconds": time.perf_counter() - t0,
            "load_average": {"before": load_before, "after": os.getloadavg()}}
    print_table(report, info)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({**info, "rows": report.rows, "checks": report.checks}, indent=1))
    print(f"\nwritten {RESULTS.relative_to(ROOT)}")
    return 0 if all(c["status"] == "PASS" for c in report.checks) else 1


if __name__ == "__main__":
    sys.exit(main())
