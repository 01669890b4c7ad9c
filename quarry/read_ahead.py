"""Iterate in a background thread, one item ahead of the consumer.

A sync reads a platform page (network for Shopify, Parquet and Arrow work for the demo)
and then writes it (Parquet encoding, a lake commit): both mostly release the GIL, so
reading the next page while the current one is written keeps a second core busy.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

_END = object()
# How often a blocked producer looks whether the consumer went away.
_POLL_SECONDS = 0.1


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


@contextmanager
def read_ahead(items: Iterable[T], depth: int = 1) -> Iterator[Iterator[T]]:
    """The items of `items` in order, produced in a thread up to `depth` items ahead.

    An exception from `items` is raised to the consumer where its item would have come.
    Leaving the block, whether the items ran out, the consumer broke off or raised, stops
    the producer after the item in hand and closes `items` in the producer's thread,
    where it ran."""
    handoff: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        source = iter(items)
        try:
            for item in source:
                if not _offer(handoff, item, stop):
                    return
            _offer(handoff, _END, stop)
        except BaseException as error:  # handed to the consumer, who raises it
            _offer(handoff, _Failed(error), stop)
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()

    def consume() -> Iterator[T]:
        while True:
            item = handoff.get()
            if item is _END:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item  # type: ignore[misc]

    thread = threading.Thread(target=produce, name="read-ahead", daemon=True)
    thread.start()
    try:
        yield consume()
    finally:
        stop.set()
        thread.join()


def _offer(handoff: queue.Queue[object], item: object, stop: threading.Event) -> bool:
    """Put `item` when there is room; False once the consumer has stopped."""
    while not stop.is_set():
        try:
            handoff.put(item, timeout=_POLL_SECONDS)
            return True
        except queue.Full:
            continue
    return False
