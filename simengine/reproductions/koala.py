"""Mohamed's thesis (seed 004), §5.1: KOALA's placement and claiming with workloads W30 and W50.

MODELS.md §4; the model and its options are in docs/grid.md (KOALA). DAS-2 as at the
start of the experiments (thesis Table 5.1: 144, 56, 56, 64, 64 processors, preset
``das2-w30``); 200 KOALA jobs, all of high priority, arriving as a Poisson process at the
rate that makes their work 30% (W30) or 50% (W50) of the system; 1, 2 or 4 components of
8 or 16 processors (6 shapes equally likely), runtime 192 s (size 8) or 90 s (size 16);
one input file of 2, 4 or 6 GB per job, at one random site or replicated on 3 random
sites; background load kept between 30% and 40% per cluster by the band controller; scan
interval 60 s, L = 0.75, T = 1, history table H with every pair, no limits on tries.
Placement by Close-to-Files (CF) and Worst-Fit (WF), each without and with replication.

What the thesis does not give, and we decide (scenario parameters, visible in the CSVs):
the file sites are the five clusters; the wide-area bandwidths are the matrix
:data:`BANDWIDTH` (MB/s, between 50 and 125: the DAS-2 sites shared 1 Gbit/s links);
background jobs have sizes uniform on 1..16 and exponential runtimes of mean 600 s.
Each configuration runs ``replications`` times (seeds 1.., common random numbers: CF and
WF see the same jobs and the same background draws). ``--quick``: 3 replications.

W30 also runs §5.1.8 (Figures 5.9 and 5.10): CF with replication only, the background load held
at 50% or 60% -- the band controller with the band 50-60% or 60-70% (:data:`HIGH_BACKGROUNDS`:
our reading of "a background load of 50% or 60%": the target is the band's ``low``, up to which
the controller injects background jobs, and the band is 10 points wide as the thesis's 30-40%),
with the same replications and seeds as the other figures.

Every claim's outcome rests on the decisions chosen by fit (:data:`KOALA_FIT`): the bandwidths
set the FTT, hence the claiming windows, PGT and PWT; the background-job model sets how much the
background overshoots the band and how often it takes placed processors, hence the load, the
claiming tries and the placement times.
"""
from __future__ import annotations

import csv
import math
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable

import numpy as np

from simengine.reproductions import (Claim, Progress, difference_text, no_progress, shown_lower, write_claims,
                                     write_figure_csv)
from simengine.results import Metric, percentile_linear
from simengine.grid.koala_run import simulate_koala_replication
from simengine.scenario import load_scenario

SITES = ("vu", "leiden", "uva", "delft", "utrecht")
#: Our decision (the thesis gives no bandwidths): MB/s between the DAS-2 sites, read both ways.
BANDWIDTH = {"vu": {"leiden": 100.0, "uva": 125.0, "delft": 60.0, "utrecht": 80.0},
             "leiden": {"uva": 80.0, "delft": 100.0, "utrecht": 60.0},
             "uva": {"delft": 50.0, "utrecht": 100.0},
             "delft": {"utrecht": 70.0}}
#: what the transfer-time claims rest on (MODELS.md §4: the bandwidths are a Decision chosen by fit)
BANDWIDTH_FIT = ("the bandwidths, which the thesis does not give: wide-area 50-125 MB/s (BANDWIDTH), "
                 "150 MB/s within a site (the DAS presets' intra_site_bandwidth)")
#: the band controller's jobs, also a Decision chosen by fit (docs/grid.md, KOALA): it sets how far the
#: background overshoots the band's low end and how often it takes processors KOALA placed
BACKGROUND_FIT = ("the background-job model, which the thesis does not give: sizes U{1..16}, runtimes "
                  "exponential of mean 600 s (the band controller's jobs)")
#: what every KOALA claim's outcome rests on: the bandwidths and the background-job model
KOALA_FIT = f"{BANDWIDTH_FIT}; {BACKGROUND_FIT}"
SHAPES = tuple((c, s) for c in (1, 2, 4) for s in (8, 16))
CONFIGS = (("CF", "close-to-files", 1), ("CF+rep", "close-to-files", 3), ("WF", "worst-fit", 1),
           ("WF+rep", "worst-fit", 3))
#: thesis §5.1.7: the job-spread workload (2 or 4 components of 4, 8, 16 or 24, one 2 GB file, 30%);
#: runtimes are not given: we keep the work of a component constant, runtime = 1536 s / size
#: (8 -> 192 s as in W30; 16 -> 96 s, W30's is 90 s)
SPREAD_SHAPES = tuple((c, s) for c in (2, 4) for s in (4, 8, 16, 24))
#: ``refine``: the replications a configuration is measured again with when one of its level
#: claims lies within the noise (:func:`within_noise`); the first ``replications`` are the same runs
FULL = {"replications": 20, "refine": 80}
QUICK = {"replications": 3, "refine": 6}
#: the level claims of each workload, as the thesis words them, read as bands on a configuration's
#: mean (low, high; None: open), written before measuring. One table, used by the claims and by
#: the re-measurement rule.
LEVELS = {30: {"koala_load": (0.25, 0.35), "total_load": (0.62, 0.78), "pwt_utilisation": (None, 0.035),
               "pgt_utilisation": (0.06, 0.09), "mean_claiming_tries": (None, 1.5), "drain_time": (None, 1200.0)},
          50: {"koala_load": (None, 0.40), "total_load": (0.68, 0.82), "mean_claiming_tries": (None, 3.0),
               "drain_time": (1800.0, None)}}
