"""The Lublin-Feitelson generator against the model's own analytic properties (simengine/lublin.py)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy.special import gammainc

from simengine.lublin import (
    BATCH,
    CAO_TABLE3,
    INTERACTIVE,
    JOB_TYPE_BATCH,
    JOB_TYPE_INTERACTIVE,
    TYPELESS,
    cao_cluster_workloads,
    cao_workload,
    combined_offered_load,
    daily_weights,
    lublin_feitelson,
    offered_load,
    params_for,
    workload_statistics,
)
from simengine.workload import JobTable

N = 20000


def rng(seed=1):
    return np.random.default_rng(np.random.SeedSequence(seed))


@pytest.fixture(scope="module")
def typeless():
    return lublin_feitelson(N, rng(5), job_types="typeless", integer_times=False)


@pytest.fixture(scope="module")
def both():
    return lublin_feitelson(N, rng(6))


def within(sample_mean, expected, se, k=4.0):
    assert abs(sample_mean - expected) <= k * se, f"{sample_mean} vs {expected} (+- {k} x {se})"


def test_table_shape_and_columns(both):
    assert len(both) == N
    assert both.job_id.tolist() == list(range(1, N + 1))
    assert np.all(np.diff(both.submit) >= 0)
    assert both.submit[0] > 0  # the first job arrives after one gap, as in lublin99.c
    assert np.array_equal(both.estimate, both.runtime)
    assert both.processors.min() >= 1 and both.processors.max() <= 128
    assert both.runtime.min() >= 1 and both.runtime.max() <= math.exp(12)
    # integer_times (default) floors as the reference prints whole seconds
    assert np.all(both.submit == np.floor(both.submit)) and np.all(both.runtime == np.floor(both.runtime))
    types = set(np.unique(both.extra["job_type"]).tolist())
    assert types == {JOB_TYPE_BATCH, JOB_TYPE_INTERACTIVE}


@pytest.mark.parametrize("code, params", [(JOB_TYPE_BATCH, BATCH), (JOB_TYPE_INTERACTIVE, INTERACTIVE)])
def test_serial_fraction_per_type(both, code, params):
    mine = both.take(both.extra["job_type"] == code)
    p = params.serial_prob
    within((mine.processors == 1).mean(), p, math.sqrt(p * (1 - p) / len(mine)))


def test_serial_fraction_typeless(typeless):
    p = TYPELESS.serial_prob  # 0.244
    within((typeless.processors == 1).mean(), p, math.sqrt(p * (1 - p) / N))


def _stage_cdf(x, p):
    """CDF of the two-stage uniform on log2 size."""
    a = np.clip((x - p.ulow) / (p.umed - p.ulow), 0, 1)
    b = np.clip((x - p.umed) / (p.uhi - p.umed), 0, 1)
    return p.uprob * a + (1 - p.uprob) * b


def test_power_of_two_fraction_among_parallel(typeless):
    p = TYPELESS
    # A parallel job is a power of two if it was rounded (pow2_prob of all jobs) or if
    # round(2**x) of an unrounded x happens to be 2**k: x in [log2(2**k - .5), log2(2**k + .5)).
    lucky = sum(_stage_cdf(math.log2(2**k + 0.5), p) - _stage_cdf(math.log2(2**k - 0.5), p) for k in range(1, 8))
    parallel = 1 - p.serial_prob
    expected = (p.pow2_prob + (parallel - p.pow2_prob) * lucky) / parallel
    par = typeless.processors[typeless.processors > 1]
    is_pow2 = (par & (par - 1)) == 0
    within(is_pow2.mean(), expected, math.sqrt(expected * (1 - expected) / len(par)))
    assert expected > 0.76  # the rounded share alone is 0.576 / 0.756


def test_mean_log2_size_is_the_two_stage_uniform_mean():
    # Without power-of-two rounding log2(size) = log2(round(2**x)); its mean, integrated
    # numerically over x, sits within 0.03 of the two-stage uniform mean (lublin99.c formula).
    p = replace(TYPELESS, pow2_prob=0.0)
    jobs = lublin_feitelson(N, rng(7), job_types="typeless", typeless=p)
    logs = np.log2(jobs.processors[jobs.processors > 1])
    grid = np.linspace(p.ulow, p.uhi, 200001)[:-1] + (p.uhi - p.ulow) / 400000
    dens = np.where(grid < p.umed, p.uprob / (p.umed - p.ulow), (1 - p.uprob) / (p.uhi - p.umed))
    sizes = np.floor(np.exp2(grid) + 0.5)
    # draws that round to 1 processor look serial; the sample leaves them out, so does this
    keep = sizes > 1
    expected = float(np.sum(np.log2(sizes[keep]) * dens[keep]) / np.sum(dens[keep]))
    assert abs(expected - p.mean_log2_parallel_size()) < 0.05
    within(logs.mean(), expected, logs.std() / math.sqrt(len(logs)))


def _truncated_exp_mean(a, b, limit):
    """E[exp X | X <= limit] for X ~ gamma(a, scale b), b < 1 (moment-generating function)."""
    return (1 - b) ** (-a) * gammainc(a, limit * (1 - b) / b) / gammainc(a, limit / b)


def _truncated_mean(a, b, limit):
    """E[X | X <= limit] for X ~ gamma(a, scale b)."""
    return a * b * gammainc(a + 1, limit / b) / gammainc(a, limit / b)


def test_runtime_of_serial_jobs_is_the_hyper_gamma(typeless):
    p, limit = TYPELESS, 12.0
    mix = p.pa * 1 + p.pb  # p of the hyper-gamma for size 1
    f1, f2 = gammainc(p.a1, limit / p.b1), gammainc(p.a2, limit / p.b2)
    w1 = mix * f1 / (mix * f1 + (1 - mix) * f2)  # redrawing above the limit reweights the branches
    serial = typeless.runtime[typeless.processors == 1]
    log_mean = w1 * _truncated_mean(p.a1, p.b1, limit) + (1 - w1) * _truncated_mean(p.a2, p.b2, limit)
    logs = np.log(serial)
    within(logs.mean(), log_mean, logs.std() / math.sqrt(len(logs)))
    mean = w1 * _truncated_exp_mean(p.a1, p.b1, limit) + (1 - w1) * _truncated_exp_mean(p.a2, p.b2, limit)
    within(serial.mean(), mean, serial.std() / math.sqrt(len(serial)))


def test_larger_jobs_run_longer(typeless):
    # pa < 0: p (the short gamma's weight) falls with size, so wide jobs run longer
    small = np.log(typeless.runtime[typeless.processors <= 2]).mean()
    wide = np.log(typeless.runtime[typeless.processors >= 32]).mean()
    assert wide > small + 0.5


def test_daily_cycle(typeless):
    w = daily_weights(TYPELESS)
    assert w.shape == (48,) and abs(w.mean() - 1) < 1e-12
    hours = ((typeless.submit % 86400) // 3600).astype(int)
    hist = np.bincount(hours, minlength=24) / len(hours)
    # arrivals fall in half-hour bucket b in proportion to its weight w_b
    expected = w.reshape(24, 2).sum(axis=1) / 48
    assert 9 <= int(np.argmax(hist)) <= 17  # the busiest hour is a working hour
    assert hist[9:18].sum() > 2 * hist[0:9].sum()  # 9:00-18:00 gets over twice the night's arrivals
    # total variation distance to the model's cycle: about 0.025 at 20,000 bursty arrivals
    # (0.009 at 400,000); the same cycle shifted by one hour is 0.07 away
    assert 0.5 * np.abs(hist - expected).sum() < 0.045


def test_start_hour_shifts_the_cycle():
    a = lublin_feitelson(N, rng(8), job_types="typeless", start_hour=12)
    hours = (((a.submit % 86400) // 3600).astype(int) + 12) % 24  # clock hour of each arrival
    hist = np.bincount(hours, minlength=24)
    assert 9 <= int(np.argmax(hist)) <= 17


def test_same_seed_same_table_and_prefix():
    a = lublin_feitelson(3000, rng(11))
    b = lublin_feitelson(3000, rng(11))
    c = lublin_feitelson(1000, rng(11))
    d = lublin_feitelson(3000, rng(12))
    for col in JobTable.COLUMNS:
        assert np.array_equal(getattr(a, col), getattr(b, col))
        assert np.array_equal(getattr(a, col)[:1000], getattr(c, col))  # a longer table extends a shorter
    assert np.array_equal(a.extra["job_type"], b.extra["job_type"])
    assert not np.array_equal(a.runtime, d.runtime)


def test_target_load_and_time_scale():
    jobs = lublin_feitelson(5000, rng(3), target_load=0.9, integer_times=False)
    assert offered_load(jobs.submit, jobs.processors, jobs.runtime, 128) == pytest.approx(0.9, rel=1e-9)
    base = lublin_feitelson(5000, rng(3), integer_times=False)
    half = lublin_feitelson(5000, rng(3), integer_times=False, time_scale=0.5)
    assert np.allclose(half.submit, base.submit * 0.5)
    with pytest.raises(ValueError, match="target_load or time_scale"):
        lublin_feitelson(10, rng(3), target_load=1.0, time_scale=0.5)


def test_other_machine_sizes():
    jobs = lublin_feitelson(5000, rng(4), processors=64, job_types="typeless")
    assert jobs.processors.max() <= 64 and (jobs.processors == 64).any()
    p = params_for(TYPELESS, 64)
    assert (p.uhi, p.umed, p.ulow) == (6.0, 3.5, 0.8)
    assert params_for(TYPELESS, 128) is TYPELESS


def test_bad_inputs():
    with pytest.raises(ValueError, match="job_types"):
        lublin_feitelson(10, rng(), job_types="mixed")
    with pytest.raises(ValueError, match="processors"):
        lublin_feitelson(10, rng(), processors=0)
    with pytest.raises(ValueError, match="start_hour"):
        lublin_feitelson(10, rng(), start_hour=24)
    with pytest.raises(ValueError, match="serial_prob"):
        replace(TYPELESS, serial_prob=1.5)
    with pytest.raises(ValueError, match="ulow <= umed <= uhi"):
        replace(TYPELESS, umed=8.0)
    assert len(lublin_feitelson(0, rng())) == 0


def test_workload_statistics_by_hand():
    # runtimes 100 (short), 599 (short), 600 (medium), 10799 (medium), 10800 (long)
    jobs = JobTable(job_id=[1, 2, 3, 4, 5], submit=[0, 10, 20, 30, 100],
                    runtime=[100, 599, 600, 10799, 10800], estimate=[100, 599, 600, 10799, 10800],
                    processors=[1, 3, 4, 2, 8], cluster=[0] * 5, stream=[0] * 5)
    s = workload_statistics(jobs, capacity=10)
    assert s["percent"] == {"short": 40.0, "medium": 40.0, "long": 20.0}
    assert s["mean_size"] == {"short": 2.0, "medium": 3.0, "long": 8.0}
    assert s["mean_runtime"] == {"short": 349.5, "medium": 5699.5, "long": 10800.0}
    work = 100 + 3 * 599 + 4 * 600 + 2 * 10799 + 8 * 10800
    assert s["offered_load"] == pytest.approx(work / (10 * 100))
    assert s["work_share"]["long"] == pytest.approx(8 * 10800 / work)


@pytest.mark.parametrize("seed", [71, 13, 3, 31])
def test_cao_table3_statistics(seed):
    # The typeless model reproduces Cao's class mix, sizes and runtimes (SCOJO-PECT's Java
    # generator had its own RNG, so only statistically): bounds from the seed-to-seed spread.
    s = workload_statistics(cao_workload(seed))
    cao = CAO_TABLE3[seed]
    for i, k in enumerate(("short", "medium", "long")):
        assert abs(s["percent"][k] - cao["percent"][i]) < 1.5
        assert abs(s["mean_size"][k] - cao["mean_size"][i]) < 1.5
        assert abs(s["mean_runtime"][k] / cao["mean_runtime"][i] - 1) < 0.05
    # Cao's offered load ~ 4 clusters' streams against one 128-processor cluster
    assert 0.6 < s["offered_load"] < 0.9
    assert abs(combined_offered_load(cao_cluster_workloads(seed)) - cao["offered_load"]) < 0.5


# ---- kind: lublin streams in scenarios ------------------------------------------------------

def lublin_scenario(**stream):
    return {
        "name": "lublin",
        "platform": {"clusters": [{"name": "c0", "processors": 128, "scheduler": {"name": "easy"}},
                                  {"name": "c1", "processors": 64, "scheduler": {"name": "fcfs"}}]},
        "workload": {"streams": [{"kind": "lublin", "name": "lf", "target": "c0", "count": 300,
                                  "job_types": "typeless", **stream}]},
        "run": {"seed": 7, "replications": 1},
    }


def test_scenario_with_a_lublin_stream_runs():
    import simengine
    from simengine.generate import generate_stream
    from simengine.scenario import load_scenario

    sc = load_scenario(lublin_scenario())
    a = simengine.run(sc)
    b = simengine.run(load_scenario(lublin_scenario()))
    assert len(a.jobs["job_id"]) == 300
    assert np.array_equal(a.jobs["start"], b.jobs["start"])  # same scenario + seed, same schedule
    assert np.all(a.jobs["processors"] <= 128)
    # the stream's jobs are the model's (typeless: about 24 % serial) on cluster c0
    st = sc.workload.streams[0]
    jobs = generate_stream(st, sc.platform, np.random.default_rng(1))
    assert len(jobs) == 300 and set(jobs.cluster.tolist()) == {0}
    assert 0.15 < (jobs.processors == 1).mean() < 0.35


def test_lublin_stream_target_load_and_horizon():
    from simengine.generate import generate_stream
    from simengine.scenario import load_scenario

    sc = load_scenario(lublin_scenario(target="grid", target_load=0.5, count=2000))
    st = sc.workload.streams[0]
    jobs = generate_stream(st, sc.platform, np.random.default_rng(2))
    assert set(jobs.cluster.tolist()) == {-1}
    # load against the grid's 192 processors x speed 1
    assert offered_load(jobs.submit, jobs.processors, jobs.runtime, 192) == pytest.approx(0.5, rel=1e-9)
    cut = generate_stream(st, sc.platform, np.random.default_rng(2), horizon=float(jobs.submit[999]))
    assert len(cut) == 999 and np.array_equal(cut.submit, jobs.submit[:999])
    # the model is drawn for the largest cluster (128 processors)
    assert jobs.processors.max() <= 128


def test_lublin_stream_bad_inputs():
    from simengine.errors import ScenarioError
    from simengine.scenario import load_scenario

    with pytest.raises(ScenarioError) as e:
        load_scenario(lublin_scenario(target="c1", processors=128))
    assert "workload.streams.0.processors" in str(e.value) and "larger than cluster 'c1'" in str(e.value)
    with pytest.raises(ScenarioError) as e:
        load_scenario(lublin_scenario(time_scale=0.5, target_load=0.7))
    assert "workload.streams.0.time_scale" in str(e.value)
    with pytest.raises(ScenarioError) as e:
        load_scenario(lublin_scenario(job_types="mixed"))
    assert "workload.streams.0.job_types" in str(e.value)
    with pytest.raises(ScenarioError) as e:
        load_scenario(lublin_scenario(count=None))
    assert "workload.streams.0.count" in str(e.value)
