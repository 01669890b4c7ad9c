"""Bounded fuzzing of compile_query: any text built from the language's own tokens and
date-like literals either compiles or raises InvalidQuery (a 400), never anything else (a
500); and queries built clause by clause from the catalog's fields run over the test data
to an answer or an InvalidQuery, never anything else (what the checker lets through must
run). Derandomized, so a run is repeatable and a failure reproduces."""

from __future__ import annotations

import random

import duckdb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quarry.errors import InvalidQuery
from tests.warehouse.query.data import ACCOUNT_CURRENCY, ACCOUNT_ZONE, NOW, STORES, run_public
from warehouse.catalog import DATASETS, Dataset
from warehouse.query import compile_query
from warehouse.query.aggregates import NAMES as AGGREGATE_NAMES
from warehouse.query.dates import NAMED_RANGES, TIME_GRANULARITIES, UNITS
from warehouse.query.executor import Limits
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


# The datasets the test data holds, and the pieces a structured query is built from.
QUERIED = [d for d in DATASETS if d.name in ("sales", "orders", "customers")]
GRAINS = sorted(g for g in TIME_GRANULARITIES if g not in ("minute", "second"))
LITERALS = ("5", "-1.5", "0", "'abc'", "'US'", "'2024-03-10'", "TRUE", "2024-03-10", "NULL")
WINDOWS = ("SINCE 2024-03-01 UNTIL 2024-04-15", "DURING last_month", "SINCE -400d")
COMPARED = ("previous_period", "previous_year", "2024-01-01 UNTIL 2024-01-31")
WITHS = ("TOTALS", "GROUP_TOTALS", "CUMULATIVE_VALUES", "PERCENT_CHANGE", "CURRENCY 'EUR'",
         "TIMEZONE 'Asia/Kolkata'", "WEEK_START 'sunday'")  # fmt: skip


def structured_query(rng: random.Random) -> str:
    """A query of SHOW, GROUP BY (TOP), TIMESERIES, WHERE, a window, COMPARE TO, HAVING,
    WITH, ORDER BY and LIMIT, each clause drawn from the dataset's own fields."""
    ds: Dataset = rng.choice(QUERIED)
    metrics = [f.name for f in ds.fields if f.role == "metric"] or ["1"]
    dims = [f.name for f in ds.fields if f.role == "dimension"]
    shown = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.random()
        if kind < 0.4:
            shown.append(rng.choice(metrics))
        elif kind < 0.8:
            shown.append(f"{rng.choice(AGGREGATE_NAMES)}({rng.choice(ds.fields).name})")
        else:
            shown.append(f"{rng.choice(metrics)} {rng.choice('+-*/')} {rng.choice(metrics)}")
    names = [f"m{k}" for k in range(len(shown))]
    q = f"FROM {ds.name} SHOW " + ", ".join(
        f"{s} AS {n}" for s, n in zip(shown, names, strict=True)
    )
    grouped = rng.sample(dims, k=min(len(dims), rng.choice((0, 0, 1, 1, 2))))
    if grouped:
        written = list(grouped)
        if rng.random() < 0.3:
            written[-1] = f"{rng.choice(('', 'ONLY '))}TOP {rng.randint(1, 3)} {written[-1]}"
        if rng.random() < 0.2:
            written.append(rng.choice(GRAINS))
        q += " GROUP BY " + ", ".join(written)
    if rng.random() < 0.5:
        q += f" TIMESERIES {rng.choice(GRAINS)}"
    if rng.random() < 0.4 and dims:
        field, value = rng.choice(dims), rng.choice(LITERALS)
        q += f" WHERE {field} " + rng.choice(
            (f"= {value}", f"!= {value}", f">= {value}", f"IN ({value}, {rng.choice(LITERALS)})",
             f"CONTAINS {value}", "IS NULL", "IS NOT TRUE")
        )  # fmt: skip
    q += " " + rng.choice(WINDOWS)
    if rng.random() < 0.3:
        q += f" COMPARE TO {rng.choice(COMPARED)}"
    if rng.random() < 0.3:
        left = rng.choice([*names, *grouped, *LITERALS])
        q += (
            f" HAVING {left} {rng.choice(('>', '=', '!=', '<='))} {rng.choice([*names, *LITERALS])}"
        )
    if rng.random() < 0.4:
        q += " WITH " + ", ".join(rng.sample(WITHS, rng.randint(1, 2)))
    if rng.random() < 0.3:
        q += f" ORDER BY m0 {rng.choice(('ASC', 'DESC'))}"
    if rng.random() < 0.3:
        q += f" LIMIT {rng.randint(1, 5)}"
    return q


@settings(
    max_examples=300,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.randoms(use_true_random=False))
def test_structured_queries_answer_or_are_invalid(
    con: duckdb.DuckDBPyConnection, rng: random.Random
) -> None:
    text = structured_query(rng)
    try:
        run_public(con, text, limits=Limits(max_groups=100_000))
    except InvalidQuery as exc:
        assert exc.errors, text
