"""warehouse.sql_values: a literal reads back as the value a bound parameter gives, for
every kind of value the program binds, and a statement run with literals binds nothing
(so DuckDB does not import pandas)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warehouse.sql_values import bind, literal

VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63) + 1, max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.decimals(
        allow_nan=False, allow_infinity=False, places=4, min_value=-(10**20), max_value=10**20
    ),
    st.text(),
    st.datetimes(timezones=st.just(UTC)),
    st.datetimes(),
    st.dates(),
)


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    connection.execute("SET TimeZone = 'UTC'")
    return connection


@settings(max_examples=300, deadline=None)
@given(value=VALUES)
def test_a_literal_reads_back_as_the_bound_value(
    con: duckdb.DuckDBPyConnection, value: object
) -> None:
    (bound,) = con.execute("SELECT ?", [value]).fetchone() or ()
    (written,) = con.execute(f"SELECT {literal(value)}").fetchone() or ()
    if isinstance(value, Decimal):
        assert Decimal(str(written)) == value
    else:
        assert written == bound
    # Equal by SQL's rules too: what a filter compares.
    if value is not None:
        assert con.execute(f"SELECT ? = {literal(value)}", [value]).fetchone() == (True,)


def test_text_that_would_break_out_of_its_quotes_stays_text(con: duckdb.DuckDBPyConnection) -> None:
    hostile = ["'; DROP TABLE t; --", "a''b", "\\'", "x\x00' OR 1=1 --", "?", "\x00", "é😀"]
    for text in hostile:
        assert con.execute(f"SELECT {literal(text)}").fetchone() == (text,)
    assert con.execute(bind("SELECT ?, ?", ["?", "a?b"])).fetchone() == ("?", "a?b")
    # A `?` inside the program's own quoted text is text, not a placeholder.
    quoted = bind("""SELECT 'a?''?' AS "b?", ?""", ["' OR 1=1 --"])
    assert con.execute(quoted).fetchone() == ("a?'?", "' OR 1=1 --")


def test_other_values(con: duckdb.DuckDBPyConnection) -> None:
    assert con.execute(f"SELECT {literal(time(10, 5, 1, 7))}").fetchone() == (time(10, 5, 1, 7),)
    assert con.execute(f"SELECT {literal([1, 2, 3])}").fetchone() == ([1, 2, 3],)
    assert con.execute(f"SELECT {literal(('a', 'b'))}").fetchone() == (["a", "b"],)
    offset = datetime(2024, 5, 1, 10, tzinfo=timezone(timedelta(hours=-7)))
    assert con.execute(f"SELECT {literal(offset)}").fetchone() == (offset,)
    assert con.execute(f"SELECT {literal(date(1, 1, 1))}").fetchone() == (date(1, 1, 1),)
    for special in (float("inf"), float("-inf")):
        assert con.execute(f"SELECT {literal(special)}").fetchone() == (special,)
    assert con.execute(f"SELECT isnan({literal(float('nan'))})").fetchone() == (True,)
    assert con.execute(bind("SELECT 1 LIMIT ? OFFSET ?", [5, 0])).fetchall() == [(1,)]


def test_refused() -> None:
    with pytest.raises(ValueError, match="2 placeholders for 1 values"):
        bind("SELECT ?, ?", [1])
    with pytest.raises(ValueError, match="no SQL literal"):
        literal(Decimal("NaN"))
    with pytest.raises(TypeError, match="no SQL literal for a object"):
        literal(object())


def test_a_statement_with_literals_does_not_import_pandas() -> None:
    program = (
        "import sys, duckdb\n"
        "from warehouse.sql_values import bind\n"
        "duckdb.connect().execute(bind('SELECT ?, ?, ?', ['a', 1, 2.5])).fetchall()\n"
        "print('pandas' in sys.modules)\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    ).stdout
    assert shown.strip() == "False"
