"""WHERE: conditions on dimensions, their values checked against the field's type (and
bound as parameters later), store names against the readable stores, dates in the query's
zone."""

from __future__ import annotations

import zoneinfo
from datetime import UTC, date, datetime, timedelta
from typing import Any

from quarry.zones import zone_or_utc
from warehouse.catalog import Field
from warehouse.query import ast
from warehouse.query.checker.lookup import find_field
from warehouse.query.checker.state import Fail, State
from warehouse.query.diagnostics import did_you_mean
from warehouse.query.fields import (
    NOT_SYNCED,
    STORE_ID_SQL,
    dimension_sql,
    field_names,
    lookup,
    value_kind,
)
from warehouse.query.plan import RBetween, RBool, RCompare, RCond, RIn, RMatch, RNot, RNull


def check_where(st: State, cond: ast.Cond) -> RCond | None:
    try:
        return _condition(st, cond)
    except Fail:
        return None


def _condition(st: State, cond: ast.Cond) -> RCond:
    if isinstance(cond, (ast.And, ast.Or)):
        items, failed = [], False
        for c in cond.items:
            try:
                items.append(_condition(st, c))
            except Fail:
                failed = True  # keep checking the siblings
        if failed:
            raise Fail()
        return RBool("AND" if isinstance(cond, ast.And) else "OR", tuple(items))
    if isinstance(cond, ast.Not):
        return RNot(_condition(st, cond.item))
    left = cond.left
    if not isinstance(left, ast.Name):
        raise st.error(cond.pos, "WHERE compares a dimension with values; use HAVING for metrics.")
    if left.name == "store" and isinstance(cond, (ast.Compare, ast.InList)):
        return _store_condition(st, cond)
    if isinstance(cond, ast.TextMatch) and cond.kind == "matches":
        raise st.error(
            cond.pos,
            "MATCHES filters by related records (segments, products bought), which "
            "Quarry does not keep: filter the dimensions with =, IN or CONTAINS instead.",
        )
    field = _dimension(st, left)
    sql = dimension_sql(field)
    if field.type == "date":
        return _date_condition(st, cond, field, sql)
    if isinstance(cond, ast.Compare):
        return RCompare(sql, cond.op, _literal(st, cond.right, field))
    if isinstance(cond, ast.InList):
        return RIn(sql, tuple(_literal(st, v, field) for v in cond.values), cond.negated)
    if isinstance(cond, ast.Between):
        low, high = _literal(st, cond.low, field), _literal(st, cond.high, field)
        return RBetween(sql, low, high, cond.negated)
    if isinstance(cond, ast.TextMatch):
        if field.type != "string":
            raise st.error(
                cond.pos,
                f"{cond.kind.upper()} needs a text field; {field.name} is {field.type}.",
            )
        return RMatch(sql, cond.kind, _literal(st, cond.value, field), cond.negated)
    assert isinstance(cond, ast.IsNull)
    return RNull(sql, cond.negated)


def _dimension(st: State, name: ast.Name) -> Field:
    """The dimension a condition filters; only dimensions are filtered before grouping."""
    field = lookup(st.ds, name.name)
    if field is None and name.name in NOT_SYNCED.get(st.ds.name, {}):
        find_field(st, name, st.ds)  # says why
        raise Fail()
    if field is None:
        pool = [f.name for f in field_names(st.ds) if f.role == "dimension"]
        raise st.error(
            name.pos,
            f"Unknown field '{name.name}' in {st.ds.name}.{did_you_mean(name.name, pool)}",
        )
    if field.role != "dimension":
        raise st.error(
            name.pos,
            f"WHERE filters dimensions; {field.name} is a metric, so filter it with HAVING.",
        )
    return field


