"""Recursive-descent parser: tokens -> ast.Query, collecting every syntax error.

Clauses may come in any order and each at most once. On an error the parser records a
diagnostic and skips to the next clause keyword, so one pass reports the problems of every
clause, not only the first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime
from decimal import Decimal

from warehouse.query import ast
from warehouse.query.aggregates import NAMES
from warehouse.query.dates import DateError, out_of_range, parse_literal
from warehouse.query.diagnostics import Diagnostic, Pos, did_you_mean
from warehouse.query.lexer import Kind, Token, lex
from warehouse.query.shopifyql_schemas import VISUALIZATION_TYPES

# Words that start a clause. BY alone is ShopifyQL's older spelling of GROUP BY.
CLAUSE_WORDS = (
    "from",
    "show",
    "visualize",
    "where",
    "having",
    "group",
    "by",
    "timeseries",
    "since",
    "until",
    "during",
    "compare",
    "order",
    "limit",
    "with",
)
# The aggregate functions a call may name: the parser takes any name, the checker these.
AGGREGATES = NAMES
COMPARE_KEYWORDS = (
    "previous_period",
    "previous_year",
    "previous_year_match_day_of_week",
    "previous_quarter",
    "previous_month",
    "previous_week",
    "previous_day",
    "previous_hour",
    "previous_minute",
    "previous_second",
)
DATE_FUNCTIONS = tuple(
    f"{edge}of{unit}"
    for edge in ("start", "end")
    for unit in ("second", "minute", "hour", "day", "week", "month", "quarter", "year")
)
DATE_WORDS = ("now", "today", "yesterday")
MODIFIERS = (
    "TOTALS",
    "GROUP_TOTALS",
    "PERCENT_CHANGE",
    "CUMULATIVE_VALUES",
    "CURRENCY",
    "TIMEZONE",
    "WEEK_START",
)
# ShopifyQL's attribution models credit sales to marketing touchpoints (sessions, clicks),
# which Quarry does not sync: they parse, and the checker refuses them by name.
ATTRIBUTION_MODIFIERS = (
    "FIRST_CLICK_ATTRIBUTION",
    "LAST_CLICK_ATTRIBUTION",
    "LAST_NON_DIRECT_CLICK_ATTRIBUTION",
    "ANY_CLICK_ATTRIBUTION",
    "LINEAR_ATTRIBUTION",
)
_COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
# No offset of ten digits fits in the calendar (9998 years are about 88 million hours), and
# int() refuses digit strings past 4,300: longer amounts are out of range before int().
_MAX_OFFSET_DIGITS = 9
# LIMIT, OFFSET and TOP are checked against their maxima later; past this many digits the
# number is too large for any of them, and int() need not read it.
_MAX_INTEGER_DIGITS = 18
# Bounds of the language itself (docs/api.md, "Limits"), far above any real
# query: the parser, the checker and the compiler recurse over the tree, so its depth must
# stay well inside Python's recursion limit whatever the text. Parentheses, NOT and unary
# minus each open a level; the arithmetic operators of one clause make left-deep chains,
# so they are counted per clause.
MAX_NESTING = 50
MAX_OPERATORS = 256


_OFFSET_PARTS = re.compile(r"(-?)(\d+)(min|[a-z])")


class _Error(Exception):
    def __init__(self, diagnostic: Diagnostic) -> None:
        self.diagnostic = diagnostic


def parse(text: str) -> tuple[ast.Query, list[Diagnostic]]:
    """Parse a query. Returns the (possibly partial) tree and every diagnostic found."""
    tokens, errors = lex(text)
    if len(tokens) == 1:
        return ast.Query(), [Diagnostic(Pos(1, 1), "The query is empty.")]
    parser = _Parser(tokens, text)
    parser.parse_query()
    return parser.query, errors + parser.errors


class _Parser:
    def __init__(self, tokens: list[Token], text: str) -> None:
        self.tokens = tokens
        # Lines as the lexer counts them: only "\n" ends one, and a trailing newline leaves
        # an empty last line where EOF sits (splitlines drops it and splits on \x0c too).
        self.lines = text.split("\n")
        self.i = 0
        self.query = ast.Query()
        self.errors: list[Diagnostic] = []
        self.depth = 0
        self.operators = 0

    # ---- token helpers ----

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def advance(self) -> Token:
        tok = self.tok
        if tok.kind is not Kind.EOF:
            self.i += 1
        return tok

    def fail(self, message: str, tok: Token | None = None) -> _Error:
        return _Error(Diagnostic((tok or self.tok).pos, message))

    def describe(self, tok: Token) -> str:
        return "the end of the query" if tok.kind is Kind.EOF else f"'{tok.text}'"

    def expect_word(self, word: str) -> Token:
        if not self.tok.is_word(word):
            raise self.fail(f"Expected {word.upper()} but found {self.describe(self.tok)}.")
        return self.advance()

    def expect_op(self, op: str) -> Token:
        if not (self.tok.kind is Kind.OP and self.tok.value == op):
            raise self.fail(f"Expected '{op}' but found {self.describe(self.tok)}.")
        return self.advance()

    def at_op(self, *ops: str) -> bool:
        return self.tok.kind is Kind.OP and self.tok.value in ops

    def at_clause(self) -> bool:
        return self.tok.kind is Kind.EOF or self.tok.is_word(*CLAUSE_WORDS)

    def ident(self, what: str) -> ast.Name:
        if self.tok.kind is Kind.IDENT and not self.tok.is_word(*CLAUSE_WORDS):
            tok = self.advance()
            return ast.Name(tok.text.lower(), tok.pos)
        raise self.fail(f"Expected {what} but found {self.describe(self.tok)}.")

    def integer(self, what: str) -> int:
        if self.tok.kind is Kind.NUMBER and self.tok.text.isdigit():
            if len(self.tok.text.lstrip("0")) > _MAX_INTEGER_DIGITS:
                raise self.fail(f"{self.tok.text[:20]}... is too large for {what}.")
            return int(self.advance().text)
        raise self.fail(f"Expected {what} (a whole number) but found {self.describe(self.tok)}.")

    def source(self, start: Pos, end_index: int) -> str:
        """The query text from `start` to just before token `end_index`, on one line."""
        end = self.tokens[end_index].pos
        if start.line == end.line:
            return self.lines[start.line - 1][start.column - 1 : end.column - 1].strip()
        parts = [self.lines[start.line - 1][start.column - 1 :]]
        parts += self.lines[start.line : end.line - 1]
        parts.append(self.lines[end.line - 1][: end.column - 1])
        return " ".join(p.strip() for p in parts).strip()

    @contextmanager
    def nested(self, tok: Token) -> Iterator[None]:
        """One level deeper at `tok` (a parenthesis, NOT or minus): past MAX_NESTING the
        clause fails here, before the recursion goes any further."""
        if self.depth >= MAX_NESTING:
            raise self.fail(
                f"Parentheses, NOT and minus signs nest more than {MAX_NESTING} deep here; "
                "simplify the expression.",
                tok,
            )
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def operator(self) -> Token:
        """Consume an arithmetic operator, counted against the clause's MAX_OPERATORS."""
        tok = self.tok
        self.operators += 1
        if self.operators > MAX_OPERATORS:
            raise self.fail(
                f"A clause may hold at most {MAX_OPERATORS} arithmetic operators; this is "
                "one more. Simplify the expression.",
                tok,
            )
        return self.advance()

    # ---- query ----

    def parse_query(self) -> None:
        while self.tok.kind is not Kind.EOF:
            tok = self.tok
            try:
                if not tok.is_word(*CLAUSE_WORDS):
                    raise self.unknown_clause(tok)
                self.clause(tok)
                if not self.at_clause():
                    raise self.unexpected_after(tok)
            except _Error as err:
                self.errors.append(err.diagnostic)
                self.recover()

    def unknown_clause(self, tok: Token) -> _Error:
        if tok.kind is Kind.IDENT:
            hint = did_you_mean(tok.text, [w.upper() for w in CLAUSE_WORDS if w != "by"])
            return self.fail(f"Unknown keyword '{tok.text}'.{hint}", tok)
        return self.fail(f"Expected a clause keyword but found {self.describe(tok)}.", tok)

    def unexpected_after(self, clause: Token) -> _Error:
        tok = self.tok
        if tok.kind is Kind.IDENT:
            hint = did_you_mean(tok.text, [w.upper() for w in CLAUSE_WORDS if w != "by"])
            if hint:
                return self.fail(f"Unknown keyword '{tok.text}'.{hint}")
        return self.fail(
            f"Unexpected {self.describe(tok)} after the {self.clause_name(clause)} clause."
        )

    def recover(self) -> None:
        self.advance()
        while not self.at_clause():
            self.advance()

    def clause_name(self, tok: Token) -> str:
        word = tok.text.upper()
        return {
            "GROUP": "GROUP BY",
            "BY": "GROUP BY",
            "ORDER": "ORDER BY",
            "COMPARE": "COMPARE TO",
        }.get(word, word)

    def once(self, name: str, tok: Token) -> None:
        if name in self.query.clauses:
            first = self.query.clauses[name]
            raise self.fail(
                f"{name} appears twice (first at line {first.line}, column {first.column}); "
                "each clause may appear only once.",
                tok,
            )
        self.query.clauses[name] = tok.pos

    def clause(self, tok: Token) -> None:
        word = tok.text.lower()
        self.operators = 0
        name = self.clause_name(tok)
        if word in ("group", "order", "compare"):
            self.once(name, tok)
            self.advance()
            self.expect_word("to" if word == "compare" else "by")
        elif word != "visualize":
            self.once(name, tok)
            self.advance()
        q = self.query
        if word == "from":
            if self.tok.is_word("organization"):
                # ShopifyQL's multi-store form; Quarry always reads every readable store.
                self.advance()
            q.dataset = self.ident("a dataset name")
            while self.at_op(","):
                # A multi-fact query (FROM sales, sessions): parsed, refused by the checker.
                self.advance()
                q.extra_datasets.append(self.ident("a dataset name"))
        elif word == "show":
            q.show = self.show_items()
        elif word == "visualize":
            self.once("VISUALIZE", tok)
            self.advance()
            q.visualize = self.visualize_items()
        elif word == "where":
            q.where = self.condition()
        elif word == "having":
            q.having = self.condition()
        elif word in ("group", "by"):
            q.group_by = self.group_items()
        elif word == "timeseries":
            q.timeseries = self.ident("a time granularity")
        elif word == "since":
            q.since = self.date_point()
        elif word == "until":
            q.until = self.date_point()
        elif word == "during":
            q.during = self.date_point()
        elif word == "compare":
            q.compare = self.compare_items()
        elif word == "order":
            q.order_by = self.order_items()
        elif word == "limit":
            q.limit = self.integer("a row count")
            if self.tok.is_word("offset"):
                self.advance()
                q.offset = self.integer("a row offset")
        elif word == "with":
            q.modifiers = self.modifiers()

    # ---- VISUALIZE ----

    def visualize_items(self) -> list[ast.ShowItem]:
        """VISUALIZE metric [TYPE t] [, ...] [MAX n] [ANNOTATE ...]: the chart changes
        nothing in a table, so only the metrics are kept (they are the SHOW of a query that
        has none)."""
        items = []
        while True:
            items.append(self.show_item())
            if self.tok.is_word("type"):
                self.advance()
                chart = self.ident("a visualization type")
                if self.query.chart_type is None:
                    self.query.chart_type = chart.name
                if chart.name not in VISUALIZATION_TYPES:
                    # As in ShopifyQL: an invalid TYPE is a parse error, not a table.
                    hint = did_you_mean(chart.name, VISUALIZATION_TYPES)
                    self.errors.append(
                        Diagnostic(chart.pos, f"Unknown visualization type '{chart.name}'.{hint}")
                    )
            if not self.at_op(","):
                break
            self.advance()
        if self.tok.is_word("max"):
            self.advance()
            self.integer("the number of data points")
        if self.tok.is_word("annotate"):
            # Annotations are marks on a chart; their text runs to the next clause.
            self.advance()
            while not self.at_clause():
                self.advance()
        return items

    # ---- SHOW ----

    def show_items(self) -> list[ast.ShowItem]:
        items = [self.show_item()]
        while self.at_op(","):
            self.advance()
            items.append(self.show_item())
        return items

    def show_item(self) -> ast.ShowItem:
        start_index = self.i
        start = self.tok.pos
        expr = self.expr()
        text = self.source(start, self.i)
        alias = None
        if self.tok.is_word("as"):
            self.advance()
            if self.tok.kind is Kind.QUOTED:
                alias = self.advance().value
            else:
                alias = self.ident("an alias").name
        del start_index
        return ast.ShowItem(expr, alias, start, text)

    def expr(self) -> ast.Expr:
        left = self.term()
        while self.at_op("+", "-"):
            op = self.operator()
            left = ast.BinOp(op.value, left, self.term(), op.pos)
        return left

    def term(self) -> ast.Expr:
        left = self.factor()
        while self.at_op("*", "/"):
            op = self.operator()
            left = ast.BinOp(op.value, left, self.factor(), op.pos)
        return left

    def factor(self) -> ast.Expr:
        tok = self.tok
        if self.at_op("-"):
            with self.nested(tok):
                self.operator()
                return ast.Neg(self.factor(), tok.pos)
        if self.at_op("("):
            with self.nested(tok):
                self.advance()
                inner = self.expr()
                self.expect_op(")")
                return inner
        if tok.kind is Kind.NUMBER:
            self.advance()
            return ast.NumberLit(Decimal(tok.text), tok.pos)
        if tok.kind is Kind.OFFSET:
            # "-3d" lexes as an offset; inside arithmetic it cannot be one.
            raise self.fail(f"Unexpected {self.describe(tok)} in an expression.")
        if tok.kind is Kind.STRING:
            self.advance()
            return ast.StringLit(tok.value, tok.pos)
        if tok.kind in (Kind.DATE, Kind.DATETIME):
            value = self.date_value(tok, tok)  # before advancing: recovery skips the token
            self.advance()
            return ast.DateLit(value, tok.pos)
        if tok.is_word("true", "false"):
            self.advance()
            return ast.BoolLit(tok.text.lower() == "true", tok.pos)
        if tok.kind is Kind.IDENT and not tok.is_word(*CLAUSE_WORDS):
            self.advance()
            if self.at_op("("):
                self.advance()
                func = tok.text.lower()
                if self.tok.is_word("distinct"):
                    # The retired Analytics API's spelling of a distinct count.
                    if func != "count":
                        raise self.fail(
                            f"DISTINCT is taken by count only: count(DISTINCT x), "
                            f"not {tok.text}(DISTINCT x)."
                        )
                    self.advance()
                    func = "count_distinct"
                arg = self.ident("a field name")
                self.expect_op(")")
                return ast.Call(func, arg, tok.pos)
            return ast.Name(tok.text.lower(), tok.pos)
        raise self.fail(f"Expected a field or a value but found {self.describe(tok)}.")

    # ---- conditions ----

    def condition(self) -> ast.Cond:
        items = [self.conjunction()]
        pos = items[0].pos
        while self.tok.is_word("or"):
            self.advance()
            items.append(self.conjunction())
        return items[0] if len(items) == 1 else ast.Or(tuple(items), pos)

    def conjunction(self) -> ast.Cond:
        items = [self.negation()]
        pos = items[0].pos
        while self.tok.is_word("and"):
            self.advance()
            items.append(self.negation())
        return items[0] if len(items) == 1 else ast.And(tuple(items), pos)

    def negation(self) -> ast.Cond:
        tok = self.tok
        if tok.is_word("not"):
            with self.nested(tok):
                self.advance()
                return ast.Not(self.negation(), tok.pos)
        if self.at_op("(") and self._parenthesised_condition():
            with self.nested(tok):
                self.advance()
                inner = self.condition()
                self.expect_op(")")
                return inner
        return self.predicate()

    def _parenthesised_condition(self) -> bool:
        """Does the '(' here open a condition rather than an arithmetic operand? Scan to its
        matching ')' for a keyword or comparison only a condition has."""
        depth = 0
        for tok in self.tokens[self.i :]:
            if tok.kind is Kind.OP and tok.value == "(":
                depth += 1
                if self.depth + depth > MAX_NESTING:
                    # Too deep either way, and the nesting check reports it: a scan to the
                    # end from every parenthesis would cost quadratic time.
                    return True
            elif tok.kind is Kind.OP and tok.value == ")":
                depth -= 1
                if depth == 0:
                    return False
            elif tok.kind is Kind.EOF:
                return False
            elif (tok.kind is Kind.OP and tok.value in _COMPARISONS) or tok.is_word(
                "and", "or", "not", "in", "between", "starts", "ends", "contains", "is", "matches"
            ):
                return True
        return False

    def predicate(self) -> ast.Cond:
        left = self.expr()
        tok = self.tok
        if tok.kind is Kind.OP and tok.value in _COMPARISONS:
            self.advance()
            return ast.Compare(left, tok.value, self.expr(), left.pos)
        negated = False
        if tok.is_word("not"):
            self.advance()
            negated = True
            if not self.tok.is_word("in", "between", "contains", "matches"):
                raise self.fail(
                    f"Expected IN, BETWEEN, CONTAINS or MATCHES after NOT but found "
                    f"{self.describe(self.tok)}."
                )
        tok = self.tok
        if tok.is_word("in"):
            self.advance()
            self.expect_op("(")
            values = [self.expr()]
            while self.at_op(","):
                self.advance()
                values.append(self.expr())
            self.expect_op(")")
            return ast.InList(left, tuple(values), negated, left.pos)
        if tok.is_word("between"):
            self.advance()
            low = self.expr()
            self.expect_word("and")
            return ast.Between(left, low, self.expr(), negated, left.pos)
        if tok.is_word("contains"):
            self.advance()
            return ast.TextMatch(left, "contains", self.expr(), negated, left.pos)
        if tok.is_word("starts", "ends"):
            self.advance()
            self.expect_word("with")
            kind = "starts" if tok.is_word("starts") else "ends"
            return ast.TextMatch(left, kind, self.expr(), False, left.pos)
        if tok.is_word("matches"):
            # A filter on related records (MATCHES (...)): parsed whole, refused by the
            # checker, since Quarry keeps no such relations.
            self.advance()
            self.expect_op("(")
            depth = 1
            while depth and self.tok.kind is not Kind.EOF:
                if self.at_op("("):
                    depth += 1
                elif self.at_op(")"):
                    depth -= 1
                self.advance()
            if depth:
                raise self.fail("Expected ')' to close MATCHES but found the end of the query.")
            return ast.TextMatch(left, "matches", ast.StringLit("", tok.pos), negated, tok.pos)
        if tok.is_word("is"):
            self.advance()
            neg = False
            if self.tok.is_word("not"):
                self.advance()
                neg = True
            if self.tok.is_word("true", "false"):
                # IS [NOT] TRUE/FALSE: a boolean comparison, NOT flipping it.
                value = self.advance().text.lower() == "true"
                return ast.Compare(
                    left, "!=" if neg else "=", ast.BoolLit(value, self.tok.pos), left.pos
                )
            self.expect_word("null")
            return ast.IsNull(left, neg, left.pos)
        raise self.fail(
            f"Expected a comparison (=, !=, <, <=, >, >=, IN, BETWEEN, STARTS WITH, "
            f"ENDS WITH, CONTAINS, IS NULL) but found {self.describe(tok)}."
        )

    # ---- GROUP BY, ORDER BY ----

    def group_items(self) -> list[ast.GroupItem]:
        items = [self.group_item()]
        while self.at_op(","):
            self.advance()
            items.append(self.group_item())
        return items

    def group_item(self) -> ast.GroupItem:
        only = False
        if self.tok.is_word("only"):
            self.advance()
            only = True
            if not self.tok.is_word("top"):
                raise self.fail(f"Expected TOP after ONLY but found {self.describe(self.tok)}.")
        if self.tok.is_word("top"):
            self.advance()
            n = self.integer("the number of top values")
            name = self.ident("a dimension")
            overall = self.tok.is_word("overall")
            if overall:
                self.advance()
            return ast.GroupItem(name, n, only, overall)
        return ast.GroupItem(self.ident("a dimension or time granularity"))

    def order_items(self) -> list[ast.OrderItem]:
        items = []
        while True:
            if self.tok.kind is Kind.QUOTED:
                tok = self.advance()
                name = ast.Name(tok.value, tok.pos)
            else:
                name = self.ident("a column to order by")
            descending = False
            if self.tok.is_word("asc", "desc"):
                descending = self.advance().text.lower() == "desc"
            items.append(ast.OrderItem(name, descending))
            if not self.at_op(","):
                return items
            self.advance()

    # ---- dates ----

    def date_point(self) -> ast.DatePoint:
        tok = self.tok
        # Each value is read before advancing, so that after an error the parser's recovery
        # skips the bad token and not the clause keyword after it.
        if tok.kind in (Kind.DATE, Kind.DATETIME):
            value = self.date_value(tok, tok)
            self.advance()
            kind = "date" if tok.kind is Kind.DATE else "datetime"
            return ast.DatePoint(kind, tok.pos, tok.text, value=value)
        if tok.kind is Kind.STRING and _looks_like_date(tok.value):
            # Some clients quote dates ('2024-01-01'); accept them as dates.
            inner = lex(tok.value)[0][0]
            value = self.date_value(inner, tok)
            self.advance()
            kind = "date" if inner.kind is Kind.DATE else "datetime"
            return ast.DatePoint(kind, tok.pos, tok.value, value=value)
        if tok.kind is Kind.OFFSET:
            amount, unit = self.offset(tok)
            self.advance()
            return ast.DatePoint("offset", tok.pos, tok.text, amount=amount, unit=unit)
        if tok.kind is Kind.IDENT and not tok.is_word(*CLAUSE_WORDS):
            word = tok.text.lower()
            self.advance()
            if word in DATE_WORDS:
                return ast.DatePoint(word, tok.pos, tok.text)
            if self.at_op("("):
                self.advance()
                amount, unit = 0, "d"
                if self.tok.kind is Kind.OFFSET:
                    amount, unit = self.offset(self.tok)
                    self.advance()
                self.expect_op(")")
                text = self.source(tok.pos, self.i)
                return ast.DatePoint("func", tok.pos, text, amount=amount, unit=unit, name=word)
            if word in DATE_FUNCTIONS:  # startOfMonth without parentheses: this month
                return ast.DatePoint("func", tok.pos, tok.text, name=word)
            return ast.DatePoint("named", tok.pos, tok.text, name=word)
        raise self.fail(
            f"Expected a date (2024-01-31, -30d, today, last_month, startOfMonth(-1m)) "
            f"but found {self.describe(tok)}."
        )

    def date_value(self, literal: Token, at: Token) -> date | datetime:
        """The value of a DATE or DATETIME token; an impossible one (2024-02-30) is a
        diagnostic at `at`, the token as written (a quoted date's string)."""
        try:
            return parse_literal(literal.text)
        except DateError as exc:
            raise self.fail(str(exc), at) from exc

    def offset(self, tok: Token) -> tuple[int, str]:
        """An OFFSET token (-30d, -15min, 0m) as (30, "d"): how far back. Offsets count
        back; the only unsigned one is zero (startOfMonth(0m) is this month)."""
        match = _OFFSET_PARTS.fullmatch(tok.text)
        assert match is not None  # the lexer only makes OFFSET tokens of this shape
        sign, digits, unit = match.groups()
        if len(digits.lstrip("0")) > _MAX_OFFSET_DIGITS:
            raise self.fail(str(out_of_range(f"offset {tok.text}")), tok)
        if not sign and int(digits):
            raise self.fail(
                f"Offsets count back from now: write -{tok.text} (only 0{unit} has no sign).",
                tok,
            )
        return int(digits), unit

    def compare_items(self) -> list[ast.CompareItem]:
        items = []
        while True:
            tok = self.tok
            start_index = self.i
            if tok.is_word(*COMPARE_KEYWORDS, "targets"):
                self.advance()
                items.append(ast.CompareItem(tok.pos, tok.text.lower(), keyword=tok.text.lower()))
            else:
                start = self.date_point()
                end = None
                if self.tok.is_word("until"):
                    self.advance()
                    end = self.date_point()
                text = self.source(tok.pos, self.i)
                items.append(ast.CompareItem(tok.pos, text, start=start, end=end))
            del start_index
            if not self.at_op(","):
                return items
            self.advance()

    # ---- WITH ----

    def modifiers(self) -> list[ast.Modifier]:
        items = []
        while True:
            tok = self.tok
            if tok.kind is not Kind.IDENT:
                raise self.fail(f"Expected a WITH modifier but found {self.describe(tok)}.")
            word = tok.text.upper()
            if word not in MODIFIERS + ATTRIBUTION_MODIFIERS:
                hint = did_you_mean(word, MODIFIERS)
                raise self.fail(f"Unknown WITH modifier '{tok.text}'.{hint}")
            self.advance()
            if word in ("CURRENCY", "TIMEZONE", "WEEK_START"):
                if self.tok.kind not in (Kind.STRING, Kind.IDENT, Kind.QUOTED):
                    raise self.fail(
                        f"WITH {word} needs a value in quotes, e.g. "
                        + {
                            "CURRENCY": "'EUR'",
                            "TIMEZONE": "'Europe/Berlin'",
                            "WEEK_START": "'sunday'",
                        }[word]
                        + f", but found {self.describe(self.tok)}."
                    )
                value_tok = self.advance()
                items.append(ast.Modifier(word, tok.pos, value_tok.value, value_tok.pos))
            else:
                items.append(ast.Modifier(word, tok.pos))
            if not self.at_op(","):
                return items
            self.advance()


def _looks_like_date(text: str) -> bool:
    tokens = lex(text)[0]
    return len(tokens) == 2 and tokens[0].kind in (Kind.DATE, Kind.DATETIME)
