"""``python -m simengine reproduce klein --quick``: tables, Gantt, claims (Klein & Pérez, MODELS.md §7)."""
from __future__ import annotations

import csv

import pytest

from simengine import reproductions
from simengine.cli import main
from simengine.gantt import SEGMENT_COLUMNS
from simengine.reproductions import klein


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("klein")
    claims = reproductions.get("klein")(out, quick=True, log=lambda _: None)
    return out, claims


def test_both_tables_have_their_data_and_a_standalone_page(quick):
    out, _ = quick
    t1 = list(csv.DictReader(open(out / "table1.csv")))
    t2 = list(csv.DictReader(open(out / "table2.csv")))
    assert len(t1) == 6 * 5  # 6 algorithms x (4 metrics + run time)
    assert len(t2) == 6 * 5
    assert {r["algorithm"] for r in t1} == {"CBF", "nos", "mic", "mic+c", "inf", "inf+c"}
    for name in ("table1", "table2", "gantt_test0"):
        html = (out / f"{name}.html").read_text()
        assert "<html" in html.lower() and "cdn.bokeh.org" not in html  # inline resources: works offline
    by = {(r["algorithm"], r["metric"]): r for r in t1 + t2}
    # by definition: CBF is its own reference, nos never stretches nor wastes
    assert by[("CBF", "Makespan")]["avg"] == "1" and by[("CBF", "Reservation")]["max"] == "1"
    assert by[("nos", "Waste")]["max"] == "0" and by[("nos", "Stretches")]["max"] == "0"
    # min <= avg <= max everywhere
    for r in t1 + t2:
        if r["min"]:
            assert float(r["min"]) <= float(r["avg"]) <= float(r["max"]), r
    assert by[("mic+c", "Waste")]["paper_avg"] == "ε"


def test_gantt_rows_follow_the_segment_format(quick):
    out, _ = quick
    rows = list(csv.DictReader(open(out / "gantt_test0.csv")))
    assert list(rows[0]) == ["algorithm", *SEGMENT_COLUMNS]
    assert {r["kind"] for r in rows if r["algorithm"] == "nos"} == {"run"}
    assert "stretched" in {r["kind"] for r in rows if r["algorithm"] == "inf"}
    for r in rows:
        assert 0 <= int(r["first_processor"]) and int(r["first_processor"]) + int(r["processors"]) <= klein.N_MAX
        assert float(r["t1"]) > float(r["t0"])


def test_claims_are_evaluated(quick):
    out, claims = quick
    assert len(claims) == len(list(csv.DictReader(open(out / "claims.csv"))))
    names = {"CBF", "nos", "mic", "mic+c", "inf", "inf+c"}
    averages = [c for c in claims if c.claim.split(" avg ")[0] in names]
    assert len(averages) == 6 * 9 - 6  # CBF's own ratios (and its zero stretches) are not claims
    assert all(c.claim.endswith("(quick: 100 tests, tolerance doubled)") for c in averages)
    # the first 100 tests of the same seed: every average within the doubled tolerance
    assert all(c.passed for c in claims), [c for c in claims if not c.passed]


def test_cli_runs_the_quick_reproduction(tmp_path, capsys):
    assert main(["reproduce", "klein", "--quick", "--out", str(tmp_path)]) == 0
    assert "mic+c avg Waste" in capsys.readouterr().out
    assert (tmp_path / "claims.csv").exists()