def _literal(st: State, expr: ast.Expr, field: Field) -> Any:
    """A WHERE value, checked against the field's type (bound as a parameter later)."""
    value: Any
    if isinstance(expr, ast.StringLit):
        value, kind = expr.value, "string"
    elif isinstance(expr, ast.NumberLit):
        value, kind = expr.value, "number"
    elif isinstance(expr, ast.Neg) and isinstance(expr.operand, ast.NumberLit):
        value, kind = -expr.operand.value, "number"
    elif isinstance(expr, ast.BoolLit):
        value, kind = expr.value, "boolean"
    elif isinstance(expr, ast.DateLit):
        value, kind = expr.value, "date"
    else:
        raise st.error(expr.pos, "Expected a value here: 'text', a number, TRUE/FALSE or a date.")
    wanted = value_kind(field.type)
    if kind != wanted:
        raise st.error(expr.pos, f"{field.name} is {field.type}; compare it with a {wanted} value.")
    return value


def _store_condition(st: State, cond: ast.Compare | ast.InList) -> RCond:
    """store = 'name' / store IN ('name', ...): names among the readable stores only.
    A name the key cannot read gets the same answer as one that does not exist."""
    if isinstance(cond, ast.Compare):
        if cond.op not in ("=", "!="):
            raise st.error(cond.pos, "Compare store with = , != or IN (store names).")
        values: tuple[ast.Expr, ...] = (cond.right,)
        negated = cond.op == "!="
    else:
        values, negated = cond.values, cond.negated
    readable = st.ctx.stores
    by_name = {info.name: sid for sid, info in readable.items()}
    by_folded: dict[str, list[str]] = {}
    for sid, info in readable.items():
        by_folded.setdefault(info.name.casefold(), []).append(sid)
    ids: list[str] = []
    failed = False
    for v in values:
        if not isinstance(v, ast.StringLit):
            st.error(v.pos, "Store names are text in single quotes, e.g. 'Main Street'.")
            failed = True
            continue
        if v.value in by_name:
            ids.append(by_name[v.value])
        elif len(by_folded.get(v.value.casefold(), [])) == 1:
            ids.append(by_folded[v.value.casefold()][0])
        else:
            hint = did_you_mean(v.value, [i.name for i in readable.values()])
            st.error(v.pos, f"Unknown store '{v.value}'.{hint}")
            failed = True
    if failed:
        raise Fail()
    return RIn(STORE_ID_SQL, tuple(ids), negated)


def _date_condition(st: State, cond: ast.Cond, field: Field, sql: str) -> RCond:
    """Dates compare in the query's zone: `created_at = 2024-03-10` is that local day."""

    def bounds(expr: ast.Expr) -> tuple[datetime, datetime]:
        value = _literal(st, expr, field)
        if isinstance(value, datetime):
            at = value if value.tzinfo else value.replace(tzinfo=_zone_for_dates(st))
            return at, at
        assert isinstance(value, date)
        zone = _zone_for_dates(st)
        start = datetime.combine(value, datetime.min.time(), zone).astimezone(UTC)
        nxt = datetime.combine(value + timedelta(days=1), datetime.min.time(), zone)
        return start, nxt.astimezone(UTC)

    if isinstance(cond, ast.Compare):
        start, end = bounds(cond.right)
        instant = start == end
        if cond.op == "=":
            return RCompare(sql, "=", start) if instant else RBetween(sql, start, end, False)
        if cond.op == "!=":
            return RCompare(sql, "!=", start) if instant else RBetween(sql, start, end, True)
        bound = {"<": start, ">=": start, "<=": end, ">": end}[cond.op]
        op = cond.op if instant else {"<": "<", ">=": ">=", "<=": "<", ">": ">="}[cond.op]
        return RCompare(sql, op, bound)
    if isinstance(cond, ast.Between):
        low, _ = bounds(cond.low)
        _, high = bounds(cond.high)
        return RBetween(sql, low, high, cond.negated)
    if isinstance(cond, ast.IsNull):
        return RNull(sql, cond.negated)
    raise st.error(
        cond.pos, f"{field.name} is a date: compare it with =, <, >, BETWEEN or IS NULL."
    )


def _zone_for_dates(st: State) -> zoneinfo.ZoneInfo:
    """The zone dates are read in: WITH TIMEZONE's, the request's or the account's; UTC
    when the zone named is unknown (check_modifiers reports it)."""
    name = next((m.value for m in st.q.modifiers if m.name == "TIMEZONE"), None)
    name = name or st.ctx.time_zone or st.ctx.account_timezone
    return zone_or_utc(name)
