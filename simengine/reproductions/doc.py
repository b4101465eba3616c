"""docs/reproductions.md's claims tables, generated from the full runs' ``claims.csv``.

    python -m simengine.reproductions.doc [--from DIR] [--check]

Each paper's table sits between ``<!-- claims: NAME -->`` and ``<!-- /claims -->`` in
docs/reproductions.md and is made from ``docs/reproductions/NAME-claims.csv``, the ``claims.csv``
of the last full ``python -m simengine reproduce NAME`` (kept in the repository as the evidence the
tables come from). ``--from DIR`` first copies ``DIR/NAME/claims.csv`` there (DIR as in
``reproduce NAME --out DIR/NAME``), for the names it holds, and beside each stores the claims of
a ``--quick`` run made now, by the same engine (``NAME-quick-claims.csv``): a test re-runs the quick
recipes and fails when they no longer give those, i.e. when the engine's results moved and the full
evidence is stale. ``--check`` changes nothing and exits 1 when a table is not what its file gives
(a test runs it: the tables are never edited by hand).
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

from simengine.reproductions import RECIPES, Claim, get, read_claims, summary, write_claims

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "reproductions.md"
EVIDENCE = ROOT / "docs" / "reproductions"
BLOCK = re.compile(r"(<!-- claims: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /claims -->)", re.S)


def evidence(name: str) -> Path:
    return EVIDENCE / f"{name}-claims.csv"


def quick_evidence(name: str) -> Path:
    """The claims of a quick run made with the full run's engine: what tells the evidence is current."""
    return EVIDENCE / f"{name}-quick-claims.csv"


def store_quick_claims(name: str) -> None:
    """Run recipe ``name`` quickly (into a scratch folder) and keep its claims as its quick evidence."""
    with tempfile.TemporaryDirectory() as scratch:
        write_claims(get(name)(Path(scratch), quick=True, log=lambda _: None), quick_evidence(name))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(name: str, claims: list[Claim]) -> str:
    """The markdown table of one paper's claims (verdict, then the marks), and its summary."""
    lines = [f"Generated from `{evidence(name).relative_to(ROOT)}` by `python -m simengine.reproductions.doc`.",
             "", "| claim | paper | GridWeb, full run | verdict |", "| --- | --- | --- | --- |"]
    for c in claims:
        verdict = c.verdict if c.passed else f"**{c.verdict}**"
        if c.marks:
            verdict += f" ({c.marks})"
        lines.append(f"| {_cell(c.claim)} | {_cell(c.paper)} | {_cell(c.measured)} | {_cell(verdict)} |")
    lines += ["", f"Summary: {summary(claims)}.", ""]
    return "\n".join(lines)


def regenerate(text: str) -> str:
    """``text`` with every claims block made again from its evidence file."""
    def block(m: re.Match) -> str:
        name = m.group("name")
        return m.group(1) + table(name, read_claims(evidence(name))) + m.group(4)
    return BLOCK.sub(block, text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--from", dest="source", help="the --out folders of full runs (DIR/NAME/claims.csv)")
    ap.add_argument("--check", action="store_true", help="exit 1 if a table is not what its claims.csv gives")
    args = ap.parse_args(argv)
    if args.source:
        found = {name: Path(args.source) / name / "claims.csv" for name in RECIPES}
        found = {name: path for name, path in found.items() if path.exists()}
        if not found:
            print(f"error: --from {args.source}: no NAME/claims.csv there for any of {', '.join(RECIPES)} "
                  "(give the folder holding the --out folders of `reproduce NAME --out DIR/NAME`)", file=sys.stderr)
            return 2
        EVIDENCE.mkdir(parents=True, exist_ok=True)
        for name, path in found.items():
            shutil.copyfile(path, evidence(name))
            store_quick_claims(name)
            print(f"{name}: {path} -> {evidence(name).relative_to(ROOT)}; "
                  f"quick claims -> {quick_evidence(name).relative_to(ROOT)}")
    text = DOC.read_text()
    new = regenerate(text)
    if args.check:
        if new != text:
            print("docs/reproductions.md: a claims table differs from its claims.csv "
                  "(python -m simengine.reproductions.doc makes it again)", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
