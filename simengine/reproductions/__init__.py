"""Reproductions of published experiments: ``python -m simengine reproduce NAME``.

A recipe is a function ``recipe(out: Path, quick: bool, log, progress=None) -> list[Claim]``
registered by name in :data:`RECIPES`. It runs the paper's experiments through the engine, writes
each figure's data (CSV) and a standalone Bokeh page (HTML) into ``out``, and returns
the paper's stated outcomes with the values measured and whether they hold. ``log`` gets its
lines of text; ``progress(done, total, stage)`` (a :data:`Progress`) is told how far the current
stage (e.g. "configurations") has come, for the web's progress bar.
"""
from __future__ import annotations

import csv
import math
import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from simengine.statistics import paired_difference

#: name -> module that defines ``recipe`` (imported on first use: bokeh is heavy)
RECIPES: dict[str, str] = {
    "zikos": "simengine.reproductions.zikos",
    "klein": "simengine.reproductions.klein",
    "ballier": "simengine.reproductions.ballier",
    "koala-w30": "simengine.reproductions.koala_w30",
    "koala-w50": "simengine.reproductions.koala_w50",
    "koala-unreliable": "simengine.reproductions.koala_unreliable",
    "cao": "simengine.reproductions.cao",
}


PASS, FAIL, NOT_REPRODUCIBLE = "PASS", "FAIL", "NOT REPRODUCIBLE"
#: a recipe's progress callback: (units done, units in the stage, the stage's name)
Progress = Callable[[int, int, str], None]


def no_progress(done: int, total: int, stage: str) -> None:
    """The progress callback of a recipe nobody watches."""


#: what a NOT REPRODUCIBLE row's reason must begin with: why the paper's outcome cannot be checked
NOT_REPRODUCIBLE_REASONS = ("paper-internal conflict", "unstated parameter", "not from the paper's equations")


@dataclass
class Claim:
    """One stated outcome of a paper beside what GridWeb measured.

    ``passed``: True (PASS), False (FAIL) or None (NOT REPRODUCIBLE: ``reason`` says why, starting
    with one of NOT_REPRODUCIBLE_REASONS, and with the values tried or the measurements that show
    it). A verdict is the outcome of its check, PASS or FAIL; NOT REPRODUCIBLE is a finding given
    as such (no measured outcome that could pass turns into it), and a FAIL may carry in ``reason``
    what an investigation of it found. The marks say how much a verdict rests on the project's own choices: ``fit`` -- a
    parameter behind it was chosen by fit to the paper; ``reading`` -- the threshold is the
    project's reading of the paper's words (e.g. "about the same" as "within 2 points");
    ``construction`` -- it holds by construction of a model decision (which one)."""

    claim: str
    paper: str
    measured: str
    passed: bool | None
    reason: str = ""
    fit: str = ""
    reading: str = ""
    construction: str = ""

    def __post_init__(self):
        if self.passed is None and not self.reason.startswith(NOT_REPRODUCIBLE_REASONS):
            raise ValueError(f"claim {self.claim!r}: NOT REPRODUCIBLE needs a reason beginning with one of "
                             f"{', '.join(NOT_REPRODUCIBLE_REASONS)}; got {self.reason!r}")

    @property
    def verdict(self) -> str:
        return NOT_REPRODUCIBLE if self.passed is None else PASS if self.passed else FAIL

    @property
    def marks(self) -> str:
        """The marks, as the tables print them."""
        return "; ".join(m for m in (self.reason,
                                     f"parameter chosen by fit: {self.fit}" if self.fit else "",
                                     f"threshold is our reading: {self.reading}" if self.reading else "",
                                     f"holds by construction: {self.construction}" if self.construction else "")
                         if m)


#: How a difference claim ("A is lower than B") is decided in every recipe, written before measuring
#: (docs/reproductions.md, "How a difference is decided"): when both arms share their seeds
#: (replication r of each drew the same random numbers), the 95% t interval of the paired
#: differences must exclude 0 on the claimed side; otherwise the arms' 95% intervals must not
#: overlap. A difference inside the noise is not shown: the claim fails (and is re-measured with
#: more replications where a recipe does so, whichever way its means lie).
DIFFERENCE_RULE = ("paired 95% interval of the differences excluding 0 (arms sharing seeds), else non-overlapping "
                   "95% intervals")


def shown_lower(a, b, paired: bool = True) -> bool:
    """Is ``a``'s mean shown to be lower than ``b``'s (two :class:`simengine.results.Metric` of the
    same metric) by :data:`DIFFERENCE_RULE`? ``paired``: replication r of both used the same seeds
    (an arm measured with more replications pairs on the ones both have: the same seeds)."""
    if paired:
        d = paired_difference(b.values, a.values)  # a - b, pair by pair
        if d is not None:
            return d["ci_high"] < 0
    return a.ci_high is not None and b.ci_low is not None and a.ci_high < b.ci_low


