"""Amounts: computed as int64 counts of the currency's minor unit (cents; whole yen), stored
as decimal128(18, 2). Integer arithmetic keeps every sum exact."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from warehouse.schemas import MONEY

_SCALE = MONEY.scale


def money_array(minor: np.ndarray, digits: int, mask: np.ndarray | None = None) -> pa.Array:
    """decimal128(18, 2) values of `minor` units of a currency with `digits` minor digits;
    null where `mask` is true."""
    unscaled = np.ascontiguousarray(minor, dtype=np.int64) * (10 ** (_SCALE - digits))
    words = np.empty((len(unscaled), 2), dtype=np.int64)
    words[:, 0] = unscaled
    words[:, 1] = unscaled >> 63  # sign extension into the high 64 bits
    validity = None
    if mask is not None and np.any(mask):
        validity = pa.array(~np.asarray(mask, dtype=bool)).buffers()[1]
    return pa.Array.from_buffers(MONEY, len(unscaled), [validity, pa.py_buffer(words)])


def minor_units(values: pa.Array | pa.ChunkedArray, digits: int) -> np.ndarray:
    """int64 minor units of decimal128(18, 2) `values` (nulls read as 0)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], MONEY)
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    words = np.frombuffer(values.buffers()[1], dtype=np.int64).reshape(-1, 2)
    low = words[values.offset : values.offset + len(values), 0].copy()
    if values.null_count:
        low[values.is_null().to_numpy(zero_copy_only=False)] = 0
    return low // (10 ** (_SCALE - digits))


def price_points(usd: np.ndarray, per_usd: float, digits: int) -> np.ndarray:
    """Shop-like prices in minor units for US-dollar amounts: 29.99 in two-digit currencies,
    4,980 in yen."""
    local = np.asarray(usd, dtype=float) * per_usd
    if digits == 0:
        return np.maximum(np.rint(local / 100.0) * 100 - 20, 80).astype(np.int64)
    unit = 10**digits
    return np.maximum(np.rint(local) * unit - 1, unit - 1).astype(np.int64)


def round_amounts(usd: np.ndarray, per_usd: float, digits: int) -> np.ndarray:
    """Plain amounts (fees) in minor units: converted and rounded to a whole unit."""
    local = np.asarray(usd, dtype=float) * per_usd
    return (np.rint(local) * 10**digits).astype(np.int64)


def share(amount: np.ndarray, part: np.ndarray, whole: np.ndarray) -> np.ndarray:
    """round(amount * part / whole), half up, in exact integers (whole > 0)."""
    return (2 * amount * part + whole) // (2 * whole)
