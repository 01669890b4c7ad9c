"""Plan -> parameterised DuckDB SQL. User values only ever travel as bound parameters.

Tables are read by their plain names (what WarehouseReader.connect provides); the caller's
readable stores and the day's exchange-rate factors are small relations registered on the
cursor by the executor under the names it passes in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from warehouse.query.dates import Window
from warehouse.query.fields import (
    FIRST_ORDERS_ALIAS,
    FIRST_ORDERS_SQL,
    STORE_ID_SQL,
    split_sum_sql,
)
from warehouse.query.plan import (
    Plan,
    RBetween,
    RBool,
    RCompare,
    RCond,
    RIn,
    RMatch,
    RNot,
    RNull,
    Source,
)
from warehouse.query.sql import Sql, pushdown_safe

# A column of the readable stores relation (aliased s), or of the customers' first orders
# (warehouse.query.fields.FIRST_ORDERS_SQL), in generated SQL; user values are bound
# parameters, never in the text.
_STORE_COLUMN = re.compile(r"\bs\.")
_FIRST_ORDER_COLUMN = re.compile(rf"\b{FIRST_ORDERS_ALIAS}\.")


@dataclass(frozen=True)
class Relations:
    stores: str  # (store_id, name, currency, timezone)
    fx: str | None  # (currency, date, factor...) or None when no conversion is needed
    # Sums of converted money over the factor's halves (fields.split_sum_sql); off once a
    # run overflowed them.
    split: bool = True


def splits_sums(plan: Plan) -> bool:
    """Whether aggregate_sql writes some part of `plan` over the factor's halves (a sum of
    converted money): only then can the halves' overflow be the reason a statement fails."""
    return any(split_sum_sql(part.sql) != part.sql for part in plan.parts)


def bucket_sql(plan: Plan) -> Sql | None:
    """The time bucket of a row at the plan's granularity (see time_bucket_sql)."""
    if plan.granularity is None:
        return None
    return time_bucket_sql(plan.granularity, plan.local_sql, plan.source, plan.clock.week_start)


def time_bucket_sql(g: str, local: Sql, source: Source, week_start: int) -> Sql:
    """The `g` bucket of a row whose local time is `local`: its local first day (DATE),
    or for hours, minutes and seconds the UTC instant where the local one starts (so the
    two 01:00 hours of a DST fall-back stay apart), or the number of a cycle."""
    if g in ("hour", "minute", "second"):
        time_col = f"t.{source.time_column}"
        return Sql(f"({time_col} - (") + local + f" - date_trunc('{g}', " + local + ")))"
    if g == "hour_of_day":
        return "hour(" + local + ")"
    if g == "day_of_week":
        return "isodow(" + local + ")"
    if g == "week_of_year":
        return "weekofyear(" + local + ")"
    if g == "month_of_year":
        return "month(" + local + ")"
    if g == "week" and week_start != 0:
        # date_trunc weeks start on Monday; shift so they start on the chosen day.
        shift = (7 - week_start) % 7
        return (
            "CAST(date_trunc('week', " + local + f" + INTERVAL {shift} DAY)"
            f" - INTERVAL {shift} DAY AS DATE)"
        )
    return "CAST(date_trunc('" + g + "', " + local + ") AS DATE)"


def where_sql(cond: RCond) -> Sql:
    if isinstance(cond, RBool):
        return "(" + Sql.join(f" {cond.op} ", [where_sql(c) for c in cond.items]) + ")"
    if isinstance(cond, RNot):
        return "(NOT " + where_sql(cond.item) + ")"
    if isinstance(cond, RCompare):
        body = Sql(f"{pushdown_safe(cond.sql, cond.value)} {cond.op} ") + Sql.param(cond.value)
        # As in ShopifyQL, excluding a value keeps the rows where the field is null.
        return ("(" + body + f" OR {cond.sql} IS NULL)") if cond.op == "!=" else body
    if isinstance(cond, RIn):
        if not cond.values:
            return Sql("TRUE" if cond.negated else "FALSE")
        inner = Sql.join(", ", [Sql.param(v) for v in cond.values])
        column = pushdown_safe(cond.sql, *cond.values)
        if cond.negated:
            return Sql(f"({column} NOT IN (") + inner + f") OR {cond.sql} IS NULL)"
        return Sql(f"{column} IN (") + inner + ")"
    if isinstance(cond, RBetween):
        # Half-open for instants from dates; inclusive for plain values, as in SQL.
        from datetime import datetime

        if isinstance(cond.low, datetime):
            body = Sql(f"({cond.sql} >= ") + Sql.param(cond.low) + f" AND {cond.sql} < "
            body = body + Sql.param(cond.high) + ")"
        else:
            column = pushdown_safe(cond.sql, cond.low, cond.high)
            body = Sql(f"({column} BETWEEN ") + Sql.param(cond.low) + " AND "
            body = body + Sql.param(cond.high) + ")"
        return ("(NOT " + body + ")") if cond.negated else body
    if isinstance(cond, RMatch):
        # Case-insensitive, and with functions rather than LIKE so % and _ in the value
        # are plain characters.
        func = {"starts": "starts_with", "ends": "suffix", "contains": "contains"}[cond.kind]
        body = Sql(f"{func}(lower({cond.sql}), lower(") + Sql.param(cond.value) + "))"
        return ("(NOT coalesce(" + body + ", FALSE))") if cond.negated else body
    assert isinstance(cond, RNull)
    return Sql(f"{cond.sql} IS {'NOT ' if cond.negated else ''}NULL")


