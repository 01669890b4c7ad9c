"""Bounded fuzzing of compile_query: any text built from the language's own tokens and
date-like literals either compiles or raises InvalidQuery (a 400), never anything else (a
500). Derandomized, so a run is repeatable and a failure reproduces."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quarry.errors import InvalidQuery
from tests.warehouse.query.data import ACCOUNT_CURRENCY, ACCOUNT_ZONE, NOW, STORES
from warehouse.catalog import DATASETS
from warehouse.query import compile_query
from warehouse.query.dates import NAMED_RANGES, TIME_GRANULARITIES, UNITS
from warehouse.query.parser import (
    AGGREGATES,
    ATTRIBUTION_MODIFIERS,
    CLAUSE_WORDS,
    COMPARE_KEYWORDS,
    DATE_FUNCTIONS,
    DATE_WORDS,
    MODIFIERS,
)

WORDS = sorted(
    {
        *CLAUSE_WORDS,
        *AGGREGATES,
        *COMPARE_KEYWORDS,
        *DATE_FUNCTIONS,
        *DATE_WORDS,
        *MODIFIERS,
        *ATTRIBUTION_MODIFIERS,
        *NAMED_RANGES,
        *TIME_GRANULARITIES,
        *(d.name for d in DATASETS),
        *(f.name for d in DATASETS for f in d.fields),
        *("to", "as", "and", "or", "not", "in", "between", "is", "null", "top", "only"),
        *("asc", "desc", "offset", "contains", "starts", "ends", "true", "false", "store"),
        *("bfcm0000", "bfcm2023", "bfcm9999", "organization", "type", "targets", "matches"),
        *("max", "annotate", "sales_reversals", "reversed_quantity"),
    }
)
OPERATORS = ("=", "!=", "<>", "<", "<=", ">", ">=", "+", "-", "*", "/", "(", ")", ",")
QUOTED = ("'EUR'", "'Europe/Berlin'", "'sunday'", "'Main Street'", "'2024-02-30'", '"x"')


def digits(width: int) -> st.SearchStrategy[str]:
    return st.integers(0, 10**width - 1).map(lambda n: f"{n:0{width}d}")


# Dates with every part possibly out of range: 0000-00-00 to 9999-99-99, hours to 99.
DATE = st.builds(lambda y, m, d: f"{y}-{m}-{d}", digits(4), digits(2), digits(2))
TIMESTAMP = st.builds(
    lambda day, h, mi, s, zone: f"{day}T{h}:{mi}{s}{zone}",
    DATE,
    digits(2),
    digits(2),
    st.one_of(st.just(""), digits(2).map(lambda s: f":{s}"), digits(2).map(lambda s: f":{s}.5")),
    st.one_of(
        st.just(""),
        st.just("Z"),
        st.builds(lambda sign, h, m: f"{sign}{h}:{m}", st.sampled_from("+-"), digits(2), digits(2)),
    ),
)
OFFSET = st.builds(
    lambda n, unit: f"-{n}{unit}", st.integers(0, 10**12), st.sampled_from(sorted(UNITS))
)
NUMBER = st.one_of(st.integers(0, 10**25).map(str), st.just("1.5"), st.just("9" * 30))
TOKEN = st.one_of(
    st.sampled_from(WORDS),
    st.sampled_from(OPERATORS),
    st.sampled_from(QUOTED),
    DATE,
    TIMESTAMP,
    OFFSET,
    NUMBER,
    st.builds(lambda fn, off: f"{fn}({off})", st.sampled_from(DATE_FUNCTIONS), OFFSET),
)
# Line breaks matter: positions are counted per line, and a query may end with one.
SEPARATOR = st.sampled_from((" ", "\n", "\r\n", "\t", " \x0c ", "\u2028"))


def soup(max_size: int) -> st.SearchStrategy[str]:
    return st.builds(
        lambda tokens, sep, tail: sep.join(tokens) + tail,
        st.lists(TOKEN, max_size=max_size),
        SEPARATOR,
        st.sampled_from(("", "\n", " -- a comment", "\n\n")),
    )


# Free token soup reaches the parser's error paths; a valid head followed by the soup
# gets past FROM and SHOW into the checker and the date arithmetic.
TEXT = st.one_of(
    soup(25),
    soup(20).map(lambda rest: "FROM sales SHOW total_sales " + rest),
    st.builds(
        lambda clause, operand, rest: f"FROM sales SHOW total_sales {clause} {operand} {rest}",
        st.sampled_from(("SINCE", "UNTIL", "DURING", "COMPARE TO", "WHERE created_at >")),
        st.one_of(DATE, TIMESTAMP, OFFSET, st.sampled_from(NAMED_RANGES)),
        soup(6),
    ),
)


@settings(
    max_examples=200,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(TEXT)
def test_compile_query_only_ever_raises_invalid_query(text: str) -> None:
    try:
        compile_query(
            text,
            stores=STORES,
            account_currency=ACCOUNT_CURRENCY,
            account_timezone=ACCOUNT_ZONE,
            now=NOW,
        )
    except InvalidQuery as exc:
        assert exc.errors, text  # every refusal says where and why
        for error in exc.errors:
            assert {"line", "column", "message", "severity"} <= set(error), error