#: thesis §5.1.8: W30, CF with replication, background load held at 50% or 60% -- label -> the band
#: (low, high); 30-40% is the band of every other experiment (W30's CF+rep is its row)
HIGH_BACKGROUNDS = {"50%": (0.5, 0.6), "60%": (0.6, 0.7)}
#: the part of each §5.1.8 claim's reading that is the band
BAND_READING = ("'a background load of 50% or 60%' as the band 50-60% or 60-70% (the target is the band's low "
                "end, up to which background jobs are injected; 10 points wide as the thesis's 30-40%)")


def scenario(load: float, placement: str, replicas: int, seed: int = 1) -> dict:
    """The W30 (load 0.3) or W50 (0.5) scenario with one placement policy and replica count."""
    return {
        "name": f"koala-w{round(load * 100)}-{placement}-{replicas}",
        "platform": {"preset": "das2-w30", "bandwidth": BANDWIDTH},
        "workload": {"streams": [{
            "kind": "koala", "name": "koala", "count": 200, "priority": "high",
            "arrival": {"target_load": load},
            "shapes": [{"components": c, "size": s, "runtime": 192.0 if s == 8 else 90.0} for c, s in SHAPES],
            "file": {"size": {"kind": "choice", "values": [2048, 4096, 6144]}, "replicas": replicas},
            "background": {"low": 0.3, "high": 0.4, "interval": 60.0,
                           "size": {"kind": "uniform", "low": 1, "high": 16, "integer": True},
                           "runtime": {"kind": "exponential", "mean": 600.0}}}]},
        "grid": {"placement": {"name": placement},
                 "deadline_policy": {"name": "koala", "params": {"scan_interval": 60.0, "L": 0.75,
                                                                 "threshold": 1.0}}},
        "run": {"seed": seed, "replications": 1},
    }


def spread_scenario(placement: str, replicas: int) -> dict:
    """The §5.1.7 workload: job spread and the fraction of jobs using co-allocation."""
    d = scenario(0.3, placement, replicas)
    st = d["workload"]["streams"][0]
    st["shapes"] = [{"components": c, "size": s, "runtime": 1536.0 / s} for c, s in SPREAD_SHAPES]
    st["file"]["size"] = {"kind": "constant", "value": 2048}
    d["name"] = f"koala-spread-{placement}-{replicas}"
    return d


def measure_spread(replications: int) -> dict:
    res = {}
    for label, placement, replicas in CONFIGS:
        s = load_scenario(spread_scenario(placement, replicas))
        per = defaultdict(lambda: defaultdict(list))
        for r in range(replications):
            for k in simulate_koala_replication(s, r, False, False).outcome.jobs:
                if k.state == "done":
                    key = f"{len(k.job.sizes)}x{k.job.sizes[0]}"
                    n = len({c[1] for c in k.comps})
                    per[key]["job_spread"].append(n / len(k.comps))
                    per[key]["coallocated"].append(float(n > 1))
        res[label] = per
    return res


def background_scenario(low: float, high: float) -> dict:
    """The §5.1.8 experiment: W30, CF with replication, the background band [low, high]."""
    d = scenario(0.3, "close-to-files", 3)
    band = d["workload"]["streams"][0]["background"]
    band["low"], band["high"] = low, high
    d["name"] = f"koala-w30-close-to-files-3-background-{round(low * 100)}-{round(high * 100)}"
    return d


def measure_background(replications: int, log, progress: Progress = no_progress) -> dict:
    """Per §5.1.8 background load (HIGH_BACKGROUNDS): the replications' metrics, per shape each
    replication's mean of its done jobs (a Metric over the replications), and what the claims'
    investigations use: per replication the utilisation of the transfers (every done job's FTT on
    its processors: PGT's ceiling), the fraction of jobs placed more than once, and the PGT / FTT of
    the jobs placed once and of the jobs placed again."""
    res = {}
    for done, (label, (low, high)) in enumerate(HIGH_BACKGROUNDS.items()):
        progress(done, len(HIGH_BACKGROUNDS), "high background loads")
        s = load_scenario(background_scenario(low, high))
        mets, shape = [], defaultdict(lambda: defaultdict(list))
        replaced, share_once, share_again = [], [], []
        for r in range(replications):
            out = simulate_koala_replication(s, r, False, False)
            m = _with_drain(out.metrics)
            jobs = [k for k in out.outcome.jobs if k.state == "done"]
            per = defaultdict(lambda: defaultdict(list))
            _add_per_shape(per, jobs)
            for c, sz in SHAPES:
                for name in PER_SHAPE:
                    v = per[f"{c}x{sz}"][name]
                    shape[f"{c}x{sz}"][name].append(float(np.mean(v)) if v else math.nan)
            pgt_work = sum(k.pgt * sum(cp[0] for cp in k.comps) for k in jobs)
            ftt_work = sum(k.ftt * sum(cp[0] for cp in k.comps) for k in jobs)
            m["ftt_utilisation"] = m["pgt_utilisation"] * ftt_work / pgt_work if pgt_work > 0 else math.nan
            mets.append(m)
            replaced += [float(k.placements > 1) for k in jobs]
            share_once += [k.pgt / k.ftt for k in jobs if k.placements == 1 and k.ftt > 0]
            share_again += [k.pgt / k.ftt for k in jobs if k.placements > 1 and k.ftt > 0]
        names = sorted({k for m in mets for k in m})
        res[label] = {"band": (low, high),
                      "metrics": {k: Metric.from_values(k, [m.get(k, math.nan) for m in mets]) for k in names},
                      "shape": {key: {k: Metric.from_values(k, v) for k, v in d.items()} for key, d in shape.items()},
                      "replaced": float(np.mean(replaced)) if replaced else math.nan,
                      "pgt_share": (float(np.mean(share_once)) if share_once else math.nan,
                                    float(np.mean(share_again)) if share_again else math.nan)}
        m = res[label]["metrics"]
        log(f"  W30 CF+rep, background {label} (band {low:.0%}-{high:.0%}): background {m['background_load'].mean:.1%}, "
            f"KOALA load {m['koala_load'].mean:.1%}, total {m['total_load'].mean:.1%}, PWT "
            f"{m['pwt_utilisation'].mean:.1%}, PGT {m['pgt_utilisation'].mean:.1%}, claiming tries "
            f"{m['mean_claiming_tries'].mean:.2f}, 4x16 placement time {res[label]['shape']['4x16']['placement_time'].mean:.0f} s, "
            f"last completion {m['drain_time'].mean:.0f} s after the last arrival")
    progress(len(HIGH_BACKGROUNDS), len(HIGH_BACKGROUNDS), "high background loads")
    return res


