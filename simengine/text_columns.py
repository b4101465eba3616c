"""Columns of numbers as text, a whole column at a time: the CSV and SWF files a run writes.

Each column becomes an (n, width) byte matrix, one row per value, padded with NUL bytes on the
left (numbers, right-aligned) or the right (other text). A CSV is the columns side by side with
commas between them and a line break after the last, read out without the padding; an SWF line
is the same matrix with the padding as blanks. Integers, and floats that hold integers, are
written digit by digit with array arithmetic (``str``, ``repr`` and numpy's own conversion to
text cost a few milliseconds per 40,000 values each, most of a command-line replay's output
time); the other floats go through ``repr``, the shortest text that reads back as the same
float. Every value is the text ``str`` or ``repr`` gives it (tests/simengine/test_text_columns.py).
Text never holds a NUL byte (names are validated), so the padding is the NUL bytes.
"""
from __future__ import annotations

import numpy as np

#: floats below this (in magnitude) that hold an integer are written "<digits>.0", as repr does
#: (from 1e16 on repr writes an exponent)
_INTEGRAL_FLOAT_LIMIT = 1e16


def integer_text(values: np.ndarray, suffix: bytes = b"") -> np.ndarray:
    """Integers as right-aligned decimal text (a leading ``-`` when negative), each followed by
    ``suffix``: an (n, width) uint8 matrix, NUL-padded on the left."""
    v = np.asarray(values).astype(np.int64, copy=False)
    n = len(v)
    negative = v < 0
    magnitude = np.abs(v).astype(np.uint64)  # (abs of the smallest int64 is itself: as uint64, right)
    digits = np.ones(n, np.int64)
    rest = magnitude // 10
    while n and rest.any():
        digits += rest > 0
        rest //= 10
    s = len(suffix)
    width = (int((digits + negative).max()) if n else 1) + s
    out = np.zeros((n, width), np.uint8)
    if s:
        out[:, width - s:] = np.frombuffer(suffix, np.uint8)
    rest = magnitude
    for k in range(int(digits.max()) if n else 0):
        column = (rest % 10).astype(np.uint8) + ord("0")
        out[:, width - s - 1 - k] = np.where(k < digits, column, 0)
        rest = rest // 10
    rows = np.flatnonzero(negative)
    out[rows, width - s - 1 - digits[rows]] = ord("-")
    return out


def strings_text(texts: list[str]) -> np.ndarray:
    """Strings as UTF-8 text: an (n, width) uint8 matrix, NUL-padded on the right."""
    encoded = np.array([t.encode("utf-8") for t in texts], dtype=np.bytes_)
    width = max(encoded.dtype.itemsize, 1)
    return np.ascontiguousarray(encoded.astype(f"S{width}")).view(np.uint8).reshape(len(texts), width)


def float_text(values: np.ndarray) -> np.ndarray:
    """Floats as ``repr`` writes them (NaN as nothing): an (n, width) uint8 matrix."""
    v = np.asarray(values, np.float64)
    n = len(v)
    finite = np.isfinite(v)
    integral = finite & (np.abs(v) < _INTEGRAL_FLOAT_LIMIT) & (v == np.trunc(v)) & ~((v == 0) & np.signbit(v))
    whole = integer_text(v[integral], b".0") if integral.any() else np.zeros((0, 1), np.uint8)
    other = ~integral & ~np.isnan(v)
    parts = strings_text([repr(x) for x in v[other].tolist()]) if other.any() else np.zeros((0, 1), np.uint8)
    out = np.zeros((n, max(whole.shape[1], parts.shape[1])), np.uint8)
    out[integral, out.shape[1] - whole.shape[1]:] = whole
    out[other, :parts.shape[1]] = parts
    return out


def column_text(values) -> np.ndarray:
    """One column as text (:func:`integer_text`, :func:`float_text`, or ``str`` of each value)."""
    v = np.asarray(values)
    if v.dtype.kind == "b":
        return strings_text(["False", "True"])[v.astype(np.intp)]
    if v.dtype.kind == "i" or (v.dtype.kind == "u" and (not len(v) or v.max() <= np.iinfo(np.int64).max)):
        return integer_text(v)
    if v.dtype.kind == "f":
        return float_text(v)
    if v.dtype.kind == "S":  # UTF-8 text kept as bytes (Batsim's names): already the matrix, NUL-padded
        width = max(v.dtype.itemsize, 1)
        return np.ascontiguousarray(v.astype(f"S{width}")).view(np.uint8).reshape(len(v), width)
    return strings_text([str(x) for x in v.tolist()])


def csv_bytes(columns: list[np.ndarray]) -> bytes:
    """Rows of the text matrices ``columns`` (same row count) joined by commas, one line each."""
    n = columns[0].shape[0] if columns else 0
    if n == 0:
        return b""
    width = sum(c.shape[1] for c in columns) + len(columns)
    out = np.zeros((n, width), np.uint8)
    pos = 0
    for c in columns:
        out[:, pos:pos + c.shape[1]] = c
        pos += c.shape[1]
        out[:, pos] = ord(",")
        pos += 1
    out[:, -1] = ord("\n")
    flat = out.ravel()
    return flat[flat != 0].tobytes()
