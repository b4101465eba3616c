import math

import numpy as np
import pytest
from pydantic import ValidationError

from simengine.distributions import (
    RSD,
    BoundedPareto,
    Choice,
    Constant,
    Empirical,
    Exponential,
    HyperExponential,
    LogNormal,
    Uniform,
    bounded_pareto_mean,
    parse_distribution,
    processor_count_max,
    processor_count_mean,
    processor_counts,
)

ALL = {
    "exponential": {"kind": "exponential", "mean": 3.0},
    "uniform": {"kind": "uniform", "low": 2.0, "high": 5.0},
    "uniform-int": {"kind": "uniform", "low": 1, "high": 6, "integer": True},
    "constant": {"kind": "constant", "value": 7.5},
    "choice": {"kind": "choice", "values": [1, 2, 4, 8], "weights": [4, 3, 2, 1]},
    "empirical": {"kind": "empirical", "values": [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]},
    "hyperexponential": {"kind": "hyperexponential", "p": [0.9, 0.1], "means": [1.0, 20.0]},
    "bounded_pareto": {"kind": "bounded_pareto", "alpha": 1.5, "low": 0.5, "high": 100.0},
    "bounded_pareto-mean": {"kind": "bounded_pareto", "alpha": 1.25, "high": 100.0, "mean": 1.0},
    "bounded_pareto-alpha1": {"kind": "bounded_pareto", "alpha": 1.0, "low": 1.0, "high": 50.0},
    "rsd": {"kind": "rsd", "low": 1, "high": 32, "q": 0.9},
    "lognormal": {"kind": "lognormal", "mean": 10.0, "sigma": 0.8},
    "weibull": {"kind": "weibull", "scale": 10.0, "shape": 0.7},
    "weibull-increasing": {"kind": "weibull", "scale": 4.0, "shape": 2.5},
}


@pytest.mark.parametrize("name", sorted(ALL))
def test_sample_mean_matches_analytic_mean(name):
    d = parse_distribution(ALL[name])
    x = d.sample(np.random.default_rng(12345), 400_000)
    assert x.shape == (400_000,) and x.dtype == np.float64
    se = x.std(ddof=1) / math.sqrt(len(x))
    assert abs(x.mean() - d.mean()) <= 5 * se + 1e-12, (x.mean(), d.mean(), se)
    assert x.min() >= d.min_value() and x.max() <= d.max_value()


@pytest.mark.parametrize("name", sorted(ALL))
def test_same_seed_same_draws_and_empty_sample(name):
    d = parse_distribution(ALL[name])
    a = d.sample(np.random.default_rng(7), 1000)
    b = d.sample(np.random.default_rng(7), 1000)
    assert np.array_equal(a, b)
    assert d.sample(np.random.default_rng(7), 0).shape == (0,)
    assert parse_distribution(d.model_dump()) == d  # dump -> parse round trip


def test_analytic_means_and_bounds():
    assert Exponential(mean=4).mean() == 4 and Exponential(mean=4).max_value() == math.inf
    assert Uniform(low=1, high=6, integer=True).mean() == 3.5
    assert Choice(values=[1, 2, 4, 8], weights=[4, 3, 2, 1]).mean() == pytest.approx(2.6)
    assert Choice(values=[1, 2, 100], weights=[1, 1, 0]).max_value() == 2
    assert HyperExponential(p=[0.25, 0.75], means=[4, 8]).mean() == pytest.approx(7.0)
    assert Empirical(values=[1, 2, 6]).mean() == 3
    assert Constant(value=2).sample(np.random.default_rng(0), 3).tolist() == [2, 2, 2]
    assert LogNormal(mean=10, sigma=0.8).mu == pytest.approx(math.log(10) - 0.32)


def test_uniform_integer_is_inclusive_at_both_ends():
    x = Uniform(low=3, high=5, integer=True).sample(np.random.default_rng(1), 10_000)
    assert set(np.unique(x)) == {3.0, 4.0, 5.0}


@pytest.mark.parametrize("alpha, expected", [(1.25, 0.258), (1.5, 0.354), (1.75, 0.436), (2.0, 0.502)])
def test_bounded_pareto_solves_zikos_lower_bounds(alpha, expected):
    d = BoundedPareto(alpha=alpha, high=100, mean=1)
    # Zikos & Karatza print L to 3 decimals (0.5025 appears as 0.502): agree within 0.001.
    assert abs(d.low - expected) < 1e-3
    assert d.mean() == pytest.approx(1.0, rel=1e-9)


def test_bounded_pareto_alpha_two_is_exact():
    # alpha = 2: mean = 2 L H / (H + L) = 1  =>  L = H / (2H - 1) = 100/199
    assert BoundedPareto(alpha=2, high=100, mean=1).low == pytest.approx(100 / 199, rel=1e-10)
    assert bounded_pareto_mean(2, 100 / 199, 100) == pytest.approx(1.0, rel=1e-12)


def test_bounded_pareto_round_trips_with_solved_low():
    d = BoundedPareto(alpha=1.5, high=100, mean=1)
    again = parse_distribution(d.model_dump())
    assert again.low == d.low
    with pytest.raises(ValidationError, match="low and mean disagree"):
        BoundedPareto(alpha=1.5, high=100, mean=1, low=0.2)


