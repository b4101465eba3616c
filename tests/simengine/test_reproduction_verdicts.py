"""Verdicts of the reproductions' claims (simengine.reproductions): PASS, FAIL and NOT REPRODUCIBLE
with its reason, the marks that say how much a verdict rests on the project's choices, the
per-paper summary, claims.csv both ways, and Ballier's symmetric re-measurement rule."""
from __future__ import annotations

import pytest

from simengine.reproductions import (FAIL, NOT_REPRODUCIBLE, PASS, Claim, format_claims, read_claims, summary,
                                     write_claims)
from simengine.reproductions.ballier import WAITS, Config, fig4_to_refine
from simengine.results import Metric


def test_pass_and_fail():
    assert Claim("c", "p", "m", True).verdict == PASS
    assert Claim("c", "p", "m", False).verdict == FAIL


@pytest.mark.parametrize("reason", [
    "paper-internal conflict: Figure 3's dip contradicts Figure 7",
    "unstated parameter: the bandwidths; tried 50, 100 and 150 MB/s",
    "not from the paper's equations: the RR stays flat; no cause found",
])
def test_not_reproducible_carries_its_reason(reason):
    claim = Claim("c", "p", "m", None, reason=reason)
    assert claim.verdict == NOT_REPRODUCIBLE and claim.marks.startswith(reason)


def test_not_reproducible_without_a_reason_of_a_known_kind_is_refused():
    with pytest.raises(ValueError, match="NOT REPRODUCIBLE needs a reason"):
        Claim("c", "p", "m", None)
    with pytest.raises(ValueError, match="NOT REPRODUCIBLE needs a reason"):
        Claim("c", "p", "m", None, reason="it did not work")


def test_marks_are_shown_under_the_row_and_counted_in_the_summary():
    claims = [Claim("about the same", "within 2 points", "1.5", True, reading="'about the same' as within 2 points"),
              Claim("20 % cut", "15-25", "26.5", False, fit="the propagation rules"),
              Claim("flat", "falls", "flat", None, reason="not from the paper's equations: no cause found"),
              Claim("fig 7", "within 5 points", "0.1", True, construction="MODELS.md's GP")]
    text = format_claims(claims)
    assert "(threshold is our reading: 'about the same' as within 2 points)" in text
    assert "(parameter chosen by fit: the propagation rules)" in text
    assert "(holds by construction: MODELS.md's GP)" in text
    assert summary(claims) == ("2 passed, 1 failed, 1 not reproducible (of 4 claims); 1 rest on a parameter "
                               "chosen by fit, 1 on a threshold that is our reading, 1 hold by construction")
    assert text.endswith(summary(claims))


def test_claims_csv_round_trips_every_verdict_and_mark(tmp_path):
    claims = [Claim("a", "p", "m", True, reading="r"), Claim("b", "p", "m", False, fit="f"),
              Claim("c", "p", "m", None, reason="paper-internal conflict: x", construction="k")]
    write_claims(claims, tmp_path / "claims.csv")
    assert read_claims(tmp_path / "claims.csv") == claims
    (tmp_path / "old.csv").write_text("claim,paper,measured,verdict\nx,y,z,FAIL\n")  # before the marks
    assert read_claims(tmp_path / "old.csv") == [Claim("x", "y", "z", False)]


# ---- Ballier: every figure-4 rate whose CIs overlap is re-measured, whichever order its means are in

def metric(mean: float, half: float) -> Metric:
    return Metric("global_success_rate", mean, mean - half, mean + half, [mean])


def fig4_results(trio: float, others: float, half: float) -> dict:
    """Every figure-4 configuration at one rate: Wait-0/10/100 at ``trio``, Wait-1000/inf at ``others``."""
    return {Config(0.3, "rate", 0.001, wait_x=w, priority=p): {"global_success_rate": metric(
        trio if w in (0.0, 10.0, 100.0) else others, half)} for p in ("LP", "GP") for w in WAITS}


@pytest.mark.parametrize("trio,others,half,refined", [
    (0.90, 0.89, 0.02, True),   # the paper's order, CIs overlap: re-measured
    (0.89, 0.90, 0.02, True),   # the other order, CIs overlap: re-measured too (the rule is symmetric)
    (0.95, 0.85, 0.02, False),  # the paper's order, resolved: nothing to re-measure
    (0.85, 0.95, 0.02, False),  # the other order, resolved: a clear FAIL, nothing to re-measure
])
def test_the_re_measurement_rule_is_symmetric(trio, others, half, refined):
    size = {"rates": (0.001,), "refine": 50}
    got = fig4_to_refine(fig4_results(trio, others, half), size)
    assert (len(got) == 2 * len(WAITS)) if refined else got == []


def test_the_claims_tables_of_the_docs_are_their_claims_csv():
    """docs/reproductions.md's claims tables are generated from the full runs' claims.csv kept in
    docs/reproductions/ (python -m simengine.reproductions.doc): no table is edited by hand, and
    every recipe has its evidence file and its table."""
    from simengine.reproductions import RECIPES, read_claims
    from simengine.reproductions import doc

    assert doc.main(["--check"]) == 0
    text = doc.DOC.read_text()
    for name in RECIPES:
        claims = read_claims(doc.evidence(name))
        assert claims and f"<!-- claims: {name} -->" in text
        assert doc.table(name, claims) in text
    # the check notices a hand edit
    edited = text.replace("| PASS", "| FAIL", 1)
    assert doc.regenerate(edited) != edited


