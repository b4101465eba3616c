"""Columns as text (simengine.text_columns): every value is written as Python's ``str`` (integers,
other values) or ``repr`` (floats, NaN as nothing) writes it, and a CSV is those values joined by
commas, one line per row; the SWF writer's integer columns are right-aligned as ``str.rjust``."""
from __future__ import annotations

import numpy as np
import pytest

from simengine.text_columns import column_text, csv_bytes, integer_text


def reference_csv(columns: list[np.ndarray]) -> bytes:
    """The CSV value by value, as the writer before simengine.text_columns made it."""
    def text(v) -> list[str]:
        if v.dtype.kind == "f":
            return ["" if np.isnan(x) else repr(x) for x in v.tolist()]
        return [str(x) for x in v.tolist()]

    texts = [text(np.asarray(c)) for c in columns]
    return "".join(",".join(row) + "\n" for row in zip(*texts)).encode("utf-8")


EDGE_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, 1e15, 9999999999999998.0, 1e16, -1e16, 1.5e16, 1e22, 123456789.25,
               5e-324, 1e-5, 0.0001, 2.5e-7, 0.1 + 0.2, np.nan, np.inf, -np.inf, 1.7976931348623157e308,
               -123456789012345.0, 4503599627370496.0, 4503599627370497.0]
EDGE_INTS = [0, 1, -1, 9, 10, -10, 99, 100, 2**31 - 1, -2**31, 2**53 + 1, np.iinfo(np.int64).max, np.iinfo(np.int64).min]


def test_edge_values_are_written_as_str_and_repr_write_them():
    floats = np.array(EDGE_FLOATS)
    ints = np.resize(np.array(EDGE_INTS, np.int64), len(floats))
    flags = np.arange(len(floats)) % 2 == 0
    names = np.array(["main", "été", "x"] * 8, dtype=object)[:len(floats)]
    columns = [ints, floats, flags, names, ints.astype(np.int8), np.abs(ints[:len(floats)] % 1000).astype(np.uint16)]
    assert csv_bytes([column_text(c) for c in columns]) == reference_csv(columns)


@pytest.mark.parametrize("seed", range(5))
def test_random_columns_are_written_as_str_and_repr_write_them(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    integral = np.floor(rng.uniform(-1e9, 3e7, n))
    mixed = np.where(rng.random(n) < 0.5, integral, rng.lognormal(0, 8, n) * rng.choice([-1, 1], n))
    mixed[rng.random(n) < 0.1] = np.nan
    big = rng.uniform(-2e16, 2e16, n).round()
    columns = [rng.integers(-2**62, 2**62, n), integral, mixed, big, rng.integers(0, 5, n).astype(np.int32),
               (rng.random(n) < 0.3)]
    assert csv_bytes([column_text(c) for c in columns]) == reference_csv(columns)


def test_integers_are_right_aligned_for_the_swf_writer():
    values = np.array([5, -1, 12345, -678, 0])
    width = max(len(str(v)) for v in values.tolist())
    rows = [bytes(r).replace(b"\0", b" ").decode() for r in integer_text(values)]
    assert rows == [str(v).rjust(width) for v in values.tolist()]


def test_no_rows_give_no_text():
    assert csv_bytes([column_text(np.array([], float)), column_text(np.array([], np.int64))]) == b""
