"""``python -m simengine reproduce ballier --quick``: files, figures and the paper's claims."""
from __future__ import annotations

import csv
from collections import defaultdict

import pytest

from simengine import reproductions
from simengine.reproductions.ballier import QUICK, WAITS


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("ballier")
    claims = reproductions.get("ballier")(out, quick=True, log=lambda _: None)
    return out, claims


def rows(out, fig):
    return list(csv.DictReader(open(out / f"{fig}.csv")))


def test_every_figure_has_its_data_and_a_standalone_page(quick):
    out, _ = quick
    n_rates, n_lps = len(QUICK["rates"]), len(QUICK["lps"])
    expected = {
        "fig01": 5 * n_rates,                   # five metrics of pure RPP vs lambda_g
        "fig02": 3 * 2 * n_lps,                 # success, total load, wasted time x 2 global loads x L_p
        "fig03": 3 * 2 * n_lps,
        "fig04": 2 * 2 * len(WAITS) * n_rates,  # success, global load x LP/GP x Wait-X x lambda_g
        "fig05": 2 * 2 * len(QUICK["dmaxes"]),  # Wait-10/RPP x 2 global loads x D_max
        "fig06": 2 * 2 * len(QUICK["dmaxes"]),
        "fig07": 2 * len(QUICK["local_loads"]),
        "fig08": len(WAITS) * n_rates,
        "fig09": len(WAITS) * n_rates,
    }
    for fig, n in expected.items():
        r = rows(out, fig)
        assert len(r) == n, fig
        assert all(row["replications"] == str(QUICK["replications"]) for row in r)
        html = (out / f"{fig}.html").read_text()
        assert "<html" in html.lower() and "cdn.bokeh.org" not in html  # inline resources: works offline


def test_figures_obey_the_model(quick):
    out, _ = quick
    by = defaultdict(dict)
    for r in rows(out, "fig02"):
        by[(r["series"], r["metric"])][float(r["L_p"])] = float(r["mean"])
    for series in ("global load 20%", "global load 40%"):
        # L_p = 1: the first try is at D itself, so nothing is ever claimed ahead of time
        assert by[(series, "processor_wasted_time")][1.0] == 0.0
        assert by[(series, "processor_wasted_time")][0.1] > 0
    f1 = defaultdict(dict)
    for r in rows(out, "fig01"):
        f1[r["metric"]][r["lambda_g (jobs/s)"]] = float(r["mean"])
    for x, total in f1["total_load"].items():  # total = local + claimed-idle + global, each >= 0
        assert total >= f1["global_load"][x] + f1["processor_wasted_time"][x]
        assert 0 <= f1["global_success_rate"][x] <= 100


def test_claims_are_evaluated(quick):
    out, claims = quick
    assert len(claims) == len(rows(out, "claims"))
    assert all("[quick" in c.claim for c in claims)  # the quick run says what it is
    by_name = {c.claim.split(" [quick")[0]: c for c in claims}
    # robust even in short runs: the offered loads, and the orderings with large margins
    assert all(c.passed for name, c in by_name.items() if name.startswith("offered")), claims
    assert by_name["fig 2: success not higher with a lower L_p (local 30%, global 20%)"].passed
    assert by_name["conclusion: pure RPP wastes much more processor time than Wait-10"].passed
    assert by_name["fig 4 (GP): Wait-0/10/100 give about the same success rate"].passed
    # the LP sensitivity check (the earlier reading: M_p tries and a final attempt at D) is reported, and says
    # it is not the default model
    assert any(name.startswith("fig 4 (LP), sensitivity, the earlier LP reading, NOT MODELS.md's model")
               for name in by_name)


def test_fig4_points_unresolved_either_way_are_measured_again():
    from simengine.reproductions.ballier import WAITS, Config, fig4_to_refine
    from simengine.results import Metric

    size = {"rates": (0.001, 0.002), "refine": 50}

    def res_with(values_by_rate):
        res = {}
        for p in ("LP", "GP"):
            for r, by_wait in values_by_rate.items():
                for w in WAITS:
                    res[Config(0.3, "rate", r, wait_x=w, priority=p)] = {
                        "global_success_rate": Metric.from_values("global_success_rate", by_wait[w])}
        return res

    # replication r of every Wait-X used the same seeds: the comparisons are paired (DIFFERENCE_RULE)
    near = {0.0: [0.98, 0.97, 0.99], 10.0: [0.98, 0.97, 0.99], 100.0: [0.98, 0.97, 0.99],
            1000.0: [0.985, 0.96, 0.98], None: [0.985, 0.96, 0.98]}    # in order, differences -0.005..+0.01
    apart = {0.0: [0.98, 0.98, 0.98], 10.0: [0.98, 0.98, 0.98], 100.0: [0.98, 0.98, 0.98],
             1000.0: [0.90, 0.90, 0.90], None: [0.90, 0.90, 0.90]}        # resolved already
    reversed_ = {**near, 1000.0: [0.99, 0.965, 1.0]}                       # Wait-1000 above, not resolved
    # a difference the same in every pair is resolved even where the intervals overlap: not refined
    shifted = {**near, 1000.0: [0.975, 0.965, 0.985], None: [0.975, 0.965, 0.985]}
    assert fig4_to_refine(res_with({0.001: shifted, 0.002: apart}), size) == []
    got = fig4_to_refine(res_with({0.001: near, 0.002: apart}), size)
    assert sorted({(c.priority, c.global_value) for c in got}) == [("GP", 0.001), ("LP", 0.001)]
    assert len(got) == 2 * len(WAITS)
    # out of the paper's order but unresolved: measured again too (the rule is symmetric)
    assert len(fig4_to_refine(res_with({0.001: reversed_, 0.002: apart}), size)) == 2 * len(WAITS)
    assert fig4_to_refine(res_with({0.001: near, 0.002: apart}), {**size, "refine": 0}) == []
