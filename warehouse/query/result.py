"""The Query result object of the contract, and how result values are written."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any
from zoneinfo import ZoneInfo

from quarry.currencies import round_money
from warehouse.query.dates import iso_utc

# Non-money numbers that are not whole (averages, ratios, percent changes) keep 2 places.
_PLACES = Decimal("0.01")
_RATIO_PLACES = Decimal("0.0001")


@dataclass(frozen=True)
class Derivation:
    """How a generated column derives from the query (ShopifyQL's dynamic columns)."""

    kind: str  # comparison | percent | group_total | cumulative
    base: str  # the metric column it derives from
    comparison: str | None  # comparison columns: the compared period's name
    grouped_by: tuple[str, ...]  # the dimension columns its values are grouped by


@dataclass
class QueryResult:
    columns: list[dict[str, str]]
    rows: list[dict[str, Any]]
    currency: str
    time_zone: str
    window: dict[str, str]
    totals: dict[str, Any] | None = None
    truncated: bool = False
    # Not in the contract's body; the shopifyqlQuery adapter describes columns and rows
    # with them: each generated column's derivation, and the rows that are TOP's "Other"
    # (row index -> the dimension folded into it).
    derived: dict[str, Derivation] = field(default_factory=dict)
    remainders: dict[int, str] = field(default_factory=dict)
    # Quarry's own: which source answered, "facts" or "rollup" (the X-Quarry-Source
    # header), and the rollup table when one did.
    source: str = "facts"
    source_table: str | None = None

    def table(self) -> tuple[list[str], list[list[Any]]]:
        """The rows as a plain table: the column titles, then each row's values in column
        order (what a CSV answer writes; totals are not rows)."""
        names = [c["name"] for c in self.columns]
        return [c["title"] for c in self.columns], [[r.get(n) for n in names] for r in self.rows]

    def public(self) -> dict[str, Any]:
        """The response body: `totals` only when asked, `truncated` only when true."""
        body: dict[str, Any] = {"columns": self.columns, "rows": self.rows}
        if self.totals is not None:
            body["totals"] = self.totals
        body.update(currency=self.currency, time_zone=self.time_zone, window=self.window)
        if self.truncated:
            body["truncated"] = True
        return body


def metric_value(value: Decimal | date | None, type_: str, currency: str) -> Any:
    """Money rounded half-up to the currency's minor unit; whole numbers as int; other
    numbers half-up to 2 places; a date (min or max of a date field) as a dimension's."""
    if value is None:
        return None
    if isinstance(value, date):
        return dimension_value(value)
    if type_ == "money":
        return round_money(value, currency)
    if value == value.to_integral_value():
        return int(value)
    if type_ == "ratio":  # a fraction such as returning_customer_rate: 0.2722
        return value.quantize(_RATIO_PLACES, rounding=ROUND_HALF_UP)
    return value.quantize(_PLACES, rounding=ROUND_HALF_UP)


def bucket_value(granularity: str, key: Any, zone: ZoneInfo) -> Any:
    """A time bucket as written in rows: YYYY-MM-DD for day to year, an ISO timestamp with
    the zone's offset for hours, minutes and seconds, or the number of the hour, ISO weekday
    (1 = Monday ... 7 = Sunday, as Shopify numbers weekdays), ISO week or month."""
    if key is None:
        return None
    if granularity in ("hour", "minute", "second"):
        return key.astimezone(zone).isoformat()
    if isinstance(key, datetime):
        return key.date().isoformat()
    if isinstance(key, date):
        return key.isoformat()
    return int(key)


def dimension_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return iso_utc(value) if value.tzinfo else value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value
