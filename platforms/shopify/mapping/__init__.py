"""Shopify records (plain dicts, child connections as lists) -> rows of warehouse.schemas.

Conventions (also in docs/shopify.md):
- Ids: `id` is platforms.ids.record_id(store_id, gid); `platform_id` is the gid itself.
- Money: `shopMoney` amounts, in the shop's currency, as exact decimals of scale 2.
  Order amounts are those *at order time* (subtotalPriceSet, totalDiscountsSet, ...):
  refunds are their own rows, so the sales model subtracts them once.
- Statuses: Shopify enums lower-cased (PARTIALLY_REFUNDED -> partially_refunded);
  fulfillment collapses to fulfilled | partial | unfulfilled (| restocked).
- Timestamps: UTC. Tags: joined with ", ".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from platforms.shopify.mapping.orders import order_rows
from platforms.shopify.mapping.records import customer_rows, draft_order_rows, product_rows
from platforms.shopify.mapping.values import MappingContext, Row
from warehouse.schemas import SOURCE_DATASETS, TABLES

__all__ = ["MAPPERS", "MappingContext", "dataset_rows", "to_tables"]

MAPPERS: dict[str, Callable[[MappingContext, dict[str, Any]], dict[str, list[Row]]]] = {
    "orders": order_rows,
    "customers": customer_rows,
    "products": product_rows,
    "draft_orders": draft_order_rows,
}


def dataset_rows(
    ctx: MappingContext, dataset: str, records: list[dict[str, Any]]
) -> dict[str, list[Row]]:
    """Rows per table of `dataset` for `records` (the parent table first)."""
    rows: dict[str, list[Row]] = {name: [] for name in SOURCE_DATASETS[dataset]}
    for record in records:
        for name, table_rows in MAPPERS[dataset](ctx, record).items():
            rows[name].extend(table_rows)
    return rows


def to_tables(rows: dict[str, list[Row]]) -> dict[str, pa.Table]:
    """Arrow tables in exactly the warehouse schemas."""
    return {
        name: pa.Table.from_pylist(table_rows, schema=TABLES[name].schema)
        for name, table_rows in rows.items()
    }
