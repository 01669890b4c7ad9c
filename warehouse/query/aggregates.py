"""ShopifyQL's aggregate functions, one row each: everything the engine knows of one.

A new function is a row here: the parser's list of names, the checker's rules (the fields
it takes, its title, its type) and the SQL (warehouse.query.fields.aggregate) all read this
table. warehouse.catalog.Aggregation spells the names again as a Literal for mypy;
tests/warehouse/query/test_aggregates.py holds the two to the same list.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from warehouse.catalog import Field, FieldType

_ZERO = Decimal(0)
# The field types an average or a median means something for, and those that also have a
# least and a greatest value.
_QUANTITIES: tuple[FieldType, ...] = ("number", "money")
_ORDERED: tuple[FieldType, ...] = ("number", "money", "date")
# Types an aggregate of a field keeps; an aggregate of any other field is a number.
_KEPT_TYPES = ("money", "number", "date", "percent")


@dataclass(frozen=True)
class Aggregate:
    """One aggregate function.

    `sql` holds its SQL aggregates, written with `{value}` (a row's value, money converted
    at the row's exchange rate), `{column}` (the stored column as it is: a distinct count
    counts stored values) and `{exact}` (the value, money as a wide decimal). One text is
    the aggregate; two are a numerator and a denominator, divided in Python with decimals
    so the quotient is exact."""

    name: str
    title: str  # a column's default title: "<title> of <field title>"
    accepts: tuple[FieldType, ...] | None  # the field types it takes; None: every type
    result: FieldType | None  # its type; None: the field's own (see result_type)
    # Does it add up along time? A running total (WITH CUMULATIVE_VALUES) means something
    # only for these ("additive metrics" in ShopifyQL).
    additive: bool
    sql: tuple[str, ...]
    empty: Decimal | None  # its value over no rows: TIMESERIES fills a missing bucket with it

    def result_type(self, field: Field) -> str:
        if self.result is not None:
            return self.result
        return field.type if field.type in _KEPT_TYPES else "number"

    def needs(self) -> str:
        """What a field must be, as an error says it: 'a number, money or date field'."""
        assert self.accepts is not None
        *most, last = self.accepts
        return f"a {', '.join(most)} or {last} field" if most else f"a {last} field"

    def sql_texts(self, value: str, column: str, money: bool) -> tuple[str, ...]:
        # A wide decimal keeps the midpoint of two cents exact (1.875, not 1.87).
        exact = f"CAST({value} AS DECIMAL(38, 14))" if money else value
        return tuple(t.format(value=value, column=column, exact=exact) for t in self.sql)


TABLE = (
    Aggregate(
        name="sum",
        title="Sum",
        accepts=_QUANTITIES,
        result=None,
        additive=True,
        sql=("SUM({value})",),
        empty=_ZERO,
    ),
    # Exact as sum / count, finished in Python with decimals.
    Aggregate(
        name="avg",
        title="Average",
        accepts=_QUANTITIES,
        result=None,
        additive=False,
        sql=("SUM({value})", "COUNT({value})"),
        empty=_ZERO,
    ),
    Aggregate(
        name="min",
        title="Minimum",
        accepts=_ORDERED,
        result=None,
        additive=False,
        sql=("MIN({value})",),
        empty=None,
    ),
    Aggregate(
        name="max",
        title="Maximum",
        accepts=_ORDERED,
        result=None,
        additive=False,
        sql=("MAX({value})",),
        empty=None,
    ),
    Aggregate(
        name="count",
        title="Count",
        accepts=None,
        result="number",
        additive=True,
        sql=("COUNT({value})",),
        empty=_ZERO,
    ),
    Aggregate(
        name="count_distinct",
        title="Distinct count",
        accepts=None,
        result="number",
        additive=False,
        sql=("COUNT(DISTINCT {column})",),
        empty=_ZERO,
    ),
    Aggregate(
        name="median",
        title="Median",
        accepts=_QUANTITIES,
        result=None,
        additive=False,
        sql=("MEDIAN({exact})",),
        empty=None,
    ),
)
BY_NAME = {a.name: a for a in TABLE}
NAMES = tuple(BY_NAME)
