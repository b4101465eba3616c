"""Level of detail for big Gantt charts: which segments lie in a window of time, and the
occupancy raster that stands for them when they are too many to draw (datashader's idea:
send pixels, not rows, when there are more rows than pixels).

A :class:`SegmentTable` holds segment rows (the live columns of simengine.streaming) in any
roughly time-ordered order -- sorted by start as a Result stores them, or by end as the live
stream delivers them -- with a block index: the earliest start and the latest end of every
``BLOCK`` rows. A window query visits only the blocks that can reach into the window; columns
may be memory-mapped files, so nothing is read that the query does not need.

The raster of a window [a, b) has, for every cluster, ``bands`` rows of processors (each band
an equal share of the cluster's processors) and ``bins`` columns of time; a cell holds, per
segment kind, the share of the cell's processor-time the segments of that kind cover
(0..1, exact: each segment adds its overlap of processors times its overlap of time).
"""
from __future__ import annotations

import math

import numpy as np

from simengine.gantt import KIND_NAMES
from simengine.jit import njit
from simengine.streaming import LIVE_COLUMNS, LIVE_DTYPES

#: rows per block of the index
BLOCK = 4096


@njit(cache=True)
def block_bounds(t0, t1, block):
    """The earliest start and the latest end of every ``block`` rows."""
    n = t0.shape[0]
    nb = (n + block - 1) // block
    lo = np.empty(nb)
    hi = np.empty(nb)
    for k in range(nb):
        a = k * block
        b = min(n, a + block)
        m0 = math.inf
        m1 = -math.inf
        for i in range(a, b):
            if t0[i] < m0:
                m0 = t0[i]
            if t1[i] > m1:
                m1 = t1[i]
        lo[k] = m0
        hi[k] = m1
    return lo, hi


@njit(cache=True)
def _in_window(t0, t1, a, b, i):
    # a segment is in [a, b) when it starts before b and ends after a; a zero-length one when
    # it lies in [a, b)
    return t0[i] < b and (t1[i] > a or (t0[i] >= a and t1[i] == t0[i]))


@njit(cache=True)
def _select(t0, t1, blocks, block, a, b, limit):
    """Rows of ``blocks`` in [a, b) (at most ``limit``; returns how many there are in all)."""
    n = t0.shape[0]
    out = np.empty(min(limit, n), np.int64)
    m = 0
    total = 0
    for k in blocks:
        for i in range(k * block, min(n, (k + 1) * block)):
            if _in_window(t0, t1, a, b, i):
                if m < out.shape[0]:
                    out[m] = i
                    m += 1
                total += 1
    return out[:m], total


#: a segment covering more bands than this adds its whole bands through a difference array along
#: the band axis (two updates per column instead of one per band)
_WIDE = 4


@njit(cache=True, inline="always")
def _share(j, base, h, p0, p1):
    """The share of band j (of a cluster whose bands start at ``base``, h processors each) that
    processors [p0, p1) cover (negative when they miss it)."""
    lo = (j - base) * h
    return (min(p1, lo + h) - max(p0, lo)) / h


@njit(cache=True)
def _raster(cluster, first, procs, t0, t1, kind, blocks, block, a, b, bins, band_start, band_size, kind_slot, out,
            diff):
    """Add every row of ``blocks`` to ``out[slot, band, bin]`` (see the module docstring):
    cluster c owns bands band_start[c]..band_start[c + 1]-1, each band_size[c] processors. The
    whole bands of a wide segment go to ``diff`` (``[slots, bands + 1, bins]``: +w at its first
    whole band, -w after its last), which the caller sums along the bands into ``out``."""
    n = t0.shape[0]
    width = (b - a) / bins
    for k in blocks:
        for i in range(k * block, min(n, (k + 1) * block)):
            s0 = max(t0[i], a)
            s1 = min(t1[i], b)
            if s1 <= s0:
                continue
            slot = kind_slot[kind[i]]
            if slot < 0:  # a kind not asked for
                continue
            c = cluster[i]
            h = band_size[c]
            base = band_start[c]
            p0 = float(first[i])
            p1 = p0 + procs[i]
            j0 = base + int(p0 / h)
            j1 = min(base + int(math.ceil(p1 / h)), band_start[c + 1])
            x0 = (s0 - a) / width
            x1 = (s1 - a) / width
            i0 = min(int(x0), bins - 1)
            i1 = min(int(x1), bins - 1)
            # the bands wholly covered: [f0, f1); partly covered ones get their share directly
            f0 = base + int(math.ceil(p0 / h))
            f1 = base + int(p1 / h)
            wide = f1 - f0 > _WIDE
            for q in range(i0, i1 + 1):
                if i0 == i1:
                    w = x1 - x0
                elif q == i0:
                    w = i0 + 1 - x0
                elif q == i1:
                    w = x1 - i1
                else:
                    w = 1.0
                if w <= 0:
                    continue
                if wide:
                    diff[slot, f0, q] += w
                    diff[slot, f1, q] -= w
                    for j in range(j0, f0):  # the partly covered band before them
                        out[slot, j, q] += _share(j, base, h, p0, p1) * w
                    for j in range(f1, j1):  # and after them
                        out[slot, j, q] += _share(j, base, h, p0, p1) * w
                    continue
                for j in range(j0, j1):
                    share = _share(j, base, h, p0, p1)
                    if share > 0:
                        out[slot, j, q] += share * w


