"""HAVING, ORDER BY and LIMIT: what is done to the result rows, by the columns SHOW and
WITH made (the executor applies them after aggregating)."""

from __future__ import annotations

from decimal import Decimal

from warehouse.query import ast
from warehouse.query.checker.state import Fail, State
from warehouse.query.diagnostics import did_you_mean
from warehouse.query.fields import value_kind
from warehouse.query.plan import Column, HArith, HCond, HOperand, HValue

# The rows a query returns without LIMIT.
DEFAULT_LIMIT = 1000


# What a HAVING operand holds, as its comparisons see it (fields.value_kind): result
# values are numbers (Decimal or int), text ("string"), booleans, or dates and time
# buckets written as ISO 8601 text, which compare with text ('2025-01-01') too.
_COMPARABLE = {frozenset({"date", "string"})}
_TEXT_MATCHES = {"starts": "STARTS WITH", "ends": "ENDS WITH", "contains": "CONTAINS"}


def check_having(st: State, cond: ast.Cond, columns: list[Column]) -> HCond | None:
    kinds = {c.name: value_kind(c.type) for c in columns}
    try:
        return _having_cond(st, cond, kinds)
    except Fail:
        return None


def _having_cond(st: State, c: ast.Cond, kinds: dict[str, str]) -> HCond:
    if isinstance(c, (ast.And, ast.Or)):
        return HCond(
            "and" if isinstance(c, ast.And) else "or",
            tuple(_having_cond(st, i, kinds) for i in c.items),
        )
    if isinstance(c, ast.Not):
        return HCond("not", (_having_cond(st, c.item, kinds),))
    if isinstance(c, ast.Compare):
        return HCond(c.op, _compared(st, c.left, (c.right,), kinds))
    if isinstance(c, ast.InList):
        return HCond("in", _compared(st, c.left, c.values, kinds), c.negated)
    if isinstance(c, ast.Between):
        return HCond("between", _compared(st, c.left, (c.low, c.high), kinds), c.negated)
    if isinstance(c, ast.TextMatch):
        if c.kind == "matches":
            raise st.error(
                c.pos,
                "MATCHES filters by related records, which Quarry does not keep; HAVING filters "
                "result rows with =, IN, BETWEEN or CONTAINS.",
            )
        left, _ = _operand(st, c.left, kinds)
        value, kind = _operand(st, c.value, kinds)
        if kind != "string":
            raise st.error(c.value.pos, f"{_TEXT_MATCHES[c.kind]} takes text in single quotes.")
        return HCond(c.kind, (left, value), c.negated)
    assert isinstance(c, ast.IsNull)
    return HCond("null", (_operand(st, c.left, kinds)[0],), c.negated)


def _compared(
    st: State, left: ast.Expr, others: tuple[ast.Expr, ...], kinds: dict[str, str]
) -> tuple[HOperand, ...]:
    """The operands of a comparison, which must hold values of one kind: a number never
    equals, nor sorts against, a text."""
    first, kind = _operand(st, left, kinds)
    out = [first]
    for expr in others:
        operand, other = _operand(st, expr, kinds)
        if other != kind and frozenset({kind, other}) not in _COMPARABLE:
            raise st.error(
                expr.pos,
                f"HAVING compares {_described(left, kind)} with {_described(expr, other)}: "
                f"compare {_plural(kind)} with {_plural(kind)}.",
            )
        out.append(operand)
    return tuple(out)


def _described(expr: ast.Expr, kind: str) -> str:
    article = "an" if kind[0] in "aeiou" else "a"
    noun = "text" if kind == "string" else f"{article} {kind}"
    if isinstance(expr, ast.Name):
        return f"{expr.name} ({noun})"
    if isinstance(expr, ast.StringLit):
        return f"'{expr.value}' (text)"
    return noun


def _plural(kind: str) -> str:
    return "text" if kind == "string" else f"{kind}s"


def _operand(st: State, expr: ast.Expr, kinds: dict[str, str]) -> tuple[HOperand, str]:
    """The operand and the kind of value it holds."""
    if isinstance(expr, ast.Name):
        if expr.name not in kinds:
            hint = did_you_mean(expr.name, kinds)
            raise st.error(
                expr.pos,
                f"HAVING can use the columns of SHOW; '{expr.name}' is not one.{hint}",
            )
        return HValue(column=expr.name), kinds[expr.name]
    if isinstance(expr, ast.Call):
        name = f"{expr.func}_{expr.arg.name}"
        if name not in kinds:
            raise st.error(
                expr.pos,
                f"HAVING can use the columns of SHOW; add {expr.func}({expr.arg.name}) to SHOW.",
            )
        return HValue(column=name), kinds[name]
    if isinstance(expr, ast.NumberLit):
        return HValue(const=expr.value), "number"
    if isinstance(expr, ast.StringLit):
        return HValue(const=expr.value), "string"
    if isinstance(expr, ast.BoolLit):
        return HValue(const=expr.value), "boolean"
    if isinstance(expr, ast.Neg):
        inner = _number(st, expr.operand, kinds)
        return HArith("*", HValue(const=Decimal(-1)), inner), "number"
    if isinstance(expr, ast.BinOp):
        left, right = _number(st, expr.left, kinds), _number(st, expr.right, kinds)
        return HArith(expr.op, left, right), "number"
    raise st.error(expr.pos, "Unexpected value in HAVING.")


def _number(st: State, expr: ast.Expr, kinds: dict[str, str]) -> HOperand:
    """An operand of arithmetic, which takes numbers only."""
    operand, kind = _operand(st, expr, kinds)
    if kind != "number":
        raise st.error(expr.pos, f"Arithmetic takes numbers; {_described(expr, kind)} is not one.")
    return operand


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