def _background_figures(res: dict, bg: dict) -> list[dict]:
    """Figures 5.9 (utilisations; 30-40% is W30's CF+rep) and 5.10 (per job shape), and the runs' stability."""
    runs = {"30-40%": res["CF+rep"], **bg}
    rows = [(label, LABEL[k], k, runs[label]["metrics"][k]) for label in runs for k in UTIL]
    figs = [{"id": "w30-high-background-utilisation", "title": "Figure 5.9. Utilisations of CF with replication, "
             "W30, background load 30-40%, 50% and 60%", "x": "background load", "rows": rows, "percent": True}]
    rows = [(f"{c}x{s}", label, k, bg[label]["shape"][f"{c}x{s}"][k])
            for label in bg for c, s in SHAPES for k in PER_SHAPE]
    figs.append({"id": "w30-high-background-per-shape", "title": "Figure 5.10. Placement time, claiming tries, "
                 "placement tries and FTT per job shape (C x S; per replication its jobs' mean), CF with replication, "
                 "W30, background load 50% and 60%", "x": "job shape", "rows": rows})
    rows = [(label, LABEL[k], k, runs[label]["metrics"][k]) for label in runs
            for k in ("last_arrival", "makespan", "max_placement_queue")]
    figs.append({"id": "w30-high-background-stability", "title": "Stability of CF with replication, W30, background "
                 "load 30-40%, 50% and 60%: last arrival, last completion, largest placement queue",
                 "x": "background load", "rows": rows})
    return figs


UTIL = ("background_load", "koala_load", "pwt_utilisation", "pgt_utilisation", "total_load")
PER_SHAPE = ("placement_time", "ftt", "placement_tries", "claiming_tries")
LABEL = {"background_load": "background", "koala_load": "KOALA load", "pwt_utilisation": "PWT",
         "pgt_utilisation": "PGT", "total_load": "total", "placement_time": "mean placement time (s)",
         "ftt": "mean FTT (s)", "placement_tries": "placement tries", "claiming_tries": "claiming tries",
         "max_placement_queue": "largest placement queue", "makespan": "time of the last completion (s)",
         "last_arrival": "last arrival (s)", "mean_ftt": "mean FTT (s)", "mean_claiming_tries": "claiming tries",
         "p25": "25th percentile", "median": "median", "mean": "mean", "p75": "75th percentile",
         "p90": "90th percentile", "job_spread": "mean job spread (%)",
         "coallocated": "jobs using co-allocation (%)"}


def _add_per_shape(into: dict, jobs) -> None:
    """Append each job's PER_SHAPE values to ``into[shape][name]`` (shape ``CxS``)."""
    for k in jobs:
        per = into[f"{len(k.job.sizes)}x{k.job.sizes[0]}"]
        per["placement_time"].append(k.placement_time)
        per["ftt"].append(k.ftt)
        per["placement_tries"].append(k.place_tries)
        per["claiming_tries"].append(k.claim_tries)


def _with_drain(metrics: dict) -> dict:
    """A replication's metrics and its ``drain_time``: the last completion after the last arrival."""
    return {**metrics, "drain_time": metrics["makespan"] - metrics["last_arrival"]}


