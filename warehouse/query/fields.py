"""How catalog fields become SQL. The catalog names the fields; this module knows the few
`sales` metrics that are not a stored column (orders, customers, average_order_value) and
where each dataset keeps its event time."""

from __future__ import annotations

from decimal import Decimal

from warehouse.catalog import Dataset, Field
from warehouse.query.plan import Arith, MetricExpr, Part, PartRef, Source

ZERO = Decimal(0)

SOURCES = {
    "sales": Source("sales", "happened_at", "happened_at_account", "happened_at_store"),
}

# `sales` metrics computed from other columns rather than aggregated from their own.
SEMANTIC_METRICS = ("orders", "customers", "average_order_value")
_ORDERS_SQL = "COUNT(DISTINCT CASE WHEN t.event_type = 'order' THEN t.order_id END)"


def source_for(dataset: Dataset) -> Source:
    """Record datasets are timed by created_at and have no precomputed local times."""
    return SOURCES.get(dataset.name) or Source(dataset.table, "created_at")


def dimension_sql(field: Field) -> str:
    if field.name == "store":
        return "s.name"  # the store's name comes from the caller's readable stores
    return f"t.{field.source}"


def value_sql(field: Field, fx: bool) -> str:
    """A row's value of `field`; money converted with the row's daily factor."""
    column = f"t.{field.source}"
    if field.type == "money" and fx:
        return f"({column} * f.factor)"
    return column


class PartRegistry:
    """Collects SQL aggregates once each; metric expressions refer to them by index."""

    def __init__(self) -> None:
        self.parts: list[Part] = []

    def ref(self, sql: str, empty: Decimal | None) -> MetricExpr:
        for k, part in enumerate(self.parts):
            if part.sql == sql:
                return PartRef(k)
        self.parts.append(Part(sql, empty))
        return PartRef(len(self.parts) - 1)


def aggregate(
    field: Field, func: str, fx: bool, parts: PartRegistry, dataset: Dataset
) -> MetricExpr:
    """The metric expression for func(field), func already validated."""
    if dataset.name == "sales" and field.name in SEMANTIC_METRICS:
        return semantic(field.name, fx, parts, dataset)
    if field.aggregate_only:
        return parts.ref("COUNT(*)", ZERO)
    value = value_sql(field, fx)
    if func == "sum":
        return parts.ref(f"SUM({value})", ZERO)
    if func == "count":
        return parts.ref(f"COUNT({value})", ZERO)
    if func == "count_distinct":
        return parts.ref(f"COUNT(DISTINCT t.{field.source})", ZERO)
    if func in ("min", "max"):
        return parts.ref(f"{func.upper()}({value})", None)
    if func == "median":
        # A wide decimal keeps the midpoint of two cents exact (1.875, not 1.87).
        cast = f"CAST({value} AS DECIMAL(38, 14))" if field.type == "money" else value
        return parts.ref(f"MEDIAN({cast})", None)
    # avg: exact as sum / count, finished in Python with decimals
    total = parts.ref(f"SUM({value})", ZERO)
    count = parts.ref(f"COUNT({value})", ZERO)
    return Arith("/", total, count)


def semantic(name: str, fx: bool, parts: PartRegistry, dataset: Dataset) -> MetricExpr:
    if name == "orders":
        return parts.ref(_ORDERS_SQL, ZERO)
    if name == "customers":
        return parts.ref("COUNT(DISTINCT t.customer_id)", ZERO)
    gross = dataset.field("gross_sales")
    discounts = dataset.field("discounts")
    assert gross is not None and discounts is not None
    net = Arith(
        "+",
        parts.ref(f"SUM({value_sql(gross, fx)})", ZERO),
        parts.ref(f"SUM({value_sql(discounts, fx)})", ZERO),
    )
    return Arith("/", net, parts.ref(_ORDERS_SQL, ZERO))
