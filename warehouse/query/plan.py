"""The checked query: every name resolved against the catalog, every window resolved, ready
for the compiler (SQL) and the executor (post-processing). Built only by checker.check."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from warehouse.catalog import Dataset
from warehouse.query.dates import Clock, Window
from warehouse.query.diagnostics import Pos
from warehouse.query.sql import Sql


@dataclass(frozen=True)
class StoreInfo:
    """A store the caller may read: the executor needs its name, currency and zone."""

    name: str
    currency: str
    timezone: str


@dataclass(frozen=True)
class Source:
    """How a dataset's rows are read: table, event time, precomputed local times."""

    table: str
    time_column: str  # UTC event time, the window filters on it
    account_local: str | None = None  # local time in the account zone, computed at sync
    store_local: str | None = None  # local time in the store's zone, computed at sync
    # Rows that are partial sums (rollup rows, some of them signed changes): the column
    # counting each row's events. A group exists where it sums above 0.
    events: str | None = None


# ---- aggregates and metric expressions ----


@dataclass(frozen=True)
class Part:
    """One SQL aggregate. `empty` is its value over no rows: 0 for sums and counts (so
    TIMESERIES fills them with 0), None for the others."""

    sql: str
    empty: Decimal | None


@dataclass(frozen=True)
class PartRef:
    index: int


@dataclass(frozen=True)
class Const:
    value: Decimal


@dataclass(frozen=True)
class Arith:
    op: str
    left: MetricExpr
    right: MetricExpr


MetricExpr = PartRef | Const | Arith


# ---- WHERE, resolved ----


@dataclass(frozen=True)
class RCompare:
    sql: str
    op: str
    value: Any


@dataclass(frozen=True)
class RIn:
    sql: str
    values: tuple[Any, ...]
    negated: bool


@dataclass(frozen=True)
class RBetween:
    sql: str
    low: Any
    high: Any
    negated: bool


@dataclass(frozen=True)
class RMatch:
    sql: str
    kind: str  # starts | ends | contains
    value: str
    negated: bool


@dataclass(frozen=True)
class RNull:
    sql: str
    negated: bool


@dataclass(frozen=True)
class RBool:
    op: str  # AND | OR
    items: tuple[RCond, ...]


@dataclass(frozen=True)
class RNot:
    item: RCond


RCond = RCompare | RIn | RBetween | RMatch | RNull | RBool | RNot


# ---- HAVING, resolved: evaluated on result rows ----


@dataclass(frozen=True)
class HValue:
    """An operand: a result column by name, or a constant."""

    column: str | None = None
    const: Any = None


@dataclass(frozen=True)
class HArith:
    op: str
    left: HOperand
    right: HOperand


HOperand = HValue | HArith


@dataclass(frozen=True)
class HCond:
    op: str  # = != < <= > >= in between starts ends contains null and or not
    operands: tuple[Any, ...]
    negated: bool = False


# ---- output ----


@dataclass(frozen=True)
class Column:
    name: str
    title: str
    type: str
    role: str  # dimension | metric
    kind: str  # time | dim | metric
    sql: str | None = None  # dims: the grouped SQL expression
    expr: MetricExpr | None = None  # metrics
    money: bool = False
    # Generated columns: the metric they derive from and the comparison they belong to.
    base: str | None = None
    comparison: str | None = None
    # A time granularity grouped as a dimension (a query's second time dimension).
    granularity: str | None = None
    # Metrics: a sum or count, whose running total (CUMULATIVE_VALUES) means something.
    additive: bool = False
    # GROUP_TOTALS columns: the index of the last grouped dimension their groups keep.
    level: int | None = None

    def public(self) -> dict[str, str]:
        # A ratio (a fraction, rounded to 4 places) is a number to clients.
        type_ = "number" if self.type == "ratio" else self.type
        return {"name": self.name, "title": self.title, "type": type_, "role": self.role}


@dataclass(frozen=True)
class Comparison:
    name: str  # suffix of comparison_<metric>__<name>
    window: Window


@dataclass(frozen=True)
class Top:
    dim: int  # index into Plan.dims
    n: int
    only: bool
    overall: bool = False

    @property
    def within(self) -> list[int]:
        """The dimensions TOP ranks within (Plan.dims indexes): those grouped before it,
        unless OVERALL ranks over every group at once."""
        return [] if self.overall else list(range(self.dim))


@dataclass
class Plan:
    dataset: Dataset
    source: Source
    columns: list[Column]  # requested columns in output order
    dims: list[Column]  # grouped non-time dimensions, GROUP BY order
    time: Column | None  # the time granularity column, if any
    granularity: str | None
    fill: bool  # TIMESERIES: every bucket of the window
    parts: list[Part]
    where: RCond | None
    having: HCond | None
    order: list[tuple[str, bool]]  # (column name, descending)
    limit: int
    limit_explicit: bool
    offset: int
    window: Window
    comparisons: list[Comparison]
    totals: bool
    percent_change: bool
    currency: str
    zone: ZoneInfo
    zone_name: str
    clock: Clock
    store_ids: list[str]
    stores: dict[str, StoreInfo]
    top: Top | None = None
    fx: bool = False  # some store's currency differs from `currency`
    local_sql: Sql = field(
        default_factory=lambda: Sql("")
    )  # the event's local wall-clock time in the query zone
    fx_date_sql: str = ""  # the event's date in its store's zone (for the daily rate)
    metric_columns: list[Column] = field(default_factory=list)
    group_pos: Pos | None = None  # where GROUP BY / TIMESERIES stand, for size diagnostics

    @property
    def group_total_levels(self) -> list[int]:
        """The dimension prefixes (by last index) WITH GROUP_TOTALS adds totals for."""
        return sorted({c.level for c in self.columns if c.level is not None})
