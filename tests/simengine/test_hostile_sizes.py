"""Scenario numbers a request can choose must not choose the work of validating it (issue 34, group 1).

A size distribution reaching 10^9 processors, a shape of 100,000 streams, a 10^400 integer: each is
refused naming the field, in well under a second and without memory proportional to the number
(the probe's uniform high 1e9 grew the web server to 21.5 GB: the mean of the rounded sizes was
summed over an array of ``high`` elements). The hostile cases run in a child process whose address
space is capped, so a relapse is a MemoryError there instead of an OOM-killed test run.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import simengine
from simengine.distributions import (
    RSD,
    BoundedPareto,
    Exponential,
    HyperExponential,
    LogNormal,
    Uniform,
    Weibull,
    parse_distribution,
    processor_count_mean,
)
from simengine.errors import ScenarioError
from simengine.limits import Limits

#: The child's address-space cap: the engine imported and warmed (numba, LLVM, scipy) reserves
#: about 430 MB of it (measured 2026-12-06); uniform high 1e8 alone used to need 1.8 GB.
ADDRESS_SPACE = 1536 * 1024 * 1024

HOSTILE_SIZES = {
    "uniform": {"kind": "uniform", "low": 1, "high": 1_000_000_000},
    "uniform-integer": {"kind": "uniform", "low": 1, "high": 1_000_000_000, "integer": True},
    "exponential": {"kind": "exponential", "mean": 1e9},
    "bounded_pareto": {"kind": "bounded_pareto", "alpha": 1.1, "low": 1, "high": 2e9},
    "rsd": {"kind": "rsd", "low": 1, "high": 1_000_000_000, "q": 0.9},
    "rsd-growing": {"kind": "rsd", "low": 1, "high": 1_000_000_000, "q": 1.5},
    "lognormal": {"kind": "lognormal", "mean": 1e9, "sigma": 3.0},
    "hyperexponential": {"kind": "hyperexponential", "p": [0.5, 0.5], "means": [1.0, 1e12]},
}


def synthetic(size: dict, **extra) -> dict:
    return {"kind": "synthetic", "name": "s", "target": "a", "arrival": {"target_load": 0.5}, "size": size,
            "runtime": {"kind": "exponential", "mean": 60}, **extra}


def scenario(size: dict, processors: int = 64, stream: dict | None = None, horizon: float | None = None) -> dict:
    return {"platform": {"clusters": [{"name": "a", "processors": processors},
                                      {"name": "b", "processors": processors}]},
            "workload": {"streams": [stream or synthetic(size)]},
            "run": {"stop": {"horizon": horizon} if horizon else {"completions": 1000}}}


def hostile_cases() -> dict[str, tuple[dict, str]]:
    """name -> (scenario, the field its error must name)."""
    cases = {f"size-{k}": (scenario(v), "workload.streams.0.size") for k, v in HOSTILE_SIZES.items()}
    for k in ("uniform", "bounded_pareto", "rsd"):
        coallocated = {"kind": "coallocated", "name": "c", "arrival": {"target_load": 0.5}, "size": HOSTILE_SIZES[k],
                       "runtime": {"kind": "exponential", "mean": 60}, "deadline": {"min": 0, "max": 10}}
        cases[f"coallocated-{k}"] = (scenario({}, stream=coallocated, horizon=1000), "workload.streams.0.size")
        # (components per job are not bounded by a cluster: only their mean must come quickly)
        cases[f"coallocated-components-{k}"] = (
            scenario({}, stream={**coallocated, "size": {"kind": "constant", "value": 2},
                                 "components": HOSTILE_SIZES[k]}, horizon=1000), None)
        koala = {"kind": "koala", "name": "k", "target": "grid", "arrival": {"target_load": 0.5},
                 "size": HOSTILE_SIZES[k], "runtime": {"kind": "exponential", "mean": 60}}
        cases[f"koala-{k}"] = (scenario({}, stream=koala, horizon=1000), "workload.streams.0.size")
    return cases


CHILD = textwrap.dedent("""
    import json, resource, sys, time
    import simengine
    from simengine.errors import ScenarioError
    cases, cap = json.loads(sys.stdin.read())
    simengine.load_scenario(cases["warm-up"][0])  # (numba, scipy and the registries load here)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    out = {}
    for name, (spec, field) in cases.items():
        t = time.perf_counter()
        try:
            simengine.load_scenario(spec)
            got = "valid"
        except ScenarioError as exc:
            got = {e.path: e.message for e in exc.errors}
        except BaseException as exc:  # MemoryError under the cap: the defect
            got = f"{type(exc).__name__}: {exc}"[:300]
        out[name] = {"seconds": time.perf_counter() - t, "got": got}
    print(json.dumps(out))
