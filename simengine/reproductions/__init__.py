"""Reproductions of published experiments: ``python -m simengine reproduce NAME``.

A recipe is a function ``recipe(out: Path, quick: bool, log) -> list[Claim]`` registered
by name in :data:`RECIPES`. It runs the paper's experiments through the engine, writes
each figure's data (CSV) and a standalone Bokeh page (HTML) into ``out``, and returns
the paper's stated outcomes with the values measured and whether they hold.
"""
from __future__ import annotations

import csv
import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

#: name -> module that defines ``recipe`` (imported on first use: bokeh is heavy)
RECIPES: dict[str, str] = {
    "zikos": "simengine.reproductions.zikos",
    "klein": "simengine.reproductions.klein",
    "ballier": "simengine.reproductions.ballier",
    "koala-w30": "simengine.reproductions.koala_w30",
    "koala-w50": "simengine.reproductions.koala_w50",
    "cao": "simengine.reproductions.cao",
}


@dataclass
class Claim:
    """One stated outcome of a paper beside what GridWeb measured."""

    claim: str
    paper: str
    measured: str
    passed: bool

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "FAIL"


def write_claims(claims: list[Claim], path: Path) -> None:
    """The claims as CSV (claim, paper, measured, verdict): every recipe's ``claims.csv``."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["claim", "paper", "measured", "verdict"])
        for c in claims:
            w.writerow([c.claim, c.paper, c.measured, c.verdict])


def default_workers(quick: bool) -> int:
    """Worker processes of a recipe: one for ``--quick`` (tests run it), else up to two."""
    return 1 if quick else min(2, os.cpu_count() or 1)


def get(name: str) -> Callable:
    """The recipe function registered as ``name``; ``KeyError`` lists the known ones."""
    if name not in RECIPES:
        raise KeyError(f"unknown reproduction {name!r}; known: {', '.join(sorted(RECIPES))}")
    return importlib.import_module(RECIPES[name]).recipe


def format_claims(claims: list[Claim]) -> str:
    """The claims as a fixed-width text table."""
    rows = [("claim", "paper", "measured", "verdict")] + [(c.claim, c.paper, c.measured, c.verdict)
                                                           for c in claims]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
