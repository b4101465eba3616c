"""Render a benchmark run (benchmarks/results/latest.json) as the Markdown tables of docs/performance.md.

    .venv/bin/python benchmarks/report_md.py [results.json]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

DEFAULT = Path(__file__).resolve().parent / "results" / "latest.json"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render(data: dict) -> str:
    m = data["machine"]
    la = data["load_average"]
    out = [
        f"Run of {data['date']} ({data['mode']} mode, {data['seconds']:.0f} s), commit {m['git']}: "
        f"{m['cpu']}, {m['nproc']} cores, Python {m['python']}, "
        + ", ".join(f"{k} {v}" for k, v in m["versions"].items())
        + f". 1-minute load average {la['before'][0]:.2f} before and {la['after'][0]:.2f} after the run.",
        "",
        "| benchmark | GridWeb, best (median) | peer, best (median) | ratio | target | status |",
        "|---|---|---|---|---|---|",
    ]
    for r in data["rows"]:
        ratio = "—" if r["ratio"] is None else f"{r['ratio']:,.1f}×"
        target = r["target"].replace(">=", "≥")
        cells = (r["benchmark"], r["gridweb"], r["peer"], ratio, target, r["status"])
        out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    out += ["", "| cross-check | status | detail |", "|---|---|---|"]
    for c in data["checks"]:
        out.append(f"| {_cell(c['check'])} | {c['status']} | {_cell(c['detail'])} |")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else DEFAULT
    print(render(json.loads(path.read_text())), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
