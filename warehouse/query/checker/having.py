"""HAVING, ORDER BY and LIMIT: what is done to the result rows, by the columns SHOW and
WITH made (the executor applies them after aggregating)."""

from __future__ import annotations

from decimal import Decimal

from warehouse.query import ast
from warehouse.query.checker.state import Fail, State
from warehouse.query.diagnostics import did_you_mean
from warehouse.query.plan import Column, HArith, HCond, HOperand, HValue

# The rows a query returns without LIMIT.
DEFAULT_LIMIT = 1000


def check_having(st: State, cond: ast.Cond, columns: list[Column]) -> HCond | None:
    names = {c.name for c in columns}
    try:
        return _having_cond(st, cond, names)
    except Fail:
        return None


def _having_cond(st: State, c: ast.Cond, names: set[str]) -> HCond:
    if isinstance(c, (ast.And, ast.Or)):
        return HCond(
            "and" if isinstance(c, ast.And) else "or",
            tuple(_having_cond(st, i, names) for i in c.items),
        )
    if isinstance(c, ast.Not):
        return HCond("not", (_having_cond(st, c.item, names),))

    def operand(expr: ast.Expr) -> HOperand:
        return _operand(st, expr, names)

    if isinstance(c, ast.Compare):
        return HCond(c.op, (operand(c.left), operand(c.right)))
    if isinstance(c, ast.InList):
        return HCond("in", (operand(c.left), *[operand(v) for v in c.values]), c.negated)
    if isinstance(c, ast.Between):
        return HCond("between", (operand(c.left), operand(c.low), operand(c.high)), c.negated)
    if isinstance(c, ast.TextMatch):
        return HCond(c.kind, (operand(c.left), operand(c.value)), c.negated)
    assert isinstance(c, ast.IsNull)
    return HCond("null", (operand(c.left),), c.negated)


def _operand(st: State, expr: ast.Expr, names: set[str]) -> HOperand:
    if isinstance(expr, ast.Name):
        if expr.name not in names:
            hint = did_you_mean(expr.name, names)
            raise st.error(
                expr.pos,
                f"HAVING can use the columns of SHOW; '{expr.name}' is not one.{hint}",
            )
        return HValue(column=expr.name)
    if isinstance(expr, ast.Call):
        name = f"{expr.func}_{expr.arg.name}"
        if name not in names:
            raise st.error(
                expr.pos,
                f"HAVING can use the columns of SHOW; add {expr.func}({expr.arg.name}) to SHOW.",
            )
        return HValue(column=name)
    if isinstance(expr, (ast.NumberLit, ast.StringLit, ast.BoolLit)):
        return HValue(const=expr.value)
    if isinstance(expr, ast.Neg):
        return HArith("*", HValue(const=Decimal(-1)), _operand(st, expr.operand, names))
    if isinstance(expr, ast.BinOp):
        return HArith(expr.op, _operand(st, expr.left, names), _operand(st, expr.right, names))
    raise st.error(expr.pos, "Unexpected value in HAVING.")


def check_order(
    st: State, columns: list[Column], time_col: Column | None, metrics: list[Column]
) -> list[tuple[str, bool]]:
    """ORDER BY's (column, descending) pairs; without ORDER BY, along time, else the
    biggest first by the first metric."""
    names = [c.name for c in columns]
    out = []
    for item in st.q.order_by:
        if item.name.name not in names:
            hint = did_you_mean(item.name.name, names)
            st.error(
                item.name.pos,
                f"ORDER BY names a result column; '{item.name.name}' is not one.{hint}",
            )
            continue
        out.append((item.name.name, item.descending))
    if out or st.q.order_by:
        return out
    if time_col is not None:
        return [(next(c.name for c in columns if c.kind == "time"), False)]
    return [(metrics[0].name, True)] if metrics else []


def check_limit(st: State) -> int:
    q = st.q
    if q.limit is None:
        return DEFAULT_LIMIT
    most = st.ctx.max_groups
    if q.limit < 1 or q.limit > most:
        st.error(
            q.clauses["LIMIT"],
            f"LIMIT must be between 1 and {most:,} (the most rows a query may return).",
        )
    return q.limit
