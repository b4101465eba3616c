"""A clone of the repository alone has everything its code, tests, examples and docs use.

The project's research folder (seeds, traces, conformance cases) lives beside the repository on
the developers' machines, not in a user's clone: nothing the repository ships may point into it.
What it needs from there is copied in, with its provenance (gridweb/demo/PROVENANCE.txt,
tests/data/conformance/PROVENANCE.txt).
"""
from __future__ import annotations

import re
import subprocess

from tests.conftest import CONFORMANCE, ROOT, TRACE_DIR

# a path into the folder beside the repository: up one level (or more) into shared/, the
# absolute /work one, or pathlib's parent joined with "shared"
OUTSIDE = re.compile(r"""(\.\./)+shared/|/work/shared|parents?(\[\d\])?\s*/\s*["']shared["']""")
TEXT = (".py", ".md", ".yaml", ".yml", ".json", ".toml", ".txt", ".cfg", ".ini", ".html", ".js", ".css", ".sh")


def tracked_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [name for name in listed.stdout.split("\0") if name]


def test_nothing_points_outside_the_repository():
    offenders = []
    for name in tracked_files():
        path = ROOT / name
        if not name.endswith(TEXT) and path.parent.name != ".ci" and name != "Makefile":
            continue
        if name == "tests/test_self_contained.py":  # (the patterns themselves)
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                offenders.append(f"{name}:{number}: {line.strip()[:120]}")
    assert not offenders, "files that point outside the repository:\n" + "\n".join(offenders)


def test_the_pattern_catches_the_ways_a_path_can_leave():
    up = "../"  # (written in two parts, so this file does not name the folder itself)
    for line in (f"path: {up}{up}shared/traces/DAS2.swf.gz", 'SHARED = ROOT.parent / "shared"',
                 "Path(__file__).parents[2] / 'shared'", "see /work/shared/seeds"):
        assert OUTSIDE.search(line), line
    assert not OUTSIDE.search("a shared, synchronised time axis")


def test_the_data_tests_read_is_in_the_repository_with_its_provenance():
    traces = sorted(p.name for p in TRACE_DIR.glob("*.swf.gz"))
    assert traces == ["DAS2-fs1-2003-1.swf.gz", "HPC2N-2002-2.2-cln.first3171.swf.gz", "LCG-2005-1.swf.gz",
                      "NASA-iPSC-1993-3.1-cln.swf.gz"]
    provenance = (TRACE_DIR / "PROVENANCE.txt").read_text()
    assert all(name in provenance for name in traces)
    assert len(list((CONFORMANCE / "pyss").iterdir())) == 148
    assert "pyss" in (CONFORMANCE / "PROVENANCE.txt").read_text()
    tracked = set(tracked_files())
    assert all(f"gridweb/demo/{name}" in tracked for name in traces)
    assert "tests/data/conformance/pyss/basic_input.0" in tracked
