"""One DuckDB transaction on a cursor, committed when the block ends."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb


@contextmanager
def transaction(cursor: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """BEGIN on `cursor`; COMMIT when the block ends, ROLLBACK when it raises."""
    cursor.execute("BEGIN")
    try:
        yield cursor
        cursor.execute("COMMIT")
    except BaseException:
        # A failed COMMIT has ended the transaction already; the error that matters is the
        # one being raised.
        with contextlib.suppress(duckdb.Error):
            cursor.execute("ROLLBACK")
        raise
