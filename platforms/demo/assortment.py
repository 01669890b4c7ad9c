"""What can be bought when: the sellable products (not drafts) by creation time, and the
variants each offers. Order lines are drawn from it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from platforms.demo.money import minor_units
from platforms.demo.timeline import seconds_of

# Older products sell more: a line picks among the products on sale at its time with this
# skew towards the oldest.
POPULARITY_SKEW = 1.5


@dataclass(frozen=True)
class Assortment:
    products: pa.Table
    variants: pa.Table
    # Sellable product rows of `products`, oldest first, and when each went on sale.
    product_rows: np.ndarray
    on_sale_from: np.ndarray
    # Per sellable product: its variants as a range of `variant_rows`.
    variant_start: np.ndarray
    variant_count: np.ndarray
    variant_rows: np.ndarray
    prices: np.ndarray
    costs: np.ndarray  # unit cost in minor units, -1 where none is recorded


def assortment(products: pa.Table, variants: pa.Table, digits: int) -> Assortment:
    owner = pc.index_in(variants["product_id"], value_set=products["id"])
    owner = np.asarray(pc.fill_null(owner, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    position = variants["position"].to_numpy()
    variant_rows = np.lexsort((position, owner))
    variant_rows = variant_rows[owner[variant_rows] >= 0]
    owners = owner[variant_rows]
    per_product = np.bincount(owners, minlength=products.num_rows)
    first = np.searchsorted(owners, np.arange(products.num_rows))

    created = seconds_of(products["created_at"])
    status = products["status"].to_numpy(zero_copy_only=False)
    sellable = np.flatnonzero((status != "draft") & (per_product > 0))
    sellable = sellable[np.argsort(created[sellable], kind="stable")]
    return Assortment(
        products=products,
        variants=variants,
        product_rows=sellable,
        on_sale_from=created[sellable],
        variant_start=first[sellable],
        variant_count=per_product[sellable],
        variant_rows=variant_rows,
        prices=minor_units(variants["price"], digits),
        costs=np.where(
            np.asarray(variants["cost"].is_null().to_numpy(zero_copy_only=False), dtype=bool),
            -1,
            minor_units(variants["cost"], digits),
        ),
    )


def draw_variants(
    rng: np.random.Generator, stock: Assortment, times: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """A (product row, variant row) for a line at each of `times`, among products on sale
    then (the oldest ones if none was yet)."""
    on_sale = np.searchsorted(stock.on_sale_from, times, side="right")
    on_sale = np.maximum(on_sale, min(len(stock.product_rows), 10))
    pick = (on_sale * rng.random(len(times)) ** POPULARITY_SKEW).astype(np.int64)
    variant = stock.variant_start[pick] + (
        rng.random(len(times)) * stock.variant_count[pick]
    ).astype(np.int64)
    return stock.product_rows[pick], stock.variant_rows[variant]