def measure(load: float, replications: int, log, progress: Progress = no_progress,
            labels: tuple[str, ...] | None = None) -> dict:
    """Per configuration (``labels``: only those): the replications' metrics and per-shape job statistics."""
    res = {}
    configs = [c for c in CONFIGS if labels is None or c[0] in labels]
    for done, (label, placement, replicas) in enumerate(configs):
        progress(done, len(configs), "configurations")
        s = load_scenario(scenario(load, placement, replicas))
        mets, shape = [], defaultdict(lambda: defaultdict(list))
        queue = None
        for r in range(replications):
            out = simulate_koala_replication(s, r, False, False)
            mets.append(_with_drain(out.metrics))
            _add_per_shape(shape, [k for k in out.outcome.jobs if k.state == "done"])
            if r == 0:
                queue = out.outcome.queue_trace
        names = sorted({k for m in mets for k in m})
        res[label] = {"metrics": {k: Metric.from_values(k, [m.get(k, math.nan) for m in mets]) for k in names},
                      "shape": shape, "queue": queue}
        m = res[label]["metrics"]
        log(f"  W{round(load * 100)} {label}: KOALA load {m['koala_load'].mean:.1%}, total {m['total_load'].mean:.1%}, "
            f"PWT {m['pwt_utilisation'].mean:.1%}, PGT {m['pgt_utilisation'].mean:.1%}, claiming tries "
            f"{m['mean_claiming_tries'].mean:.2f}, FTT {m['mean_ftt'].mean:.0f} s, placement queue up to "
            f"{m['max_placement_queue'].mean:.0f} ({replications} replications)")
    progress(len(configs), len(configs), "configurations")
    return res


def within_noise(w: int, res: dict) -> list[str]:
    """The configurations with a level claim (:data:`LEVELS`) whose 95% interval holds an end of its
    band: the replications do not decide which side the mean is on. Symmetric: whether the mean
    meets the band or misses it, such a configuration is measured again (``refine``)."""
    found = []
    for label in res:
        for k, band in LEVELS[w].items():
            m = res[label]["metrics"][k]
            if m.ci_low is not None and any(e is not None and m.ci_low <= e <= m.ci_high for e in band):
                found.append(label)
                break
    return found


def _figures(w: int, res: dict) -> list[dict]:
    figs = []
    rows = [(label, LABEL[k], k, res[label]["metrics"][k]) for label in res for k in UTIL]
    figs.append({"id": f"w{w}-utilisation", "title": f"Figure 5.{1 if w == 30 else 5}. Utilisations, W{w}",
                 "x": "policy", "rows": rows, "percent": True})
    rows = []
    for label in res:
        for shape in (f"{c}x{s}" for c, s in SHAPES):
            for k in PER_SHAPE:
                v = res[label]["shape"][shape][k]
                rows.append((shape, label, k, Metric.from_values(k, [float(np.mean(v))] if v else [])))
    figs.append({"id": f"w{w}-per-shape", "title": f"Figures 5.{2 if w == 30 else 6} and 5.{4 if w == 30 else 7}. "
                 f"FTT, placement time and tries per job shape (C x S), W{w}", "x": "job shape", "rows": rows})
    if w == 30:
        rows = []
        for label in res:
            for shape in (f"{c}x{s}" for c, s in SHAPES):
                v = np.asarray(res[label]["shape"][shape]["placement_time"], float)
                for name, val in (("p25", percentile_linear(v, 25) if len(v) else math.nan),
                                  ("median", percentile_linear(v, 50) if len(v) else math.nan),
                                  ("mean", float(v.mean()) if len(v) else math.nan),
                                  ("p90", percentile_linear(v, 90) if len(v) else math.nan)):
                    rows.append((shape, label, name, Metric.from_values(name, [val])))
        figs.append({"id": "w30-placement-time-statistics", "title": "Figure 5.3. Placement time statistics "
                     "(s, all replications pooled), W30", "x": "job shape", "rows": rows})
    rows = []
    for label in res:
        for k in ("last_arrival", "makespan", "max_placement_queue"):
            rows.append((label, LABEL[k], k, res[label]["metrics"][k]))
    figs.append({"id": f"w{w}-stability", "title": f"Stability, W{w}: last arrival, last completion, largest "
                 "placement queue", "x": "policy", "rows": rows})
    return figs


def _write_csv(fig: dict, path: Path) -> None:
    scale = 100.0 if fig.get("percent", False) else 1.0
    write_figure_csv(path, (fig["x"], "series", "metric"),
                     (((x, series, metric), m, scale) for x, series, metric, m in fig["rows"]))


_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")


def _write_html(fig: dict, path: Path, labels: dict[str, str] | None = None) -> None:
    # (bokeh takes ~0.5 s to import: only when the figures are drawn)
    from bokeh.embed import file_html
    from bokeh.layouts import column
    from bokeh.models import ColumnDataSource, Whisker
    from bokeh.plotting import figure
    from bokeh.resources import INLINE

    pct = 100.0 if fig.get("percent") else 1.0
    panels = []
    xs = list(dict.fromkeys(r[0] for r in fig["rows"]))
    for metric in dict.fromkeys(r[2] for r in fig["rows"]):
        title = (labels or LABEL).get(metric, metric) + (" (%)" if pct > 1 else "")
        p = figure(title=f"{fig['title']}: {title}", x_range=xs, width=900, height=360, x_axis_label=fig["x"],
                   y_axis_label=title, tools="pan,wheel_zoom,box_zoom,hover,save,reset")
        for k, series in enumerate(dict.fromkeys(r[1] for r in fig["rows"] if r[2] == metric)):
            pts = [(x, m) for x, s, mm, m in fig["rows"] if s == series and mm == metric and not math.isnan(m.mean)]
            src = ColumnDataSource({"x": [x for x, _ in pts], "y": [m.mean * pct for _, m in pts],
                                    "lo": [(m.ci_low if m.ci_low is not None else m.mean) * pct for _, m in pts],
                                    "hi": [(m.ci_high if m.ci_high is not None else m.mean) * pct for _, m in pts],
                                    "series": [series] * len(pts)})
            colour = _COLOURS[k % len(_COLOURS)]
            p.scatter("x", "y", source=src, size=9, color=colour, legend_label=series)
            p.add_layout(Whisker(source=src, base="x", lower="lo", upper="hi", line_color=colour))
        p.hover.tooltips = [("series", "@series"), (fig["x"], "@x"), ("mean", "@y{0.000}"),
                            ("95% CI", "@lo{0.000} .. @hi{0.000}")]
        p.legend.click_policy = "hide"
        p.add_layout(p.legend[0], "right")
        panels.append(p)
    path.write_text(file_html(column(*panels), INLINE, fig["title"]))