def test_the_docs_generator_refuses_a_folder_without_claims(tmp_path, capsys):
    from simengine.reproductions import doc

    before = doc.DOC.read_text()
    assert doc.main(["--from", str(tmp_path)]) == 2
    assert "no NAME/claims.csv there" in capsys.readouterr().err
    assert doc.DOC.read_text() == before  # nothing written


# ---- a verdict is its check's outcome (issue 36) ---------------------------------------------------


def verdict_branches(source: str) -> list[int]:
    """The lines of ``Claim(...)`` calls whose verdict can come out None (NOT REPRODUCIBLE): a None
    given as the verdict, or an ``x if check else None`` choosing it."""
    import ast

    def may_be_none(node) -> bool:
        if isinstance(node, ast.Constant):
            return node.value is None
        if isinstance(node, ast.IfExp):
            return may_be_none(node.body) or may_be_none(node.orelse)
        return False

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "Claim":
            verdict = node.args[3] if len(node.args) > 3 else next(
                (k.value for k in node.keywords if k.arg == "passed"), None)
            if verdict is not None and may_be_none(verdict):
                found.append(node.lineno)
    return found


def test_no_recipe_turns_a_failed_check_into_not_reproducible():
    """Every recipe's verdicts can be PASS or FAIL and nothing else: seven rows used to say
    ``True if dip else None``, so a failed check read NOT REPRODUCIBLE."""
    from pathlib import Path

    import simengine.reproductions as reproductions

    recipes = sorted(Path(reproductions.__file__).parent.glob("*.py"))
    assert len(recipes) >= 6
    assert {path.name: verdict_branches(path.read_text()) for path in recipes} == {path.name: [] for path in recipes}


def test_the_verdict_check_finds_a_branch_to_not_reproducible():
    assert verdict_branches('c = Claim("a", "b", "m", True if dip else None, reason="x")\n') == [1]
    assert verdict_branches('c = Claim("a", "b", "m", passed=None, reason="x")\n') == [1]
    assert verdict_branches('c = Claim("a", "b", "m", dip, reason="" if dip else "found")\n') == []


def test_a_failed_check_carries_what_its_investigation_found():
    claim = Claim("dip", "best below 1", "flat", False, reason="investigated: no dip under our GP reading")
    assert claim.verdict == FAIL and claim.marks == "investigated: no dip under our GP reading"


def test_a_difference_is_shown_by_the_paired_interval_when_the_arms_share_seeds():
    from simengine.reproductions import difference_text, shown_lower

    # each replication's workload moves both arms: the intervals overlap, the pairs all say a < b
    a = Metric.from_values("mean_response", [1.0, 2.0, 3.0, 4.0])
    b = Metric.from_values("mean_response", [1.1, 2.1, 3.2, 4.1])
    assert a.ci_high > b.ci_low
    assert shown_lower(a, b) and not shown_lower(b, a)
    assert "paired difference -0.125" in difference_text(a, b)
    # not paired (the seeds differ): only non-overlapping intervals show it
    assert not shown_lower(a, b, paired=False)
    far = Metric.from_values("mean_response", [9.0, 9.5, 10.0, 10.5])
    assert shown_lower(a, far, paired=False) and "against" in difference_text(a, far, paired=False)
    # differences either side of 0: not shown either way, whatever order the means are in
    c = Metric.from_values("mean_response", [1.2, 1.9, 3.3, 3.8])
    assert not shown_lower(a, c) and not shown_lower(c, a)


def test_a_spread_within_the_noise_of_about_the_same_is_measured_again_either_way():
    """Figure 4's 'about the same' (within 2 points): a rate whose spread's paired interval holds
    2 points is re-measured whether its spread is 1.9 or 2.1 points; a clear one is not."""
    size = {"rates": (0.001,), "refine": 50}

    def res_with(trio_low, trio_high):
        by_wait = {0.0: trio_low, 10.0: trio_low, 100.0: trio_high,
                   1000.0: [0.5, 0.5, 0.5], None: [0.5, 0.5, 0.5]}  # far below: 'beat' is decided
        return {Config(0.3, "rate", r, wait_x=w, priority=p): {
                    "global_success_rate": Metric.from_values("global_success_rate", by_wait[w])}
                for p in ("LP", "GP") for r in size["rates"] for w in WAITS}

    low = [0.90, 0.91, 0.92]
    assert len(fig4_to_refine(res_with(low, [0.915, 0.935, 0.94]), size)) == 2 * len(WAITS)  # 1.9 points, noisy
    assert len(fig4_to_refine(res_with(low, [0.925, 0.925, 0.958]), size)) == 2 * len(WAITS)  # 2.1 points, noisy
    assert fig4_to_refine(res_with(low, [0.921, 0.931, 0.941]), size) == []  # 2.1 points in every pair
    assert fig4_to_refine(res_with(low, [0.90, 0.91, 0.92]), size) == []     # the same: 0 in every pair
