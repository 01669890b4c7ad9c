"""read_ahead: the same items in order, the source's error where it happened, the next
item produced while the consumer holds the current one, and a clean stop however the
consumer leaves."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from quarry.read_ahead import read_ahead


def test_yields_every_item_in_order() -> None:
    with read_ahead(range(100)) as items:
        assert list(items) == list(range(100))
    with read_ahead([]) as items:
        assert list(items) == []
    with read_ahead(range(10), depth=3) as items:
        assert list(items) == list(range(10))


def test_the_next_item_is_produced_while_the_consumer_holds_one() -> None:
    second_started = threading.Event()

    def source() -> Iterator[int]:
        yield 1
        second_started.set()
        yield 2

    with read_ahead(source()) as items:
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
    with pytest.raises(LookupError, match="page 3 is gone"), read_ahead(source()) as items:
        for item in items:
            seen.append(item)
    assert seen == [1, 2]


@pytest.mark.parametrize("leave", ["break", "raise"])
def test_a_consumer_that_leaves_stops_the_producer_and_closes_the_source(leave: str) -> None:
    produced: list[int] = []
    closed = threading.Event()

    def source() -> Iterator[int]:
        try:
            for n in range(1_000):
                produced.append(n)
                yield n
        finally:
            closed.set()

    try:
        with read_ahead(source()) as items:
            for item in items:
                if item == 2 and leave == "break":
                    break
                if item == 2:
                    raise RuntimeError("the writer failed")
    except RuntimeError:
        assert leave == "raise"
    # Once the block is left, the producer has stopped and closed its source: nothing
    # waits for the garbage collector, whatever holds on to the traceback.
    assert closed.is_set()
    assert not any(t.name == "read-ahead" for t in threading.enumerate())
    # The item in hand and at most one queued beyond it: never the whole source.
    assert len(produced) <= 5