def _spread_claims(spread: dict) -> list[Claim]:
    def avg(label, k, shapes=None):
        v = [x for key, d in spread[label].items() if shapes is None or key in shapes for x in d[k]]
        return float(np.mean(v)) if v else math.nan

    cf_rep = min(avg("CF+rep", "job_spread", {f"{c}x{s}"}) for c, s in SPREAD_SHAPES)
    wf = (avg("WF", "job_spread"), avg("WF+rep", "job_spread"))
    two = avg("WF", "coallocated", {f"2x{s}" for s in (4, 8, 16, 24)})
    four = avg("WF", "coallocated", {f"4x{s}" for s in (4, 8, 16, 24)})
    cf2, cf4 = (avg("CF", "coallocated", {f"{c}x{s}" for s in (4, 8, 16, 24)}) for c in (2, 4))
    return [
        Claim("W30 spread: CF with replication places at least half of the components on separate clusters",
              "job spread >= 50% for every shape", f"smallest {cf_rep:.0%}", cf_rep >= 0.5,
              reading="'at least half' checked on every shape's own spread (the per-shape minimum)", fit=KOALA_FIT),
        Claim("W30 spread: WF's job spread is not affected by replication", "about equal",
              f"WF {wf[0]:.0%}, WF+rep {wf[1]:.0%}", abs(wf[0] - wf[1]) <= 0.05,
              reading="'not affected' as within 5 points", fit=KOALA_FIT),
        Claim("W30 spread: CF with replication uses co-allocation more than WF; without replication the opposite",
              "CF+rep > WF > CF", f"CF+rep {avg('CF+rep', 'coallocated'):.0%}, WF {avg('WF', 'coallocated'):.0%}, "
              f"CF {avg('CF', 'coallocated'):.0%}",
              avg("CF+rep", "coallocated") > avg("WF", "coallocated") > avg("CF", "coallocated"), fit=KOALA_FIT),
        Claim("W30 spread: more components, more jobs using co-allocation", "4 components > 2",
              f"WF {two:.0%} -> {four:.0%}; CF {cf2:.0%} -> {cf4:.0%}", four > two and cf4 > cf2, fit=KOALA_FIT),
    ]


def _write_queue_html(res: dict, path: Path) -> None:
    # (bokeh takes ~0.5 s to import: only when the figures are drawn)
    from bokeh.embed import file_html
    from bokeh.plotting import figure
    from bokeh.resources import INLINE

    p = figure(title="W50: placement queue length over time (replication 0)", width=900, height=380,
               x_axis_label="time (s)", y_axis_label="jobs in the placement queue",
               tools="pan,wheel_zoom,box_zoom,hover,save,reset")
    for k, label in enumerate(res):
        q = res[label]["queue"] or [(0.0, 0)]
        p.step([t for t, _ in q], [n for _, n in q], mode="after", line_width=2,
               color=_COLOURS[k % len(_COLOURS)], legend_label=label)
    p.legend.click_policy = "hide"
    path.write_text(file_html(p, INLINE, "W50 placement queue"))


def _m(res, label, k):
    return res[label]["metrics"][k].mean