class SegmentTable:
    """Segment rows with a block index (module docstring). ``columns``: LIVE_COLUMNS arrays."""

    def __init__(self, columns: dict[str, np.ndarray], index: tuple[np.ndarray, np.ndarray] | None = None):
        self.columns = columns
        self.n = len(columns["t0"])
        self.lo, self.hi = index if index is not None else block_bounds(
            np.ascontiguousarray(columns["t0"]), np.ascontiguousarray(columns["t1"]), BLOCK)

    @classmethod
    def empty(cls) -> SegmentTable:
        return cls({name: np.zeros(0, dtype) for name, dtype in LIVE_DTYPES.items()})

    @property
    def span(self) -> tuple[float, float]:
        """(earliest start, latest end); (0, 0) when empty."""
        if not self.n:
            return 0.0, 0.0
        return float(self.lo.min()), float(self.hi.max())

    def kinds(self) -> list[int]:
        """Kind codes present (read once per table)."""
        if not hasattr(self, "_kinds"):
            # counted, not sorted: one pass over the (int8, non-negative) codes
            codes = np.asarray(self.columns["kind"]).view(np.uint8)
            self._kinds = np.flatnonzero(np.bincount(codes, minlength=256)).tolist() if self.n else []
        return self._kinds

    def blocks(self, a: float, b: float) -> np.ndarray:
        """Blocks that may hold rows in [a, b)."""
        return np.flatnonzero((self.lo < b) & (self.hi >= a)).astype(np.int64)

    def select(self, a: float, b: float, limit: int) -> tuple[np.ndarray, int]:
        """(row numbers in [a, b), at most ``limit``; how many there are in all)."""
        return _select(self.columns["t0"], self.columns["t1"], self.blocks(a, b), BLOCK, float(a), float(b),
                       int(limit))

    def count(self, a: float, b: float) -> int:
        """Rows in [a, b): blocks that lie wholly inside are counted by their size, only the
        others row by row (a window over most of a big run reads little)."""
        blocks = self.blocks(a, b)
        inside = (self.lo[blocks] >= a) & (self.hi[blocks] < b)  # t0 >= a and t1 < b for every row
        sizes = np.minimum(self.n - blocks[inside] * BLOCK, BLOCK)
        rest = blocks[~inside]
        return int(sizes.sum()) + _select(self.columns["t0"], self.columns["t1"], rest, BLOCK, float(a), float(b),
                                          0)[1]

    def rows(self, which: np.ndarray) -> dict[str, np.ndarray]:
        return {name: np.asarray(self.columns[name][which]) for name in LIVE_COLUMNS}

    def find(self, mask_of) -> dict[str, np.ndarray]:
        """Rows where ``mask_of(columns)`` holds (a job's segments), block by block."""
        parts = []
        for a in range(0, self.n, 1 << 20):
            chunk = {name: self.columns[name][a:a + (1 << 20)] for name in LIVE_COLUMNS}
            keep = np.flatnonzero(mask_of(chunk))
            if len(keep):
                parts.append({name: np.asarray(v[keep]) for name, v in chunk.items()})
        if not parts:
            return {name: np.zeros(0, dtype) for name, dtype in LIVE_DTYPES.items()}
        return {name: np.concatenate([p[name] for p in parts]) for name in LIVE_COLUMNS}

    def raster(self, a: float, b: float, bins: int, bands: list[int], processors: list[int],
               kinds: list[int]) -> np.ndarray:
        """Occupancy ``[len(kinds), sum(bands), bins]`` (float32, 0..1) of [a, b) by the segments
        of ``kinds`` (codes), in that order; other kinds are left out."""
        out = np.zeros((len(kinds), int(sum(bands)), int(bins)), np.float32)
        if not self.n or b <= a or not kinds:
            return out
        band_start = np.zeros(len(bands) + 1, np.int64)
        np.cumsum(bands, out=band_start[1:])
        band_size = np.array([p / max(nb, 1) for p, nb in zip(processors, bands)], np.float64)
        slot = np.full(len(KIND_NAMES) + 1, -1, np.int64)
        for s, k in enumerate(kinds):
            slot[k] = s
        c = self.columns
        diff = np.zeros((out.shape[0], out.shape[1] + 1, out.shape[2]), np.float32)
        _raster(c["cluster"], c["first_processor"], c["processors"], c["t0"], c["t1"], c["kind"],
                self.blocks(a, b), BLOCK, float(a), float(b), int(bins), band_start, band_size, slot, out, diff)
        out += np.cumsum(diff[:, :-1, :], axis=1)
        return out


def bands_for(processors: list[int], height_px: float, gap_share: float = 0.03) -> list[int]:
    """Processor bands per cluster for a plot ``height_px`` tall: about one band per pixel row,
    never more bands than processors (the Gantt stacks clusters with a gap between them)."""
    total = sum(processors) or 1
    gap = max(1, round(total * gap_share))
    rows = total + gap * max(len(processors) - 1, 0)
    per_px = max(height_px, 1.0) / rows
    return [max(1, min(p, math.ceil(p * per_px))) for p in processors]


def quantize(occupancy: np.ndarray) -> np.ndarray:
    """Occupancy as bytes 0..255; any covered cell is at least 1 (a sliver still shows)."""
    q = np.ceil(np.clip(occupancy, 0.0, 1.0) * 255.0)
    return q.astype(np.uint8)
