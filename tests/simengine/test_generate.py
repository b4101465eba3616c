import numpy as np
import pytest

from simengine.generate import generate_stream
from simengine.scenario import load_scenario


def scenario(stream_overrides: dict | None = None, target: str = "b"):
    stream = {
        "kind": "synthetic",
        "name": "s",
        "target": target,
        "arrival": {"target_load": 0.7},
        "size": {"kind": "rsd", "low": 1, "high": 32, "q": 0.9},
        "runtime": {"kind": "exponential", "mean": 100},
    }
    stream.update(stream_overrides or {})
    s = load_scenario(
        {
            "platform": {"clusters": [{"name": "a", "processors": 32}, {"name": "b", "processors": 64}]},
            "workload": {"streams": [stream]},
            "run": {"stop": {"horizon": 1e6}},
        }
    )
    return s.workload.streams[0], s.platform


def test_n_jobs_columns_and_types():
    st, plat = scenario()
    jobs = generate_stream(st, plat, np.random.default_rng(1), n=5000, stream_index=3)
    assert len(jobs) == 5000
    assert jobs.job_id.tolist() == list(range(1, 5001))
    assert np.all(np.diff(jobs.submit) >= 0) and jobs.submit[0] > 0
    assert jobs.processors.dtype == np.int64 and jobs.processors.min() >= 1 and jobs.processors.max() <= 32
    assert np.all(jobs.cluster == 1) and jobs.cluster.dtype == np.int32
    assert np.all(jobs.stream == 3)
    assert np.array_equal(jobs.estimate, jobs.runtime)


def test_grid_target_leaves_cluster_unset():
    st, plat = scenario(target="grid")
    assert np.all(generate_stream(st, plat, np.random.default_rng(1), n=100).cluster == -1)


def test_same_rng_state_same_jobs():
    st, plat = scenario()
    a = generate_stream(st, plat, np.random.default_rng(42), n=2000)
    b = generate_stream(st, plat, np.random.default_rng(42), n=2000)
    c = generate_stream(st, plat, np.random.default_rng(43), n=2000)
    for col in a.COLUMNS:
        assert np.array_equal(getattr(a, col), getattr(b, col))
    assert not np.array_equal(a.submit, c.submit)


def test_longer_run_extends_shorter_one():
    st, plat = scenario()
    short = generate_stream(st, plat, np.random.default_rng(5), n=1000)
    long = generate_stream(st, plat, np.random.default_rng(5), n=3000)
    for col in short.COLUMNS:
        assert np.array_equal(getattr(short, col), getattr(long, col)[:1000])


def test_horizon_mode_chunks_match_n_mode():
    st, plat = scenario()
    h = 2e6
    jobs = generate_stream(st, plat, np.random.default_rng(9), horizon=h)
    assert len(jobs) > 1000 and jobs.submit.max() < h
    same = generate_stream(st, plat, np.random.default_rng(9), n=len(jobs))
    for col in jobs.COLUMNS:
        assert np.array_equal(getattr(jobs, col), getattr(same, col))
    # the next arrival would have been at or after the horizon
    one_more = generate_stream(st, plat, np.random.default_rng(9), n=len(jobs) + 1)
    assert one_more.submit[-1] >= h


def test_count_n_and_horizon_tightest_wins():
    st, plat = scenario({"count": 50})
    assert len(generate_stream(st, plat, np.random.default_rng(0))) == 50
    assert len(generate_stream(st, plat, np.random.default_rng(0), n=20)) == 20
    assert len(generate_stream(st, plat, np.random.default_rng(0), n=500)) == 50
    assert len(generate_stream(st, plat, np.random.default_rng(0), horizon=1e9)) == 50
    assert len(generate_stream(st, plat, np.random.default_rng(0), horizon=1e-9)) == 0


def test_unbounded_stream_needs_n_or_horizon():
    st, plat = scenario()
    with pytest.raises(ValueError, match="unbounded"):
        generate_stream(st, plat, np.random.default_rng(0))


def test_empty_table_has_right_dtypes():
    st, plat = scenario()
    jobs = generate_stream(st, plat, np.random.default_rng(0), n=0)
    assert len(jobs) == 0 and jobs.processors.dtype == np.int64 and jobs.cluster.dtype == np.int32


@pytest.mark.parametrize("target, load", [("b", 0.7), ("a", 0.45), ("grid", 0.9)])
def test_empirical_offered_load_matches_target(target, load):
    st, plat = scenario({"arrival": {"target_load": load}}, target=target)
    jobs = generate_stream(st, plat, np.random.default_rng(2024), n=300_000)
    capacity = 96 if target == "grid" else {"a": 32, "b": 64}[target]
    offered = (jobs.processors * jobs.runtime).sum() / (capacity * jobs.submit[-1])
    assert offered == pytest.approx(load, rel=0.02)


def test_offered_load_with_non_integer_sizes():
    # sizes are rounded up, and target_load accounts for it
    st, plat = scenario(
        {"size": {"kind": "uniform", "low": 0.5, "high": 20.5}, "arrival": {"target_load": 0.6}}
    )
    jobs = generate_stream(st, plat, np.random.default_rng(8), n=300_000)
    offered = (jobs.processors * jobs.runtime).sum() / (64 * jobs.submit[-1])
    assert offered == pytest.approx(0.6, rel=0.02)


def test_rate_and_mean_interarrival():
    st, plat = scenario({"arrival": {"mean_interarrival": 0.014}})
    jobs = generate_stream(st, plat, np.random.default_rng(1), n=200_000)
    gaps = np.diff(np.concatenate([[0.0], jobs.submit]))
    assert gaps.mean() == pytest.approx(0.014, rel=0.01)
    assert gaps.std() == pytest.approx(0.014, rel=0.02)  # exponential: std = mean
    st, plat = scenario({"arrival": {"rate": 2.0}})
    jobs = generate_stream(st, plat, np.random.default_rng(1), horizon=100_000)
    assert len(jobs) / 100_000 == pytest.approx(2.0, rel=0.01)


def test_factor_estimates():
    st, plat = scenario({"estimate": {"kind": "factor", "factor": {"kind": "uniform", "low": 1, "high": 3}}})
    jobs = generate_stream(st, plat, np.random.default_rng(4), n=50_000)
    ratio = jobs.estimate / jobs.runtime
    assert ratio.min() >= 1 and ratio.max() <= 3
    assert ratio.mean() == pytest.approx(2.0, abs=0.02)