""")


def run_capped(cases: dict[str, tuple[dict, str]]) -> dict:
    warm = scenario({"kind": "uniform", "low": 1, "high": 8})
    payload = json.dumps([{"warm-up": (warm, ""), **cases}, ADDRESS_SPACE])
    done = subprocess.run([sys.executable, "-c", CHILD], input=payload, capture_output=True, text=True,
                          timeout=240, cwd=str(simengine.__path__[0] + "/.."))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_hostile_sizes_are_refused_by_field_fast_in_capped_memory():
    cases = hostile_cases()
    out = run_capped(cases)
    for name, (_, field) in cases.items():
        got = out[name]["got"]
        assert got == "valid" or isinstance(got, dict), (name, got)
        assert field is None or field in got, (name, got)
        assert out[name]["seconds"] < 1.0, (name, out[name])


def test_a_legal_size_on_a_huge_cluster_validates_fast_in_capped_memory():
    # The engine itself has no limits (a researcher's own machine): a cluster of 10^9 processors
    # and jobs up to all of them is a legal scenario, and its load is solved in closed form.
    cases = {f"legal-{k}": (scenario(v, processors=2_000_000_000), "")
             for k, v in HOSTILE_SIZES.items() if math.isfinite(parse_distribution(v).max_value())}
    out = run_capped(cases)
    for name in cases:
        assert out[name]["got"] == "valid", (name, out[name])
        assert out[name]["seconds"] < 1.0, (name, out[name])


# --- the closed forms agree with the summation they replace ------------------------------------------


def summed(dist, top: int) -> float:
    """E[max(1, ceil X)] summed the way processor_count_mean did for every size (the reference)."""
    s = dist.support()
    if s is not None:
        values, probs = s
        return float(np.dot(np.maximum(np.ceil(values), 1.0), probs))
    k = np.arange(1, top, dtype=np.float64)
    return float(1.0 + math.fsum(dist.sf(k)))


@pytest.mark.parametrize("dist", [
    Uniform(low=0.3, high=200_000.7),
    Uniform(low=70_000.5, high=300_000.0),
    Uniform(low=-5.0, high=150_000.0),
    Uniform(low=0, high=150_000, integer=True),
    Uniform(low=-3, high=100_000, integer=True),
    BoundedPareto(alpha=1.1, low=0.5, high=300_000.0),
    BoundedPareto(alpha=1.0, low=3.0, high=250_000.0),
    BoundedPareto(alpha=2.5, low=80_000.0, high=400_000.0),
    BoundedPareto(alpha=0.3, low=1.0, high=100_000.5),
    BoundedPareto(alpha=40.0, low=2.0, high=100_000.0),
    RSD(low=1, high=100_000, q=0.99999),
    RSD(low=1, high=100_000, q=0.9),
    RSD(low=3, high=90_000, q=1.0),
    RSD(low=5, high=80_000, q=1.0001),
    RSD(low=1, high=70_000, q=1.0 - 1e-12),
], ids=repr)
def test_the_closed_forms_agree_with_the_sum_over_every_size(dist):
    want = summed(dist, max(1, math.ceil(dist.max_value())))
    assert processor_count_mean(dist) == pytest.approx(want, rel=1e-11)


@pytest.mark.parametrize("dist", [Exponential(mean=3000.0), Exponential(mean=50_000.0), Exponential(mean=0.01),
                                  HyperExponential(p=[0.3, 0.7], means=[2.0, 40_000.0]),
                                  LogNormal(mean=20_000.0, sigma=0.8), LogNormal(mean=3.0, sigma=0.5),
                                  Weibull(scale=30_000.0, shape=0.7), Weibull(scale=3.0, shape=1.5),
                                  Weibull(scale=50_000.0, shape=2.0)], ids=repr)
def test_unbounded_sizes_have_their_mean_in_bounded_work(dist):
    k = np.arange(1, 1 << 24, dtype=np.float64)  # the tail past 2^24 is below 1e-12 of these
    want = 1.0 + math.fsum(dist.sf(k))
    t = time.perf_counter()
    got = processor_count_mean(dist)
    assert time.perf_counter() - t < 2.0  # (milliseconds; the old sum took minutes; the lognormal's first call imports scipy.special)
    assert got == pytest.approx(want, rel=1e-9)


def test_small_supports_keep_the_exact_sum():
    # the values every existing scenario's arrival rate was solved with are kept to the last bit
    for dist in (Uniform(low=0.2, high=7.3), BoundedPareto(alpha=1.1, low=0.5, high=40.0),
                 RSD(low=1, high=32, q=0.9), Uniform(low=2, high=5, integer=True)):
        k = np.arange(1, max(1, math.ceil(dist.max_value())), dtype=np.float64)
        s = dist.support()
        want = (float(np.dot(np.maximum(np.ceil(s[0]), 1.0), s[1])) if s is not None
                else float(1.0 + dist.sf(k).sum()))
        assert processor_count_mean(dist) == want


# --- numbers too large for any field -------------------------------------------------------------------


@pytest.mark.parametrize("path", [
    ("platform", "clusters", 0, "processors"), ("workload", "streams", 0, "count"), ("run", "replications"),
    ("workload", "streams", 0, "size", "high"), ("workload", "streams", 0, "arrival", "rate"),
    ("run", "stop", "horizon"), ("workload", "streams", 0, "priority"),
])
def test_a_10_to_the_400_integer_is_a_field_error(path):
    spec = scenario({"kind": "uniform", "low": 1, "high": 8})
    spec["run"] = {"stop": {"completions": 1000}, "replications": 1}
    node = spec
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = 10**400
    with pytest.raises(ScenarioError) as caught:
        simengine.load_scenario(spec)
    paths = {e.path: e.message for e in caught.value.errors}
    assert ".".join(map(str, path)) in paths, paths
    assert "too large" in paths[".".join(map(str, path))]


# --- the shape of a scenario ------------------------------------------------------------------------------


def test_the_shape_is_checked_before_the_schema_naming_the_list():
    from simengine.limits import shape_problems

    limits = Limits(streams=64, clusters=256, reservations=1000)
    spec = scenario({"kind": "uniform", "low": 1, "high": 8})
    spec["workload"]["streams"] = [synthetic({"kind": "constant", "value": 1}, name=f"s{i}") for i in range(65)]
    spec["platform"]["clusters"] = [{"name": f"c{i}", "processors": 4} for i in range(300)]
    spec["reservations"] = [{}] * 1001
    found = dict(shape_problems(spec, limits))
    assert set(found) == {"workload.streams", "platform.clusters", "reservations"}, found
    assert "65 streams; this server allows at most 64" in found["workload.streams"]
    assert shape_problems(scenario({"kind": "uniform", "low": 1, "high": 8}), limits) == []
    assert shape_problems("not a mapping", limits) == []  # (the schema says what is wrong with it)


def test_a_list_refused_for_its_length_is_not_walked_for_long_lists_inside_it():
    """20,000 streams took seconds to look through for long lists after their number was already
    refused: a refused list's items are not searched (another list still is)."""
    from simengine.limits import shape_problems

    limits = Limits(streams=64, list_items=10)
    spec = scenario({"kind": "uniform", "low": 1, "high": 8})
    spec["workload"]["streams"] = [synthetic({"kind": "empirical", "values": [1.0] * 11}, name=f"s{i}")
                                   for i in range(65)]
    spec["reservations"] = [{"name": f"r{i}"} for i in range(11)]
    found = dict(shape_problems(spec, limits))
    assert set(found) == {"workload.streams", "reservations"}, found
    spec["workload"]["streams"] = spec["workload"]["streams"][:2]  # within the limit: its lists are searched
    assert set(dict(shape_problems(spec, limits))) == {"workload.streams.0.size.values",
                                                       "workload.streams.1.size.values", "reservations"}