def _claims(w: int, res: dict, refined: tuple[str, ...] = ()) -> list[Claim]:
    """The thesis's §5.1 outcomes for W``w``. ``refined``: the configurations measured again because a
    level claim was within their noise (named in the measured column)."""
    labels = [c[0] for c in CONFIGS]
    again = (f"; re-measured with {res[refined[0]]['metrics']['koala_load'].replications} replications "
             f"(within the noise of a band's end): {', '.join(refined)}") if refined else ""

    def level(k, fmt="{:.1%}"):
        """Is every configuration's mean of ``k`` inside its LEVELS band, and each one's mean and 95% interval."""
        low, high = LEVELS[w][k]
        inside = all((low is None or low <= _m(res, lab, k)) and (high is None or _m(res, lab, k) <= high)
                     for lab in labels)
        return inside, ", ".join(f"{lab} {_ci(res[lab]['metrics'][k], fmt)}" for lab in labels) + again

    claims = []
    if w == 30:
        ok, txt = level("koala_load")
        claims.append(Claim("W30: KOALA (co-allocation) load about 30% for CF and WF, with and without replication",
                            "about 30%", txt, ok, reading="'about 30%' as 25-35%",
                            fit=KOALA_FIT, construction="the arrival rate is set so that KOALA's work is 30% of the "
                            "system over the arrivals (target_load 0.3): the check is that the runs keep up with it"))
        ok, txt = level("total_load")
        claims.append(Claim("W30: total utilisation about 70%", "about 70%", txt, ok,
                            reading="'about 70%' as 62-78%", fit=KOALA_FIT))
        ok, txt = level("pwt_utilisation")
        claims.append(Claim("W30: PWT utilisation about 2%", "about 2%", txt, ok, reading="'about 2%' as at most 3.5%",
                            fit=KOALA_FIT))
        ok, txt = level("pgt_utilisation")
        claims.append(Claim("W30: PGT utilisation 6-9%", "6% .. 9%", txt, ok, fit=KOALA_FIT))
        ratio = [_m(res, lab, "pgt_utilisation") / _m(res, lab, "pwt_utilisation") for lab in labels]
        claims.append(Claim("W30: with about 1 claiming try, PGT utilisation is three times PWT utilisation",
                            "PGT / PWT = 3", f"{min(ratio):.2f} .. {max(ratio):.2f}", 2.0 <= min(ratio) and
                            max(ratio) <= 4.0, reading="'three times' as 2 to 4 times", fit=KOALA_FIT))
        ok, txt = level("mean_claiming_tries", "{:.2f}")
        claims.append(Claim("W30: claiming tries about 1", "around 1", txt, ok, reading="'about 1' as at most 1.5",
                            fit=KOALA_FIT))
        # the configurations see the same jobs and background draws (seeds shared): paired comparisons
        ftt = {lab: res[lab]["metrics"]["mean_ftt"] for lab in labels}
        claims.append(Claim("W30: CF with replication gives the lowest mean FTT", "CF+rep lowest",
                            ", ".join(f"{k} {v.mean:.0f} s" for k, v in ftt.items()) + "; CF+rep - WF+rep: "
                            + difference_text(ftt["CF+rep"], ftt["WF+rep"], fmt=".1f"),
                            all(shown_lower(ftt["CF+rep"], ftt[lab]) for lab in labels if lab != "CF+rep"),
                            fit=KOALA_FIT))
        claims.append(Claim("W30: CF has a lower mean FTT than WF, with and without replication", "CF < WF",
                            f"CF - WF: {difference_text(ftt['CF'], ftt['WF'], fmt='.1f')}; CF+rep - WF+rep: "
                            f"{difference_text(ftt['CF+rep'], ftt['WF+rep'], fmt='.1f')} s",
                            shown_lower(ftt["CF"], ftt["WF"]) and shown_lower(ftt["CF+rep"], ftt["WF+rep"]),
                            fit=KOALA_FIT))
        ok, txt = level("drain_time", "{:.0f} s")
        claims.append(Claim("W30: stable, the experiments finish shortly after the last arrival",
                            "shortly after", f"after the last arrival: {txt}", ok,
                            reading="'shortly after' as within 1,200 s", fit=KOALA_FIT))
        small = [np.mean(res[lab]["shape"]["1x8"]["placement_time"]) for lab in labels]
        big = [np.mean(res[lab]["shape"]["4x16"]["placement_time"]) for lab in labels]
        claims.append(Claim("W30: placement time grows with the number and size of components",
                            "4x16 > 1x8", f"1x8 {min(small):.0f} .. {max(small):.0f} s; 4x16 {min(big):.0f} .. "
                            f"{max(big):.0f} s", min(b - s for b, s in zip(big, small)) > 0, fit=KOALA_FIT))
    else:
        ok, txt = level("koala_load")
        claims.append(Claim("W50: KOALA load well below 40%", "< 40%", txt, ok, fit=KOALA_FIT))
        ok, txt = level("total_load")
        claims.append(Claim("W50: total utilisation between 70% and 80%", "70% .. 80%", txt, ok,
                            reading="70-80% with 2 points either side", fit=KOALA_FIT))
        q = [_m(res, lab, "max_placement_queue") for lab in labels]
        claims.append(Claim("W50: saturated, the placement queue grows (up to 30 in the thesis)", "up to 30",
                            f"largest queue {min(q):.0f} .. {max(q):.0f} jobs", min(q) >= 15,
                            reading="'grows' as a largest queue of at least 15 jobs", fit=KOALA_FIT))
        ok, txt = level("drain_time", "{:.0f} s")
        claims.append(Claim("W50: the experiments finish long after the last arrival", "long after",
                            f"after the last arrival: {txt}", ok,
                            reading="'long after' as at least 1,800 s after", fit=KOALA_FIT))
        ok, txt = level("mean_claiming_tries", "{:.2f}")
        claims.append(Claim("W50: claiming tries still low (between 1 and 3)", "1 .. 3", txt, ok, fit=KOALA_FIT))
    return claims


def _ci(m: Metric, fmt: str = "{:.1%}") -> str:
    """A mean with its 95% interval, e.g. ``24.0% [23.4%, 24.6%]`` (just the mean without one)."""
    if m.ci_low is None:
        return fmt.format(m.mean)
    return f"{fmt.format(m.mean)} [{fmt.format(m.ci_low)}, {fmt.format(m.ci_high)}]"


