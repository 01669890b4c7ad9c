"""SHOW: each item a grouped column or a metric, with its name, title and type. A metric
is an expression over SQL aggregates (warehouse.query.fields writes them)."""

from __future__ import annotations

import re
from decimal import Decimal

from warehouse.catalog import Dataset, Field
from warehouse.query import ast
from warehouse.query.aggregates import BY_NAME as AGGREGATES
from warehouse.query.aggregates import NAMES as AGGREGATE_NAMES
from warehouse.query.checker.lookup import find_field
from warehouse.query.checker.state import Fail, State
from warehouse.query.dates import TIME_GRANULARITIES
from warehouse.query.diagnostics import Pos, did_you_mean
from warehouse.query.fields import RATIO_METRICS, aggregate, dimension_sql, is_semantic, lookup
from warehouse.query.plan import Arith, Column, Const, MetricExpr

_WORDS = {"+": " plus ", "-": " minus ", "*": " times ", "/": " div "}


def check_show(st: State, ds: Dataset, time_col: Column | None, dims: list[Column]) -> list[Column]:
    """SHOW's columns, after the grouped ones it leaves out."""
    shown: list[Column] = []
    names: dict[str, Pos] = {}
    grouped = {d.name: d for d in dims}
    for item in st.q.show:
        try:
            col = _show_item(st, item, ds, time_col, grouped)
        except Fail:
            continue
        if col.name in names:
            st.error(item.pos, f"Two columns are named '{col.name}': add AS to rename one.")
            continue
        names[col.name] = item.pos
        shown.append(col)
    # Grouped columns not in SHOW (under any name) still come back, first, so every row
    # says its group.
    covered = {(c.kind, c.sql) for c in shown if c.kind in ("time", "dim")}
    grouped_cols = ([time_col] if time_col else []) + dims
    missing = [c for c in grouped_cols if (c.kind, c.sql) not in covered]
    return [*missing, *shown]


def _show_item(
    st: State, item: ast.ShowItem, ds: Dataset, time_col: Column | None, grouped: dict[str, Column]
) -> Column:
    expr = item.expr
    if isinstance(expr, ast.Name):
        if time_col is not None and expr.name == time_col.name:
            return _renamed(time_col, item.alias)
        if expr.name in TIME_GRANULARITIES and expr.name not in grouped:
            raise st.error(
                expr.pos,
                f"{expr.name} is a time granularity: add it to GROUP BY or TIMESERIES.",
            )
        if expr.name in grouped and grouped[expr.name].granularity:
            return _renamed(grouped[expr.name], item.alias)
        field = lookup(ds, expr.name)
        if field is not None and field.role == "dimension":
            sql = dimension_sql(field)
            match = next((d for d in grouped.values() if d.sql == sql), None)
            if match is None:
                raise st.error(expr.pos, f"{field.name} is a dimension: add it to GROUP BY.")
            return _renamed(match, item.alias or expr.name)
    metric, type_ = _metric(st, expr, ds)
    name, title = _metric_name(st, item)
    return Column(
        name,
        title,
        type_,
        "metric",
        "metric",
        expr=metric,
        money=type_ == "money",
        additive=_is_additive(expr, ds),
    )


def _is_additive(expr: ast.Expr, ds: Dataset) -> bool:
    """Sums and counts (and their sums and differences) add up along time. `orders`
    does too: an order's events share its time, so it counts in one bucket only."""
    if isinstance(expr, ast.BinOp):
        return expr.op in "+-" and all(_is_additive(e, ds) for e in (expr.left, expr.right))
    if isinstance(expr, ast.Neg):
        return _is_additive(expr.operand, ds)
    if isinstance(expr, ast.Call):
        return _additive(expr.func)
    if isinstance(expr, ast.Name):
        field = lookup(ds, expr.name)
        if field is None:
            return False
        if ds.name == "sales" and field.name in ("customers", "average_order_value"):
            return False
        return field.name == "orders" or _additive(field.default_aggregation)
    return False


def _additive(func: str | None) -> bool:
    agg = AGGREGATES.get(func) if func else None
    return agg is not None and agg.additive


