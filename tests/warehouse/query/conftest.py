"""The query tests' shared connection: the test data loaded once per module."""

from __future__ import annotations

import duckdb
import pytest

from tests.warehouse.query.data import connect


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    return connect()
