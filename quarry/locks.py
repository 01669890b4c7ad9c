"""PostgreSQL advisory locks: turns across processes and hosts that share a database.

A lock is named; its key is derived from the name, so two uses never collide by accident.
The lock is a session lock held by a connection of its own for the block.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager


def lock_key(name: str) -> int:
    """The 64-bit advisory lock key of `name`."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


@contextmanager
def advisory_lock(conninfo: str, name: str, timeout_seconds: float) -> Iterator[None]:
    """Hold the advisory lock `name` in the database of `conninfo` (a libpq URL or DSN)
    for the block; waits at most `timeout_seconds` for it."""
    import psycopg

    with psycopg.connect(conninfo, autocommit=True, connect_timeout=10) as pg:
        pg.execute(f"SET lock_timeout = '{max(1, int(timeout_seconds))}s'")
        pg.execute("SELECT pg_advisory_lock(%s)", (lock_key(name),))
        try:
            yield
        finally:
            pg.execute("SELECT pg_advisory_unlock(%s)", (lock_key(name),))
