"""Level of detail (simengine.gantt_lod): window queries and occupancy rasters against
brute-force definitions on random segments."""
from __future__ import annotations

import numpy as np
import pytest

from simengine.gantt_lod import BLOCK, SegmentTable, bands_for, quantize
from simengine.streaming import LIVE_DTYPES

PROCESSORS = [16, 7]


def random_rows(n: int, seed: int, order: str = "t0") -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    cluster = rng.integers(0, len(PROCESSORS), n)
    size = np.array(PROCESSORS)[cluster]
    procs = np.minimum(rng.integers(1, 6, n), size)
    first = (rng.random(n) * (size - procs + 1)).astype(int)
    t0 = np.sort(rng.uniform(0, 1000, n)) if order == "t0" else rng.uniform(0, 1000, n)
    long = rng.random(n) < 0.01  # a few segments that span most of the run
    t1 = t0 + np.where(long, rng.uniform(0, 1000, n), rng.exponential(5, n))
    zero = rng.random(n) < 0.02  # some zero-length ones
    t1[zero] = t0[zero]
    rows = {"cluster": cluster, "first_processor": first, "processors": procs, "t0": t0, "t1": t1,
            "kind": rng.choice([0, 1, 2], n, p=[0.8, 0.1, 0.1]), "component": np.zeros(n),
            "job_id": np.arange(n), "stream": np.zeros(n)}
    if order == "t1":
        o = np.argsort(rows["t1"], kind="stable")
        rows = {k: v[o] for k, v in rows.items()}
    return {k: np.asarray(v).astype(LIVE_DTYPES[k]) for k, v in rows.items()}


def brute_in_window(rows, a, b):
    t0, t1 = rows["t0"], rows["t1"]
    return np.flatnonzero((t0 < b) & ((t1 > a) | ((t0 >= a) & (t1 == t0))))


@pytest.mark.parametrize("order", ["t0", "t1"])
@pytest.mark.parametrize("window", [(0, 1000), (400, 410), (999, 2000), (-50, 0.5), (300, 300.001), (-1, 5000)])
def test_select_finds_exactly_the_rows_in_the_window(order, window):
    rows = random_rows(3 * BLOCK + 17, seed=1, order=order)
    table = SegmentTable(rows)
    which, total = table.select(*window, limit=10**9)
    expected = brute_in_window(rows, *window)
    assert total == len(expected)
    np.testing.assert_array_equal(np.sort(which), expected)
    assert table.count(*window) == len(expected)
    capped, total_capped = table.select(*window, limit=5)
    assert total_capped == len(expected) and len(capped) == min(5, len(expected))


@pytest.mark.parametrize("window", [(100, 900), (0, 1000), (250.5, 250.5 + 4096 * 0.1), (-5, 2000)])
def test_count_takes_blocks_wholly_inside_by_their_size_and_is_still_exact(window):
    rows = random_rows(40 * BLOCK + 5, seed=3)
    rows["t1"] = np.minimum(rows["t1"], rows["t0"] + 1.0)  # short segments: whole blocks fit in a window
    table = SegmentTable(rows)
    blocks = table.blocks(*window)
    inside = (table.lo[blocks] >= window[0]) & (table.hi[blocks] < window[1])
    assert inside.any()  # the shortcut is taken ...
    assert table.count(*window) == len(brute_in_window(rows, *window))  # ... and agrees with every row


def brute_raster(rows, a, b, bins, bands, kinds):
    """Per cell: overlap of each segment with the cell's processors and time, over the cell's area."""
    out = np.zeros((len(kinds), sum(bands), bins))
    edges = np.linspace(a, b, bins + 1)
    offset = np.concatenate([[0], np.cumsum(bands)])
    for i in range(len(rows["t0"])):
        c = rows["cluster"][i]
        h = PROCESSORS[c] / bands[c]
        p0 = rows["first_processor"][i]
        p1 = p0 + rows["processors"][i]
        time_overlap = np.clip(np.minimum(edges[1:], rows["t1"][i]) - np.maximum(edges[:-1], rows["t0"][i]), 0, None)
        for band in range(bands[c]):
            share = max(0.0, min(p1, (band + 1) * h) - max(p0, band * h)) / h
            out[kinds.index(rows["kind"][i]), offset[c] + band] += share * time_overlap / (edges[1] - edges[0])
    return out


