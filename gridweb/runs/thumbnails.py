"""A small inline-SVG picture of a run's Gantt for gallery cards.

Drawing every segment would make the card as large as the run (a 40,000-job trace has tens of
thousands of segments), so the thumbnail is *aggregated*: one horizontal band per cluster, its
height proportional to the cluster's processors, filled up to the fraction of that cluster's
processors that are busy in each of ``BINS`` time slices (fewer slices when there are many
clusters). The SVG has one ``<path>`` per cluster
whatever the number of jobs, so it stays a few kilobytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from simengine.gantt import KIND_RESERVATION, KIND_SUSPENDED

WIDTH, HEIGHT = 240, 96  # SVG user units (the card scales it)
BINS = 60  # time slices across the width
MAX_BANDS = 16  # clusters drawn; beyond that the bands would be thinner than a pixel
#: Segment kinds that lie over other segments and are not counted as busy: a reservation's
#: window (its job's run is inside it) and a suspended job's gap (its preemptor runs there).
NOT_BUSY = (KIND_RESERVATION, KIND_SUSPENDED)
# One colour per cluster band, repeated when there are more clusters.
PALETTE = ("#3b6fb6", "#d9822b", "#3f9a5a", "#b5453d", "#7d5ba6", "#8c6d3f", "#cc6aa8", "#6b7b8c")


def busy_fraction(segments: Mapping[str, Sequence], cluster: int, processors: int, t_end: float,
                  bins: int = BINS) -> np.ndarray:
    """Mean fraction of ``cluster``'s ``processors`` busy in each of ``bins`` equal slices of [0, t_end]
    (segments of the kinds in :data:`NOT_BUSY` are left out)."""
    chosen = np.asarray(segments["cluster"]) == cluster
    if "kind" in segments:
        chosen &= ~np.isin(np.asarray(segments["kind"]), NOT_BUSY)
    t0 = np.asarray(segments["t0"], dtype=np.float64)[chosen]
    t1 = np.asarray(segments["t1"], dtype=np.float64)[chosen]
    width = np.asarray(segments["processors"], dtype=np.float64)[chosen]
    if t_end <= 0 or processors <= 0 or not len(t0):
        return np.zeros(bins)
    edges = np.linspace(0.0, t_end, bins + 1)
    # Busy processor-seconds in each slice: the integral of the step function "processors held",
    # taken from its running total at the slice edges (no per-segment loop).
    starts = np.clip(t0, 0.0, t_end)
    ends = np.clip(t1, 0.0, t_end)
    order_start, order_end = np.argsort(starts), np.argsort(ends)
    starts, w_start = starts[order_start], width[order_start]
    ends, w_end = ends[order_end], width[order_end]

    def area_until(times: np.ndarray, weights: np.ndarray) -> np.ndarray:
        # sum over segments of weight * max(0, edge - time), for every edge
        k = np.searchsorted(times, edges, side="right")
        cum_w = np.concatenate([[0.0], np.cumsum(weights)])
        cum_wt = np.concatenate([[0.0], np.cumsum(weights * times)])
        return edges * cum_w[k] - cum_wt[k]

    busy = area_until(starts, w_start) - area_until(ends, w_end)
    per_slice = np.diff(busy) / (np.diff(edges) * processors)
    return np.clip(per_slice, 0.0, 1.0)


def gantt_thumbnail(segments: Mapping[str, Sequence], cluster_names: Sequence[str],
                    cluster_processors: Sequence[int]) -> str:
    """The SVG text of the aggregated Gantt (see the module docstring)."""
    t1 = np.asarray(segments.get("t1", []), dtype=np.float64)
    t_end = float(np.nanmax(t1)) if len(t1) else 0.0
    shown = list(zip(cluster_names, cluster_processors))[:MAX_BANDS]
    total = sum(max(int(p), 1) for _, p in shown) or 1
    bins = max(BINS // max(1, len(shown) // 4), 12)  # about the same text for 1 or 16 clusters
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
             f'preserveAspectRatio="none" role="img" aria-label="Gantt overview: busy processors over time">',
             f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#f4f5f7"/>']
    top = 0.0
    for index, (name, processors) in enumerate(shown):
        band = HEIGHT * max(int(processors), 1) / total
        fraction = busy_fraction(segments, index, int(processors), t_end, bins)
        step = WIDTH / len(fraction)
        bottom = top + band
        # Area from the band's bottom edge up to the busy fraction, through the slices' centres;
        # a run of equal heights is drawn as one segment to keep the text short.
        heights = [round(bottom - f * band, 1) for f in fraction]
        points = [f"M0 {bottom:.1f}L0 {heights[0]:g}"]
        for i, y in enumerate(heights):
            if 0 < i < len(heights) - 1 and heights[i - 1] == y == heights[i + 1]:
                continue
            points.append(f"L{(i + 0.5) * step:.1f} {y:g}")
        points.append(f"L{WIDTH} {heights[-1]:g}L{WIDTH} {bottom:.1f}Z")
        colour = PALETTE[index % len(PALETTE)]
        parts.append(f'<path d="{"".join(points)}" fill="{colour}"><title>{_escape(str(name))}</title></path>')
        if index:
            parts.append(f'<line x1="0" x2="{WIDTH}" y1="{top:.1f}" y2="{top:.1f}" stroke="#ffffff" '
                         'stroke-width="0.5"/>')
        top = bottom
    parts.append("</svg>")
    return "".join(parts)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
