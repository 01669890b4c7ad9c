"""Changing some rows of an Arrow table in place of a database UPDATE and DELETE."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def replace_rows(table: pa.Table, rows: np.ndarray, values: dict[str, pa.Array]) -> pa.Table:
    """`table` with the named columns of `rows` set to `values` (aligned with `rows`)."""
    if len(rows) == 0:
        return table
    mask = np.zeros(table.num_rows, dtype=bool)
    mask[rows] = True
    in_row_order = pa.array(np.argsort(rows, kind="stable"))
    for name, column in values.items():
        index = table.schema.get_field_index(name)
        current = table[name].combine_chunks()
        replaced = pc.replace_with_mask(
            current, pa.array(mask), column.take(in_row_order).cast(current.type)
        )
        table = table.set_column(index, name, replaced)
    return table


def drop_rows(table: pa.Table, rows: np.ndarray) -> pa.Table:
    keep = np.ones(table.num_rows, dtype=bool)
    keep[rows] = False
    return table.filter(pa.array(keep))


def without_parents(table: pa.Table, key: str, parent_ids: pa.Array) -> pa.Table:
    """Rows of `table` whose `key` is not one of `parent_ids`."""
    return table.filter(pc.invert(pc.is_in(table[key], value_set=parent_ids)))


def pick(
    rng: np.random.Generator, candidates: np.ndarray, probability: float, *, at_least: int = 0
) -> np.ndarray:
    """Each of `candidates` with `probability`, but at least `at_least` of them when there
    are that many (so every advance exercises every kind of change)."""
    chosen = candidates[rng.random(len(candidates)) < probability]
    if len(chosen) < at_least and len(candidates):
        chosen = rng.choice(candidates, size=min(at_least, len(candidates)), replace=False)
    return np.sort(chosen)


def change_times(rng: np.random.Generator, count: int, old: int, new: int) -> np.ndarray:
    """Whole-second times in (old, new]: when this advance's changes happened."""
    return rng.integers(old + 1, new + 1, count)