def aggregate_sql(
    plan: Plan,
    window: Window,
    rel: Relations,
    *,
    group_dims: list[int],
    with_time: bool,
    exclude: tuple[int, tuple[object, ...]] | None = None,
    include: tuple[int, tuple[object, ...]] | None = None,
    keys: tuple[list[int], list[list[str | None]], bool] | None = None,
    parts: list[int] | None = None,
    limit: int | None = None,
    grouping_sets: list[list[int]] | None = None,
    fold: tuple[int, list[int], list[list[str | None]]] | None = None,
) -> Sql:
    """SELECT the grouped dims (d0..), the bucket (b), the aggregates (p0..) and the number
    of rows without an exchange rate (missing_fx) over one window.

    exclude=(dim, values) leaves out rows whose dim is among values: the "Other" bucket of
    TOP n; include=(dim, values) keeps only those rows (the ranked TOP values, so that
    only their groups leave DuckDB). keys=(dims, keys, keep) does the same for several
    dimensions at once (TOP ranked within the dimensions before it): a row is kept when
    its key over `dims` (see key_sql) is among `keys`, or when it is not and keep is
    false. parts picks a subset of the aggregates.

    fold=(dim, key_dims, keys) reads TOP's chosen groups and its Other rows in one scan: a
    row whose key over `key_dims` is among `keys` keeps its value of `dim`, the others are
    grouped together with a null there, and `quarry_other` (true for those), next to last,
    tells them apart."""
    t = plan.source
    select: list[Sql | str] = []
    groups: list[Sql | str] = []
    fold_join = Sql("")
    for k in group_dims:
        dim_sql = plan.dims[k].sql or ""
        if fold is not None and k == fold[0]:
            dim_sql = f"CASE WHEN quarry_top.quarry_k IS NULL THEN NULL ELSE {dim_sql} END"
        select.append(f"{dim_sql} AS d{k}")
        groups.append(dim_sql)
    if fold is not None:
        _, key_dims, wanted = fold
        # Compared a dimension at a time, each as key_sql casts it: a list built per row
        # to compare whole keys cost a third of the statement.
        texts = [f"CAST({plan.dims[k].sql} AS VARCHAR)" for k in key_dims]
        picked = ", ".join(f"k[{i + 1}] AS k{i}" for i in range(len(texts)))
        same = " AND ".join(
            f"quarry_top.k{i} IS NOT DISTINCT FROM {text}" for i, text in enumerate(texts)
        )
        fold_join = (
            Sql(f" LEFT JOIN (SELECT DISTINCT {picked}, TRUE AS quarry_k FROM (SELECT unnest(")
            + Sql.param(wanted)
            + f"::VARCHAR[][]) AS k)) quarry_top ON {same}"
        )
    bucket = bucket_sql(plan) if with_time else None
    if bucket is not None:
        select.append(bucket + " AS b")
        groups.append(bucket)
    indexes = range(len(plan.parts)) if parts is None else parts
    for k in indexes:
        part = plan.parts[k].sql
        select.append(f"{split_sum_sql(part) if rel.fx and rel.split else part} AS p{k}")
    if grouping_sets is not None and groups:
        # Which grouping set a row belongs to, as GROUPING's bit mask over the keys (a
        # bit set where the key is rolled up), next to last: see grouping_mask. GROUPING
        # takes the grouped expressions themselves (the zone in a bucket is a literal).
        select.append("grouping(" + Sql.join(", ", groups) + ") AS quarry_g")
    if fold is not None:
        select.append("quarry_top.quarry_k IS NULL AS quarry_other")
    if not rel.fx:
        select.append("0 AS missing_fx")
    elif t.events is not None:
        # Events, not rows: a key whose rows net to no events needs no rate.
        missing = f"sum(t.{t.events}) FILTER (WHERE f.factor IS NULL)"
        select.append(f"coalesce({missing}, 0) AS missing_fx")
    else:
        select.append("count(*) FILTER (WHERE f.factor IS NULL) AS missing_fx")
    columns = Sql.join(", ", select)
    fx_join = (
        f" LEFT JOIN {rel.fx} f ON f.currency = t.currency AND f.date = {plan.fx_date_sql}"
        if rel.fx
        else ""
    )
    ids = Sql.join(", ", [Sql.param(s) for s in plan.store_ids]) if plan.store_ids else None
    conditions: list[Sql | str] = [
        Sql(f"t.{t.time_column} >= ") + Sql.param(window.gte),
        Sql(f"t.{t.time_column} < ") + Sql.param(window.lt),
    ]
    kept = kept_stores(plan.where)
    # A WHERE that keeps to some of the readable stores says the scope's IN already (the
    # repeated IN cost a one-store query on the hour rollup 1 of its 7 ms).
    if not (kept and kept <= set(plan.store_ids)):
        conditions.insert(0, ("t.store_id IN (" + ids + ")") if ids is not None else "FALSE")
    if plan.where is not None:
        conditions.append(where_sql(plan.where))
    if exclude is not None:
        dim, values = exclude
        expr = plan.dims[dim].sql
        inner = Sql.join(", ", [Sql.param(v) for v in values if v is not None])
        keep_nulls = None not in values
        clause = Sql(f"({expr} NOT IN (") + inner + ")" if values and inner.text else Sql("(TRUE")
        clause = clause + (f" OR {expr} IS NULL)" if keep_nulls else f" AND {expr} IS NOT NULL)")
        conditions.append(clause)
    if include is not None:
        dim, values = include
        expr = plan.dims[dim].sql
        inner = Sql.join(", ", [Sql.param(v) for v in values if v is not None])
        # IN never matches null, so a null among the values is asked for separately.
        clause = Sql(f"({expr} IN (") + inner + ")" if inner.text else Sql("(FALSE")
        clause = clause + (f" OR {expr} IS NULL)" if None in values else ")")
        conditions.append(clause)
    if keys is not None:
        key_dims, wanted, keep = keys
        key = key_sql([plan.dims[k].sql or "" for k in key_dims])
        # One list parameter whatever the number of keys: DuckDB makes the IN a hash
        # semi-join, where a chain of ORs would be compared row by row.
        inside = Sql(f"{key} {'' if keep else 'NOT '}IN (SELECT unnest(") + Sql.param(wanted)
        conditions.append(inside + "::VARCHAR[][]))")
    where = Sql.join(" AND ", conditions)
    sql = Sql("SELECT ") + columns + f" FROM {t.table} t"
    # The readable stores are joined only for what reads them (the store's name or zone):
    # t.store_id IN (...) already keeps to them, and the join cost a fifth of a scan.
    read = " ".join((columns.text, fx_join, fold_join.text, where.text))
    if _STORE_COLUMN.search(read):
        sql = sql + f" JOIN {rel.stores} s ON s.store_id = t.store_id"
    if _FIRST_ORDER_COLUMN.search(read):
        before, after = FIRST_ORDERS_SQL.split("{stores}")
        sql = (
            sql
            + f" LEFT JOIN ({before}"
            + (ids if ids is not None else Sql("NULL"))
            + f"{after}) {FIRST_ORDERS_ALIAS} ON {FIRST_ORDERS_ALIAS}.store_id = t.store_id "
            f"AND {FIRST_ORDERS_ALIAS}.customer_id = t.customer_id"
        )
    sql = sql + fx_join + fold_join + " WHERE " + where
    # Partial-sum rows make a group only where their events add up to some (the facts
    # have a row there); the grand total is a row either way, as over the facts.
    having = f" HAVING sum(t.{t.events}) > 0" if t.events is not None else ""
    if groups and grouping_sets is not None:
        # Detail rows and their totals in one pass over the events (WITH TOTALS and
        # GROUP_TOTALS), each set a list of positions among the grouped keys.
        sets = ", ".join("(" + ", ".join(str(k + 1) for k in g) + ")" for g in grouping_sets)
        sql = sql + f" GROUP BY GROUPING SETS ({sets})"
        if having:
            total = grouping_mask([], len(groups))
            mask = "grouping(" + Sql.join(", ", groups) + ")"
            sql = sql + having + " OR " + mask + f" = {total}"
    elif groups:
        # By position: an expression with a bound zone would not match its SELECT twin.
        sql = sql + " GROUP BY " + ", ".join(str(k + 1) for k in range(len(groups)))
        if fold is not None:
            sql = sql + ", quarry_top.quarry_k IS NULL"
        sql = sql + having
    if limit is not None:
        sql = sql + f" LIMIT {int(limit)}"
    return sql


