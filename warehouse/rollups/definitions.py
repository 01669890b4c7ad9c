"""The rollup sets: which sums of the sales facts are kept, per store and time bucket, and
by which dimensions. Names only (warehouse.schemas makes them tables), so that the
planner, the builder and the schemas read one declaration.

A rollup row sums the sale events of one store, one currency, one store-local date and
one time bucket (a UTC hour, or the store-local day), per value of its set's dimensions:

- every additive measure of the facts (MEASURES), summed unconverted in the store's
  currency; a row lies within one store-local date, so the day's exchange rate applies to
  the whole row and sum(x * rate) = rate * sum(x) stays exact;
- the same measures over the return events only, or the events with a recorded cost
  (FILTERED), which the engine's reversal and profit metrics sum;
- `orders`: the distinct orders with an `order` event in the row. An order's `order`
  events share one instant and its order-level attributes, so the count adds up across
  buckets and order-level dimensions; across line-level ones (a product) it does not;
- counts of the events behind each sum (PRESENCE), so that an incremental sync can add and
  subtract rows and still tell a sum of nothing (null, as SQL's SUM gives) from zero.
"""

from __future__ import annotations

from dataclasses import dataclass

# The facts table the rollups summarise.
FACTS = "sales"

# Additive columns of the sales facts, summed as they are.
MEASURES: tuple[str, ...] = (
    "ordered_item_quantity",
    "returned_item_quantity",
    "net_items_sold",
    "gross_sales",
    "discounts",
    "returns",
    "net_sales",
    "shipping_charges",
    "duties",
    "additional_fees",
    "taxes",
    "total_sales",
    "cost_of_goods_sold",
)


@dataclass(frozen=True)
class Filter:
    """An event filter some of the engine's sums carry (warehouse.query.fields): `sql` is
    how the engine writes its condition on a facts row `t`."""

    name: str
    sql: str
    count: str  # the presence column counting the filter's events


RETURN = Filter("return", "t.event_type = 'return'", "return_events")
COSTED = Filter("costed", "t.cost_is_recorded", "costed_events")
FILTERS = (RETURN, COSTED)

# The filtered sums kept: (measure, filter). These are the ones fields.py writes today
# (shipping, tax and total reversals; net sales and cost with a recorded cost).
FILTERED: tuple[tuple[str, Filter], ...] = (
    ("shipping_charges", RETURN),
    ("taxes", RETURN),
    ("total_sales", RETURN),
    ("net_sales", COSTED),
    ("cost_of_goods_sold", COSTED),
)

# Columns of the facts that may be null on an event: their sums need a count of their
# own to stay null exactly when SQL's would.
NULLABLE: tuple[str, ...] = ("cost_of_goods_sold",)

EVENTS = "events"  # count of the row's events
ORDERS = "orders"  # distinct orders with an `order` event in the row


def filtered_column(measure: str, flt: Filter) -> str:
    return f"{measure}__{flt.name}"


def presence_column(measure: str, flt: Filter | None) -> str:
    """The count column telling whether the sum of `measure` (over `flt`'s events) is null."""
    if measure in NULLABLE:
        return f"{measure}__count" if flt is None else f"{measure}__{flt.name}__count"
    return EVENTS if flt is None else flt.count


@dataclass(frozen=True)
class RollupSet:
    """One rollup table: its grain (`hour`: UTC hours; `day`: store-local days) and the
    fact columns it groups by beside store, currency and store-local date: order-level
    ones only, across which `orders` adds up (planner.py)."""

    table: str
    grain: str  # hour | day
    dims: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        """The columns a row is unique by. `happened_at` is the row's instant: the UTC
        hour's start for hours, a key; the day's first event for days, not one."""
        time = ("happened_at", "store_date") if self.grain == "hour" else ("store_date",)
        return ("store_id", "currency", *time, *self.dims)

    @property
    def instants(self) -> tuple[str, ...]:
        """Columns beside the keys that hold one instant of the row, any event's: a day
        row's `happened_at`; an hour row's start in the account's zone, as the facts'
        `happened_at_account` (exact where the planner reads it: see planner.py)."""
        return ("happened_at_account",) if self.grain == "hour" else ("happened_at",)

    @property
    def key_columns(self) -> tuple[str, ...]:
        """keys and instants: every column before the counts."""
        return (*self.keys, *self.instants)


# Smallest first: the planner takes the first set that answers a query exactly. Measured
# on the bench's data (docs/benchmark.md, "Rollups"): the day sets are a few thousand rows
# per store-year, and answer queries in their stores' own zone; the hour set answers
# queries in any whole-hour zone over every store. A product set does not earn its size:
# by store-local day it held 43% of the facts' bytes at 100k orders (937 products, a row
# per product sold on a day) and would still hold some 15% at 10M, over the 5% all
# rollups may take; product questions read the facts.
SETS: tuple[RollupSet, ...] = (
    RollupSet("sales_rollup_days", "day"),
    RollupSet("sales_rollup_days_channel", "day", ("sales_channel",)),
    RollupSet("sales_rollup_days_billing_country", "day", ("billing_country",)),
    RollupSet("sales_rollup_hours", "hour"),
)


def stored_measures() -> list[tuple[str, str, Filter | None]]:
    """(column, fact column, filter) of every summed column of a rollup row."""
    out: list[tuple[str, str, Filter | None]] = [(m, m, None) for m in MEASURES]
    out += [(filtered_column(m, f), m, f) for m, f in FILTERED]
    return out


def count_columns() -> list[tuple[str, str | None, Filter | None]]:
    """(column, counted fact column or None for events, filter) of every count column."""
    out: list[tuple[str, str | None, Filter | None]] = [(EVENTS, None, None)]
    out += [(f.count, None, f) for f in FILTERS]
    for m in NULLABLE:
        out.append((presence_column(m, None), m, None))
        out += [(presence_column(m, f), m, f) for mm, f in FILTERED if mm == m]
    return out