def _metric_name(st: State, item: ast.ShowItem) -> tuple[str, str]:
    """The column's name and title: the alias, else derived from what SHOW wrote."""
    expr = item.expr
    if isinstance(expr, ast.Name):
        field = lookup(st.ds, expr.name)
        default = (expr.name, field.title if field else expr.name)
    elif isinstance(expr, ast.Call):
        field = lookup(st.ds, expr.arg.name)
        of = field.title if field else expr.arg.name
        agg = AGGREGATES.get(expr.func)
        title = f"{agg.title if agg else expr.func} of {of}"
        default = (f"{expr.func}_{expr.arg.name}", title)
    else:
        text = "".join(_WORDS.get(ch, ch) for ch in item.text.lower())
        default = (re.sub(r"[^a-z0-9]+", "_", text).strip("_") or "value", item.text)
    if item.alias:
        return item.alias, item.alias
    return default


def _metric(st: State, expr: ast.Expr, ds: Dataset) -> tuple[MetricExpr, str]:
    """A SHOW expression as a metric expression over SQL aggregates, with its type."""
    if isinstance(expr, ast.NumberLit):
        return Const(expr.value), "number"
    if isinstance(expr, ast.Neg):
        inner, type_ = _arithmetic_operand(st, expr.operand, ds)
        return Arith("*", Const(Decimal(-1)), inner), type_
    if isinstance(expr, ast.BinOp):
        left, lt = _arithmetic_operand(st, expr.left, ds)
        right, rt = _arithmetic_operand(st, expr.right, ds)
        return Arith(expr.op, left, right), _arith_type(expr.op, lt, rt)
    if isinstance(expr, ast.Name):
        field = find_field(st, expr, ds)
        if field is None:
            raise Fail()
        if field.role != "metric":
            raise st.error(expr.pos, f"{field.name} is a dimension: add it to GROUP BY.")
        func = field.default_aggregation or "sum"
        ratio = ds.name == "sales" and field.name in RATIO_METRICS
        metric_type = "ratio" if ratio else AGGREGATES[func].result_type(field)
        return aggregate(field, func, st.fx, st.parts, ds), metric_type
    if isinstance(expr, ast.Call):
        if expr.func not in AGGREGATES:
            hint = did_you_mean(expr.func, AGGREGATE_NAMES)
            raise st.error(expr.pos, f"Unknown function '{expr.func}'.{hint}")
        field = find_field(st, expr.arg, ds)
        if field is None:
            raise Fail()
        _check_aggregation(st, expr, field)
        result_type = AGGREGATES[expr.func].result_type(field)
        return aggregate(field, expr.func, st.fx, st.parts, ds), result_type
    raise st.error(expr.pos, "SHOW takes fields, aggregations and arithmetic between them.")


def _arithmetic_operand(st: State, expr: ast.Expr, ds: Dataset) -> tuple[MetricExpr, str]:
    """A metric that arithmetic takes: a number or money, not a date (the least or
    greatest of a date field)."""
    metric, type_ = _metric(st, expr, ds)
    if type_ == "date":
        raise st.error(expr.pos, "Arithmetic takes numbers and money; this value is a date.")
    return metric, type_


def _check_aggregation(st: State, call: ast.Call, field: Field) -> None:
    func = call.func
    if is_semantic(st.ds, field.name):
        raise st.error(
            call.pos,
            f"{field.name} is already an aggregate ({field.description.rstrip('.')}); "
            f"write it without {func}().",
        )
    if field.aggregate_only and func != "count":
        raise st.error(call.pos, f"{field.name} can only be counted: use count({field.name}).")
    agg = AGGREGATES[func]
    if agg.accepts is not None and field.type not in agg.accepts:
        raise st.error(call.pos, f"{func}() needs {agg.needs()}; {field.name} is {field.type}.")


def _renamed(col: Column, alias: str | None) -> Column:
    if not alias:
        return col
    return Column(
        alias,
        alias,
        col.type,
        col.role,
        col.kind,
        col.sql,
        col.expr,
        col.money,
        granularity=col.granularity,
        additive=col.additive,
    )


def _arith_type(op: str, left: str, right: str) -> str:
    """The type of `left op right`: money stays money through sums and scaling."""
    if op in ("+", "-"):
        return "money" if "money" in (left, right) else left
    if op == "*":
        return "money" if (left == "money") != (right == "money") else "number"
    return "money" if left == "money" and right != "money" else "number"