def kept_stores(cond: RCond | None) -> set[str] | None:
    """The store ids a WHERE keeps to (store = 'x', store IN (...), alone or ANDed with
    other conditions; the checker makes both an RIn on fields.STORE_ID_SQL), or None."""
    if isinstance(cond, RIn) and cond.sql == STORE_ID_SQL and not cond.negated:
        return {str(v) for v in cond.values}
    if isinstance(cond, RBool) and cond.op.upper() == "AND":
        kept = [n for n in (kept_stores(c) for c in cond.items) if n is not None]
        return set.intersection(*kept) if kept else None
    return None


def key_sql(expressions: list[str]) -> str:
    """A row's values of `expressions` as one comparable key: their text, in a list
    (DuckDB compares lists element by element and holds two nulls equal, so a null
    dimension value is a key like any other). The executor reads the keys of the groups it
    ranks from the same expressions, so they match the rows' exactly."""
    return "[" + ", ".join(f"CAST({e} AS VARCHAR)" for e in expressions) + "]"


def grouping_mask(kept: list[int], width: int) -> int:
    """GROUPING(k0, ..., k{width-1}) of the rows of the grouping set that keeps the keys
    at positions `kept`: the first key is the highest bit, a rolled-up key a set bit."""
    return sum(1 << (width - 1 - k) for k in range(width) if k not in kept)