@pytest.mark.parametrize("bands", [[16, 7], [4, 3], [1, 1]])
@pytest.mark.parametrize("window,bins", [((0, 1000), 50), ((200, 260), 13), ((995, 1100), 7)])
def test_raster_is_the_exact_occupancy_of_each_cell(bands, window, bins):
    rows = random_rows(600, seed=2)
    table = SegmentTable(rows)
    kinds = [0, 1, 2]
    got = table.raster(*window, bins, bands, PROCESSORS, kinds)
    np.testing.assert_allclose(got, brute_raster(rows, *window, bins, bands, kinds), atol=2e-5)


@pytest.mark.parametrize("bands", [[16, 7], [10, 7], [13, 5]])
def test_raster_of_wide_segments_whose_whole_bands_go_through_the_difference_array_is_exact(bands):
    rows = random_rows(800, seed=4)
    rng = np.random.default_rng(5)
    size = np.array(PROCESSORS)[rows["cluster"]]
    rows["processors"] = np.minimum(rng.integers(6, 17, len(size)), size).astype(np.int32)  # many bands each
    rows["first_processor"] = (rng.random(len(size)) * (size - rows["processors"] + 1)).astype(np.int32)
    kinds = [0, 1, 2]
    for window, bins in (((0, 1000), 40), ((300, 330), 9)):
        got = SegmentTable(rows).raster(*window, bins, bands, PROCESSORS, kinds)
        np.testing.assert_allclose(got, brute_raster(rows, *window, bins, bands, kinds), atol=5e-5)


def test_raster_of_a_full_cluster_is_one_and_of_nothing_zero():
    n = 8
    rows = {"cluster": np.zeros(n), "first_processor": np.arange(n) * 2, "processors": np.full(n, 2),
            "t0": np.zeros(n), "t1": np.full(n, 10.0), "kind": np.zeros(n), "component": np.zeros(n),
            "job_id": np.arange(n), "stream": np.zeros(n)}
    table = SegmentTable({k: np.asarray(v).astype(LIVE_DTYPES[k]) for k, v in rows.items()})
    r = table.raster(0, 20, 4, [4], [16], [0])
    np.testing.assert_allclose(r[0, :, :2], 1.0, atol=1e-6)
    np.testing.assert_allclose(r[0, :, 2:], 0.0)


def test_quantized_occupancy_keeps_slivers_visible():
    q = quantize(np.array([0.0, 1e-6, 0.5, 1.0, 1.2], np.float32))
    assert q.tolist() == [0, 1, 128, 255, 255]


def test_bands_follow_the_plot_height_and_never_exceed_the_processors():
    assert 94 <= sum(bands_for([128, 64], 96)) <= 96 + 2  # about a band per pixel row (less the gap)
    assert bands_for([128, 64], 10_000) == [128, 64]
    assert all(b >= 1 for b in bands_for([1000, 3], 10))


def test_kinds_not_asked_for_are_left_out_of_the_raster():
    rows = random_rows(600, seed=3)
    table = SegmentTable(rows)
    only_run = table.raster(0, 1000, 20, [4, 2], PROCESSORS, [0])
    np.testing.assert_allclose(only_run, table.raster(0, 1000, 20, [4, 2], PROCESSORS, [0, 1, 2])[:1], atol=1e-6)
    kept = rows["kind"] == 0
    np.testing.assert_allclose(only_run, brute_raster({k: v[kept] for k, v in rows.items()}, 0, 1000, 20, [4, 2],
                                                      [0]), atol=2e-5)