def _background_claims(res: dict, bg: dict) -> list[Claim]:
    """Thesis §5.1.8: CF with replication, W30, background load 50% and 60% (``bg``; ``res``: the
    W30 configurations, whose CF+rep is the 30-40% background)."""
    labels = list(bg)
    hi_label = labels[-1]  # 60%

    def m(label, k) -> Metric:
        return bg[label]["metrics"][k]

    def each(k, fmt="{:.1%}") -> str:
        return "; ".join(f"{lab} {_ci(m(lab, k), fmt)}" for lab in labels)

    def with_band(reading: str) -> str:
        return f"{reading}; {BAND_READING}"

    head = "W30 CF+rep, background 50% and 60%"
    claims = []
    koala = [m(lab, "koala_load").mean for lab in labels]
    claims.append(Claim(f"{head}: the KOALA (co-allocation) load is much lower than 30%", "much lower than 30%",
                        each("koala_load"), max(koala) < 0.25, fit=KOALA_FIT,
                        reading=with_band("'much lower than 30%' as below 25%, the low end of W30's 'about 30%'")))
    late = [m(lab, "drain_time").mean for lab in labels]
    claims.append(Claim(f"{head}: saturated, the experiments take (much) more time than the arrivals",
                        "last arrival at about 6,500 s; the runs take (much) longer",
                        "last completion " + "; ".join(f"{lab} {x:.0f} s" for lab, x in zip(labels, late))
                        + f" after the last arrival (at {m(labels[0], 'last_arrival').mean:.0f} s)",
                        min(late) > 1200.0, fit=KOALA_FIT,
                        reading=with_band("saturated as the last completion more than 1,200 s after the last arrival "
                                          "(beyond W30's 'shortly after')")))
    total = [m(lab, "total_load").mean for lab in labels]
    claims.append(Claim(f"{head}: the real total utilisation ranges between 75% and 80%", "75% .. 80%",
                        "; ".join(f"{lab} {_ci(m(lab, 'total_load'))} (background {m(lab, 'background_load').mean:.1%})"
                                  for lab in labels),
                        0.73 <= min(total) and max(total) <= 0.82, fit=KOALA_FIT,
                        reading=with_band("75-80% with 2 points either side (as W50's 70-80%)")))
    pt = {f"{c}x{s}": bg[hi_label]["shape"][f"{c}x{s}"]["placement_time"].mean for c, s in SHAPES}
    longest = max(pt, key=pt.get)
    others = sorted((v, k) for k, v in pt.items() if k != "4x16")
    claims.append(Claim("W30 CF+rep, background 60%: a high background load is very bad for large jobs, those of 4 "
                        "components of 16 wait longest to be placed, far longer than the small jobs",
                        "4x16 longest, far above the small jobs",
                        f"4x16 {_ci(bg[hi_label]['shape']['4x16']['placement_time'], '{:.0f}')} s; next {others[-1][1]} "
                        f"{others[-1][0]:.0f} s; 1x8 {pt['1x8']:.0f} s",
                        longest == "4x16" and pt["4x16"] >= 5.0 * pt["1x8"], fit=KOALA_FIT,
                        reading=with_band("'far above the small jobs' as at least 5 times the 1x8 jobs' mean "
                                          "placement time")))
    hours = pt["4x16"] / 3600.0
    by_band = ", ".join(f"{lab} {bg[lab]['shape']['4x16']['placement_time'].mean / 3600.0:.2f} h" for lab in labels)
    base = float(np.mean(res["CF+rep"]["shape"]["4x16"]["placement_time"])) / 3600.0
    ok = 2.5 <= hours <= 4.1
    claims.append(Claim("W30 CF+rep, background 60%: the mean placement time of the jobs of 4 components of 16 is about "
                        "3.3 hours", "about 3.3 h", f"{hours:.2f} h", ok, fit=KOALA_FIT,
                        reading=with_band("'about 3.3 hours' as within 25% (2.5-4.1 h)"),
                        reason="" if ok else (
                            f"investigated: the 4x16 jobs' placement time grows steeply with the background (30-40% "
                            f"{base:.2f} h, {by_band}; an exploratory run of the band 70-80%, 20 replications, gave "
                            "about 2.5 h): with "
                            "our background-job model the thesis's 3.3 h would need a background above 70%")))
    done = [(min(m(lab, "koala_jobs_done").values), max(m(lab, "koala_jobs_measured").values),
             max(m(lab, "koala_jobs_failed").values)) for lab in labels]
    claims.append(Claim(f"{head}: despite long placement times, all jobs finish successfully", "all jobs finish",
                        "; ".join(f"{lab} {d:.0f} of {n:.0f} done, {f:.0f} failed (the worst replication)"
                                  for lab, (d, n, f) in zip(labels, done)),
                        all(d == n and f == 0 for d, n, f in done),
                        construction="no limit on placement or claiming tries (the thesis's setup) and no horizon: a "
                        "job the idle system can hold is placed in the end, and the run ends when every KOALA job is "
                        "done or failed"))
    tries = [m(lab, "mean_claiming_tries").mean for lab in labels]
    claims.append(Claim(f"{head}: the numbers of claiming tries are still quite low", "still quite low",
                        each("mean_claiming_tries", "{:.2f}") + f" (4x16 at {hi_label}: "
                        f"{bg[hi_label]['shape']['4x16']['claiming_tries'].mean:.1f})",
                        max(tries) <= 3.0, fit=KOALA_FIT,
                        reading=with_band("'quite low' as a mean of at most 3 tries a job, what §5.1.8 calls quite low "
                                          "('between 1 and 3')")))
    pgt = [m(lab, "pgt_utilisation").mean for lab in labels]
    ok = 0.07 <= min(pgt) and max(pgt) <= 0.20
    ceiling = ", ".join(f"{lab} {m(lab, 'ftt_utilisation').mean:.1%}" for lab in labels)
    claims.append(Claim(f"{head}: the PGT utilisation is in the range of 7 to 20%", "7% .. 20%",
                        each("pgt_utilisation"), ok, fit=KOALA_FIT, reading=BAND_READING,
                        reason="" if ok else (
                            f"investigated: a job's PGT is at most its FTT, and the file transfers themselves "
                            f"take {ceiling} of the system (every done job's FTT on its processors; mean FTT "
                            f"{m(hi_label, 'mean_ftt').mean:.0f} s against runs of 90-192 s), the PGT utilisation's "
                            "ceiling with our bandwidths; the jobs placed again claim with a lower L (the next "
                            "claim's finding)")))
    ratio = {lab: m(lab, "pgt_utilisation").mean / m(lab, "pwt_utilisation").mean for lab in labels}
    before = _m(res, "CF+rep", "pgt_utilisation") / _m(res, "CF+rep", "pwt_utilisation")
    ok = min(ratio.values()) > before
    once, again = bg[hi_label]["pgt_share"]
    claims.append(Claim(f"{head}: more claiming tries reduce the PWT in favour of the PGT",
                        "PGT / PWT higher than at 30-40%",
                        f"PGT / PWT: 30-40% {before:.2f}; " + "; ".join(f"{lab} {v:.2f}" for lab, v in ratio.items()),
                        ok, fit=KOALA_FIT,
                        reading=with_band("'reducing the PWT in favour of the PGT' as PGT / PWT higher at 50% and at "
                                          "60% than at 30-40% (W30's CF+rep)"),
                        reason="" if ok else (
                            f"investigated: a job whose claims fail until JST - JCT < 1 s goes back to placement with L "
                            f"lowered by 0.25 and claims earlier after its next placement (PGT = L x FTT at the first "
                            f"try): at {hi_label} {bg[hi_label]['replaced']:.0%} of the jobs were placed again, and their "
                            f"PGT is {again:.2f} of their FTT against {once:.2f} for the jobs placed once")))
    return claims


