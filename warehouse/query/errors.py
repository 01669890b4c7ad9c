"""Errors of running a query (as opposed to InvalidQuery, which the checker raises).

Both subclass quarry.errors.QuarryError so the API's one handler renders them.
"""

from __future__ import annotations

from dataclasses import dataclass

from quarry.errors import QuarryError


@dataclass
class QueryTimedOut(QuarryError):
    """The query ran past its time limit and was interrupted."""

    status: int = 504
    title: str = "Query timed out"


@dataclass
class MissingExchangeRate(QuarryError):
    """Money must be converted but the warehouse has no rate on or before a needed day."""

    status: int = 500
    title: str = "Missing exchange rate"
