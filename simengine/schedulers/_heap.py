"""A binary min-heap of (time, job) pairs in numpy arrays, for compiled event loops.

Ties on time pop in insertion order of job index (smaller job index first), which
keeps simultaneous completions deterministic.
"""
from __future__ import annotations

import numpy as np

from simengine.jit import njit


@njit(cache=True, inline="always")
def _less(keys, vals, a, b):
    return keys[a] < keys[b] or (keys[a] == keys[b] and vals[a] < vals[b])


@njit(cache=True)
def heap_push(keys, vals, n, key, val):
    """Push and return the new size. Arrays must have room for n + 1 items."""
    i = n
    keys[i] = key
    vals[i] = val
    while i > 0:
        parent = (i - 1) >> 1
        if _less(keys, vals, i, parent):
            keys[i], keys[parent] = keys[parent], keys[i]
            vals[i], vals[parent] = vals[parent], vals[i]
            i = parent
        else:
            break
    return n + 1


@njit(cache=True)
def heap_pop(keys, vals, n):
    """Remove the smallest item (read it from keys[0], vals[0] first); return the new size."""
    n -= 1
    keys[0] = keys[n]
    vals[0] = vals[n]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= n:
            break
        child = left
        if left + 1 < n and _less(keys, vals, left + 1, left):
            child = left + 1
        if _less(keys, vals, child, i):
            keys[i], keys[child] = keys[child], keys[i]
            vals[i], vals[child] = vals[child], vals[i]
            i = child
        else:
            break
    return n


def new_heap(capacity: int) -> tuple[np.ndarray, np.ndarray]:
    return np.empty(max(capacity, 1), np.float64), np.empty(max(capacity, 1), np.int64)