def recipe_for(w: int) -> Callable:
    def recipe(out: Path, quick: bool = False, log: Callable[[str], None] = print, workers: int | None = None,
               progress: Progress | None = None) -> list[Claim]:
        """Run the reproduction; write one CSV and one standalone HTML page per figure and claims.csv."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        size = QUICK if quick else FULL
        t0 = time.perf_counter()
        log(f"Mohamed thesis §5.1, workload W{w}: {len(CONFIGS)} configurations x {size['replications']} "
            f"replications ({'quick' if quick else 'full'})")
        res = measure(w / 100.0, size["replications"], log, progress or no_progress)
        # a level claim within a configuration's noise: measure it again, whichever side its mean is on
        refined = tuple(within_noise(w, res)) if size["refine"] > size["replications"] else ()
        if refined:
            log(f"  measured again with {size['refine']} replications (a level claim within their noise): "
                f"{', '.join(refined)}")
            res.update(measure(w / 100.0, size["refine"], log, progress or no_progress, labels=refined))
        for fig in _figures(w, res):
            _write_csv(fig, out / f"{fig['id']}.csv")
            _write_html(fig, out / f"{fig['id']}.html")
        claims = _claims(w, res, refined)
        if w == 30:  # thesis §5.1.7, Figure 5.8
            spread = measure_spread(size["replications"])
            rows = [(f"{c}x{sz}", label, k, Metric.from_values(k, [100.0 * float(np.mean(v))]
                                                                if (v := spread[label][f"{c}x{sz}"][k]) else []))
                    for label in spread for c, sz in SPREAD_SHAPES for k in ("job_spread", "coallocated")]
            fig = {"id": "w30-job-spread", "title": "Figure 5.8. Job spread and jobs using co-allocation (%), "
                   "2 or 4 components of 4..24, 2 GB files, 30%", "x": "job shape", "rows": rows}
            _write_csv(fig, out / "w30-job-spread.csv")
            _write_html(fig, out / "w30-job-spread.html")
            claims += _spread_claims(spread)
            # thesis §5.1.8, Figures 5.9 and 5.10: CF with replication, background load 50% and 60%
            bg = measure_background(size["replications"], log, progress or no_progress)
            for fig in _background_figures(res, bg):
                _write_csv(fig, out / f"{fig['id']}.csv")
                _write_html(fig, out / f"{fig['id']}.html")
            claims += _background_claims(res, bg)
        if w == 50:  # the placement queue of replication 0 over time
            with open(out / "w50-placement-queue.csv", "w", newline="") as f:
                wr = csv.writer(f)
                wr.writerow(["time", "series", "placement_queue"])
                for label in res:
                    for t, n in res[label]["queue"]:
                        wr.writerow([f"{t:g}", label, n])
            _write_queue_html(res, out / "w50-placement-queue.html")
        write_claims(claims, out / "claims.csv")
        log(f"done in {time.perf_counter() - t0:.1f} s -> {out}")
        return claims

    return recipe


__all__ = ["recipe_for", "measure", "measure_background", "scenario", "background_scenario", "CONFIGS",
           "HIGH_BACKGROUNDS", "BANDWIDTH", "FULL", "QUICK"]
