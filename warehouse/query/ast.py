"""The syntax tree the parser builds. Every node keeps the position of its first token so
the checker can point at it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal

from warehouse.query.diagnostics import Pos

# ---- expressions (SHOW, HAVING, ORDER BY operands) ----


@dataclass(frozen=True)
class Name:
    name: str
    pos: Pos


@dataclass(frozen=True)
class NumberLit:
    value: Decimal
    pos: Pos


@dataclass(frozen=True)
class StringLit:
    value: str
    pos: Pos


@dataclass(frozen=True)
class DateLit:
    value: date | datetime
    pos: Pos


@dataclass(frozen=True)
class BoolLit:
    value: bool
    pos: Pos


@dataclass(frozen=True)
class Call:
    """An explicit aggregation: sum(x), count_distinct(x), median(x) ..."""

    func: str
    arg: Name
    pos: Pos


@dataclass(frozen=True)
class BinOp:
    op: str
    left: Expr
    right: Expr
    pos: Pos


@dataclass(frozen=True)
class Neg:
    operand: Expr
    pos: Pos


Expr = Name | NumberLit | StringLit | DateLit | BoolLit | Call | BinOp | Neg

# ---- conditions (WHERE, HAVING) ----


@dataclass(frozen=True)
class Compare:
    left: Expr
    op: str
    right: Expr
    pos: Pos


@dataclass(frozen=True)
class InList:
    left: Expr
    values: tuple[Expr, ...]
    negated: bool
    pos: Pos


@dataclass(frozen=True)
class Between:
    left: Expr
    low: Expr
    high: Expr
    negated: bool
    pos: Pos


@dataclass(frozen=True)
class TextMatch:
    """STARTS WITH, ENDS WITH, [NOT] CONTAINS."""

    left: Expr
    kind: str  # starts | ends | contains | matches
    value: Expr
    negated: bool
    pos: Pos


@dataclass(frozen=True)
class IsNull:
    left: Expr
    negated: bool
    pos: Pos


@dataclass(frozen=True)
class And:
    items: tuple[Cond, ...]
    pos: Pos


@dataclass(frozen=True)
class Or:
    items: tuple[Cond, ...]
    pos: Pos


@dataclass(frozen=True)
class Not:
    item: Cond
    pos: Pos


Cond = Compare | InList | Between | TextMatch | IsNull | And | Or | Not

# ---- clauses ----


@dataclass(frozen=True)
class ShowItem:
    expr: Expr
    alias: str | None
    pos: Pos
    text: str  # the expression as written, for naming unaliased arithmetic


@dataclass(frozen=True)
class GroupItem:
    name: Name
    top: int | None = None
    only: bool = False
    overall: bool = False  # TOP n dim OVERALL: ranked over all groups, not per group


@dataclass(frozen=True)
class DatePoint:
    """A date operand of SINCE, UNTIL, DURING or COMPARE TO.

    kind: date | datetime | offset | now | today | yesterday | named | func
    For `offset` and `func`, amount/unit hold the offset (-3m is 3, "m"); `name` holds the
    named range (last_month, bfcm2024) or the function (startofmonth)."""

    kind: str
    pos: Pos
    text: str
    value: date | datetime | None = None
    amount: int = 0
    unit: str = "d"
    name: str = ""


@dataclass(frozen=True)
class CompareItem:
    """previous_period | previous_year | previous_year_match_day_of_week, or a range."""

    pos: Pos
    text: str
    keyword: str | None = None
    start: DatePoint | None = None
    end: DatePoint | None = None


@dataclass(frozen=True)
class OrderItem:
    name: Name
    descending: bool


@dataclass(frozen=True)
class Modifier:
    name: str  # upper-case: TOTALS, PERCENT_CHANGE, CURRENCY, TIMEZONE, WEEK_START ...
    pos: Pos
    value: str | None = None
    value_pos: Pos | None = None


@dataclass
class Query:
    dataset: Name | None = None
    show: list[ShowItem] = field(default_factory=list)
    where: Cond | None = None
    having: Cond | None = None
    group_by: list[GroupItem] = field(default_factory=list)
    timeseries: Name | None = None
    since: DatePoint | None = None
    until: DatePoint | None = None
    during: DatePoint | None = None
    compare: list[CompareItem] = field(default_factory=list)
    order_by: list[OrderItem] = field(default_factory=list)
    limit: int | None = None
    offset: int = 0
    modifiers: list[Modifier] = field(default_factory=list)
    # FROM a, b (multi-fact) and VISUALIZE's metrics, which stand in for a missing SHOW.
    extra_datasets: list[Name] = field(default_factory=list)
    visualize: list[ShowItem] = field(default_factory=list)
    # VISUALIZE ... TYPE t: the chart asked for (None: ShopifyQL's default for the shape);
    # a table ignores it, the console draws it (api/console/charts.py).
    chart_type: str | None = None
    # Where each clause keyword stood, for diagnostics about whole clauses.
    clauses: dict[str, Pos] = field(default_factory=dict)