def test_many_unknown_targets_do_not_list_every_cluster_each_time():
    # 2,000 streams naming no cluster of 2,000: each error listed every name (quadratic in the body)
    spec = scenario({"kind": "uniform", "low": 1, "high": 8})
    spec["platform"]["clusters"] = [{"name": f"cluster-{i:05d}", "processors": 4} for i in range(2000)]
    spec["workload"]["streams"] = [{**synthetic({"kind": "constant", "value": 1}, name=f"s{i}"), "target": "x"}
                                   for i in range(2000)]
    with pytest.raises(ScenarioError) as caught:
        simengine.load_scenario(spec)
    messages = [e.message for e in caught.value.errors if e.path.endswith(".target")]
    assert len(messages) == 100  # (the first hundred problems, and how many more)
    assert caught.value.errors[-1].message == "and 1,900 more problems (the first 100 are listed)"
    assert max(len(m) for m in messages) < 1000, messages[0][:2000]
    assert "cluster-00000" in messages[0] and "1,991 more" in messages[0]


@pytest.mark.parametrize("dist", [RSD(low=1, high=200_000, q=0.99999), RSD(low=3, high=100_000, q=1.0),
                                  RSD(low=1, high=1_000_000_000, q=0.9), RSD(low=5, high=80_000, q=1.0001)], ids=repr)