def difference_text(a, b, paired: bool = True, fmt: str = ".3f") -> str:
    """``a - b`` as :func:`shown_lower` judged it: the paired mean difference and its 95% interval, or
    both intervals side by side."""
    d = paired_difference(b.values, a.values) if paired else None
    if d is not None:
        return f"paired difference {d['mean']:+{fmt}} [{d['ci_low']:+{fmt}}, {d['ci_high']:+{fmt}}]"
    interval = lambda m: (f"[{m.ci_low:{fmt}}, {m.ci_high:{fmt}}]" if m.ci_low is not None  # noqa: E731
                          else f"{m.mean:{fmt}} (no interval)")
    return f"{interval(a)} against {interval(b)}"


COLUMNS = ("claim", "paper", "measured", "verdict", "reason", "fit", "reading", "construction")


def write_claims(claims: list[Claim], path: Path) -> None:
    """The claims as CSV (COLUMNS): every recipe's ``claims.csv``."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for c in claims:
            w.writerow([c.claim, c.paper, c.measured, c.verdict, c.reason, c.fit, c.reading, c.construction])


def read_claims(path: Path) -> list[Claim]:
    """A ``claims.csv`` back as claims (also those written before the verdict columns)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    passed = {PASS: True, FAIL: False, NOT_REPRODUCIBLE: None}
    return [Claim(r["claim"], r["paper"], r["measured"], passed[r["verdict"]],
                  *(r.get(k) or "" for k in COLUMNS[4:])) for r in rows]


def write_figure_csv(path: Path, labels: tuple[str, ...], points) -> None:
    """A figure's data (a recipe's ``FIGURE.csv``): per point its labels (``labels`` names their
    columns), then the metric's mean, its 95% interval cut to the metric's domain -- what the figure
    draws (simengine.statistics) --, the t interval's half-width and how many replications gave it.
    ``points``: (label values, Metric, scale), scale 100 for a metric shown as a percentage."""
    def number(v, scale: float, fmt: str) -> str:
        return "" if v is None or math.isnan(v) else format(v * scale, fmt)

    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([*labels, "mean", "ci95_low", "ci95_high", "ci95_half_width", "replications"])
        for values, m, scale in points:
            w.writerow([*values, number(m.mean, scale, ".6g"), number(m.ci_low, scale, ".6g"),
                        number(m.ci_high, scale, ".6g"), number(m.half_width, scale, ".4g"),
                        sum(1 for v in m.values if not math.isnan(v))])


def verdict_counts(claims: list[Claim]) -> dict[str, int]:
    """How many claims have each verdict (PASS, FAIL, NOT REPRODUCIBLE)."""
    return {v: sum(c.verdict == v for c in claims) for v in (PASS, FAIL, NOT_REPRODUCIBLE)}


def summary(claims: list[Claim]) -> str:
    """"n passed, n failed, n not reproducible (of N)", and how many carry a mark."""
    n = verdict_counts(claims)
    marked = {k: sum(bool(getattr(c, k)) for c in claims) for k in ("fit", "reading", "construction")}
    text = (f"{n[PASS]} passed, {n[FAIL]} failed, {n[NOT_REPRODUCIBLE]} not reproducible "
            f"(of {len(claims)} claims)")
    notes = [f"{marked['fit']} rest on a parameter chosen by fit" if marked["fit"] else "",
             f"{marked['reading']} on a threshold that is our reading" if marked["reading"] else "",
             f"{marked['construction']} hold by construction" if marked["construction"] else ""]
    notes = [x for x in notes if x]
    return text + (f"; {', '.join(notes)}" if notes else "")


def default_workers(quick: bool) -> int:
    """Worker processes of a recipe: one for ``--quick`` (tests run it), else up to two."""
    return 1 if quick else min(2, os.cpu_count() or 1)


def module(name: str):
    """The module of the recipe registered as ``name`` (its docstring says what it reproduces);
    ``KeyError`` lists the known ones."""
    if name not in RECIPES:
        raise KeyError(f"unknown reproduction {name!r}; known: {', '.join(sorted(RECIPES))}")
    return importlib.import_module(RECIPES[name])


def get(name: str) -> Callable:
    """The recipe function registered as ``name``; ``KeyError`` lists the known ones."""
    return module(name).recipe


def format_claims(claims: list[Claim]) -> str:
    """The claims as a fixed-width text table (marks under their row), then the summary."""
    rows = [("claim", "paper", "measured", "verdict")] + [(c.claim, c.paper, c.measured, c.verdict)
                                                           for c in claims]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(rows[0], widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    for c, r in zip(claims, rows[1:]):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
        if c.marks:
            lines.append(f"    ({c.marks})")
    lines.append("")
    lines.append(summary(claims))
    return "\n".join(lines)