def test_bounded_pareto_inverse_cdf_and_sf():
    d = BoundedPareto(alpha=1.5, low=0.354, high=100)
    x = d.sample(np.random.default_rng(3), 200_000)
    for t in (0.5, 1.0, 5.0, 50.0):
        se = math.sqrt(d.sf(t) * (1 - d.sf(t)) / len(x))
        assert abs((x > t).mean() - d.sf(t)) < 5 * se + 1e-9


@pytest.mark.parametrize(
    "data, message",
    [
        ({"kind": "bounded_pareto", "alpha": 1.5, "low": 5, "high": 2}, "high must be greater than low"),
        ({"kind": "bounded_pareto", "alpha": 1.5, "high": 100}, "give low, or mean"),
        ({"kind": "bounded_pareto", "alpha": 1.5, "high": 10, "mean": 20}, "mean must be less than high"),
        ({"kind": "bounded_pareto", "alpha": 0, "low": 1, "high": 2}, "greater than 0"),
        ({"kind": "uniform", "low": 3, "high": 1}, "high must be greater than low"),
        ({"kind": "uniform", "low": 1.5, "high": 4, "integer": True}, "low must be a whole number"),
        ({"kind": "exponential", "mean": 0}, "greater than 0"),
        ({"kind": "exponential", "mean": 1, "rate": 2}, "Extra inputs are not permitted"),
        ({"kind": "choice", "values": [1, 2], "weights": [1]}, "one entry per value"),
        ({"kind": "choice", "values": [1, 2], "weights": [1, -1]}, "must not be negative"),
        ({"kind": "choice", "values": [1, 2], "weights": [0, 0]}, "must not all be zero"),
        ({"kind": "choice", "values": []}, "at least 1 item"),
        ({"kind": "hyperexponential", "p": [0.5, 0.4], "means": [1, 2]}, "p must sum to 1"),
        ({"kind": "hyperexponential", "p": [1.0], "means": [1, 2]}, "same length"),
        ({"kind": "rsd", "low": 8, "high": 4, "q": 0.9}, "high must be at least low"),
        ({"kind": "rsd", "low": 0, "high": 4, "q": 0.9}, "greater than or equal to 1"),
        ({"kind": "lognormal", "mean": 1, "sigma": -1}, "greater than 0"),
        ({"kind": "gamma", "shape": 2}, "does not match any of the expected tags"),
    ],
)
def test_bad_parameters_raise_clear_errors(data, message):
    with pytest.raises(ValidationError, match=message):
        parse_distribution(data)


def test_rsd_means_analytic_and_sampled():
    for low, expected in ((1, 6.95), (4, 10.44)):
        d = RSD(low=low, high=32, q=0.9)
        assert round(d.mean(), 2) == expected
        x = d.sample(np.random.default_rng(2024 + low), 1_000_000)
        se = x.std(ddof=1) / math.sqrt(len(x))
        assert abs(x.mean() - d.mean()) < 4 * se
        assert x.min() >= low and x.max() <= 32 and np.all(x == np.round(x))


def test_rsd_triples_powers_of_two():
    values, probs = RSD(low=1, high=8, q=0.5).support()
    p = dict(zip(values.tolist(), probs.tolist()))
    assert p[4] / p[3] == pytest.approx(3 * 0.5)  # q^4 * 3 / q^3
    assert p[3] / p[2] == pytest.approx(0.5 / 3)
    assert p[1] / p[2] == pytest.approx(1 / 0.5)  # 1 = 2^0 and 2 both tripled
    assert sum(p.values()) == pytest.approx(1.0)


def test_empirical_accepts_a_trace_column():
    column = np.array([[4.0, 8.0], [16.0, 4.0]])
    d = parse_distribution({"kind": "empirical", "values": column})
    assert d.values == [4.0, 8.0, 16.0, 4.0]
    assert set(np.unique(d.sample(np.random.default_rng(0), 1000))) == {4.0, 8.0, 16.0}


def test_integer_valued():
    assert RSD(low=1, high=4, q=0.9).integer_valued()
    assert Uniform(low=1, high=4, integer=True).integer_valued()
    assert Choice(values=[1, 2]).integer_valued()
    assert not Choice(values=[1, 2.5]).integer_valued()
    assert not Exponential(mean=1).integer_valued()


@pytest.mark.parametrize(
    "data",
    [
        {"kind": "uniform", "low": 0.2, "high": 7.3},
        {"kind": "bounded_pareto", "alpha": 1.1, "low": 0.5, "high": 40},
        {"kind": "exponential", "mean": 2.5},
        {"kind": "choice", "values": [0.5, 2.2, 3.0]},
        {"kind": "rsd", "low": 1, "high": 16, "q": 0.8},
    ],
)
def test_processor_count_mean_matches_rounded_draws(data):
    d = parse_distribution(data)
    counts = processor_counts(d.sample(np.random.default_rng(99), 400_000))
    assert counts.dtype == np.int64 and counts.min() >= 1
    se = counts.std(ddof=1) / math.sqrt(len(counts))
    assert abs(counts.mean() - processor_count_mean(d)) < 5 * se
    assert counts.max() <= processor_count_max(d)


def test_processor_count_max():
    assert processor_count_max(Uniform(low=0.1, high=7.2)) == 8
    assert processor_count_max(Constant(value=0.3)) == 1
    assert processor_count_max(Exponential(mean=1)) == math.inf