def candidates_sql(
    base: Sql,
    part: int,
    n: int,
    descending: bool,
    margin: Decimal | None = None,
    within: Sequence[str] = (),
) -> Sql:
    """The groups of an aggregate query (base, from aggregate_sql) that may be among the
    first n when sorted by aggregate p<part> (nulls last), each preceded by the number of
    groups (total) and of rows without an exchange rate (missing) in the whole result.
    within: columns of base (d0 ...) to rank within, the first n of each of their groups.

    Python makes the final, exact order (rounded values, ties broken by the dimensions'
    text), so the cut keeps every group within `margin` of the n-th value as well: a group
    farther away than one rounding unit rounds strictly below (or above) the n-th, and so
    it can never be among the first n. With a null n-th value every null group is kept."""
    p = f"p{part}"
    direction = "DESC" if descending else "ASC"
    if margin is None:
        near = f"c.{p} = cut.v"
    elif descending:
        near = f"c.{p} >= cut.v - {margin}"
    else:
        near = f"c.{p} <= cut.v + {margin}"
    partition = f"PARTITION BY {', '.join(within)} " if within else ""
    cut_keys = "".join(f"{c}, " for c in within)
    same_group = " AND ".join(f"cut.{c} IS NOT DISTINCT FROM c.{c}" for c in within) or "TRUE"
    return (
        "WITH g AS ("
        + base
        + f"), c AS (SELECT g.*, row_number() OVER ({partition}ORDER BY {p} {direction} "
        "NULLS LAST) AS quarry_r, count(*) OVER () AS quarry_total, "
        "sum(missing_fx) OVER () AS quarry_missing FROM g), "
        f"cut AS (SELECT {cut_keys}{p} AS v FROM c WHERE quarry_r = {int(n)}) "
        "SELECT c.quarry_total, c.quarry_missing, c.* EXCLUDE (quarry_r, quarry_total, "
        f"quarry_missing) FROM c LEFT JOIN cut ON {same_group} "
        f"WHERE c.quarry_r <= {int(n)} OR (cut.v IS NULL AND c.{p} IS NULL) OR {near}"
    )