def test_a_large_rsd_is_drawn_without_an_array_of_its_values(dist):
    t = time.perf_counter()
    x = dist.sample(np.random.default_rng(3), 400_000)
    assert time.perf_counter() - t < 2.0  # (tens of milliseconds; the old array of high values: minutes and gigabytes)
    assert x.min() >= dist.low and x.max() <= dist.high and np.all(x == np.round(x))
    se = x.std(ddof=1) / math.sqrt(len(x))
    assert abs(x.mean() - dist.mean()) < 5 * se + 1e-9
    if dist.q == 1.0:  # every value equally likely, but a power of two three times as likely
        powers = [2**i for i in range(20) if dist.low <= 2**i <= dist.high]
        n = dist.high - dist.low + 1
        expected = len(x) * 3 * len(powers) / (n + 2 * len(powers))
        assert abs(np.isin(x, powers).sum() - expected) < 5 * math.sqrt(expected)


@pytest.mark.parametrize("role, dist, processors", [
    ("runtime", {"kind": "bounded_pareto", "alpha": 5e-324, "low": 5e-324, "high": 1e-300}, 64),  # 1 - r^a == 0
    ("runtime", {"kind": "bounded_pareto", "alpha": 3, "low": 5e-324, "high": 1e-300}, 64),  # low^a underflows
    ("runtime", {"kind": "bounded_pareto", "alpha": 0.5, "high": 1e300, "mean": 1e-300}, 64),  # low solved
    ("size", {"kind": "bounded_pareto", "alpha": 1e-300, "low": 5e-324, "high": 1e6}, 2**62),
])
def test_parameters_at_the_ends_of_the_floats_are_an_answer_not_a_crash(role, dist, processors):
    # (ZeroDivisionError and OverflowError escaped the schema: a 500 from the API)
    spec = scenario({"kind": "constant", "value": 1}, processors=processors)
    spec["workload"]["streams"][0][role] = dist
    try:
        loaded = simengine.load_scenario(spec)
    except ScenarioError:
        return
    from simengine.limits import limit_problems

    assert isinstance(limit_problems(loaded, Limits(jobs=10**6, horizon=1e9)), list)


def test_a_hundred_thousand_unknown_keys_are_counted_not_listed():
    # (each unknown key was a message with a did-you-mean search: 10 s for the 100k-key body)
    spec = {f"k{i}": i for i in range(100_000)}
    t = time.perf_counter()
    with pytest.raises(ScenarioError) as caught:
        simengine.load_scenario(spec)
    assert time.perf_counter() - t < 2.0
    errors = caught.value.errors
    assert len(errors) == 101 and errors[0].path == "platform"
    assert errors[-1].message.startswith("and 99,9") and errors[-1].message.endswith("more problems (the first 100 are listed)")
