"""read_ahead: the same items in order, the source's error where it happened, the next
item produced while the consumer holds the current one, and a clean stop."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from quarry.read_ahead import read_ahead


def test_yields_every_item_in_order() -> None:
    assert list(read_ahead(range(100))) == list(range(100))
    assert list(read_ahead([])) == []
    assert list(read_ahead(range(10), depth=3)) == list(range(10))


def test_the_next_item_is_produced_while_the_consumer_holds_one() -> None:
    second_started = threading.Event()

    def source() -> Iterator[int]:
        yield 1
        second_started.set()
        yield 2

    items = read_ahead(source())
    assert next(items) == 1
    # Without read-ahead, the source only moves on when the consumer asks for item 2.
    assert second_started.wait(5)
    assert list(items) == [2]


def test_an_error_of_the_source_comes_after_the_items_before_it() -> None:
    def source() -> Iterator[int]:
        yield 1
        yield 2
        raise LookupError("page 3 is gone")

    seen: list[int] = []
    with pytest.raises(LookupError, match="page 3 is gone"):
        for item in read_ahead(source()):
            seen.append(item)
    assert seen == [1, 2]


def test_a_consumer_that_stops_stops_the_producer_and_closes_the_source() -> None:
    produced: list[int] = []
    closed = threading.Event()

    def source() -> Iterator[int]:
        try:
            for n in range(1_000):
                produced.append(n)
                yield n
        finally:
            closed.set()

    for item in read_ahead(source()):
        if item == 2:
            break
    assert closed.is_set()
    # The item in hand and at most one queued beyond it: never the whole source.
    assert len(produced) <= 5
    assert not any(t.name == "read-ahead" for t in threading.enumerate())
