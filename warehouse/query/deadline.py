"""Query deadlines: one watchdog thread per process interrupts the cursors whose time is up.

A `threading.Timer` per query started and joined a thread each time, 1.5-2 ms of a small
query's 15-25 ms (pyinstrument, 100 rollup queries in process). The watchdog keeps the
deadlines in a heap and sleeps until the earliest; a query that ends in time only marks
its entry done.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)


@dataclass(order=True)
class _Entry:
    due: float
    number: int
    interrupt: Callable[[], None] = field(compare=False)
    done: bool = field(default=False, compare=False)


class Watchdog:
    """Calls each watched `interrupt` once its seconds have passed, unless cancelled."""

    def __init__(self) -> None:
        self._heap: list[_Entry] = []
        self._numbers = itertools.count()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def watch(self, seconds: float, interrupt: Callable[[], None]) -> _Entry:
        entry = _Entry(time.monotonic() + seconds, next(self._numbers), interrupt)
        with self._changed:
            heapq.heappush(self._heap, entry)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="quarry-query-deadlines", daemon=True
                )
                self._thread.start()
            elif self._heap[0] is entry:
                self._changed.notify()
        return entry

    def cancel(self, entry: _Entry) -> None:
        # Left in the heap: the thread drops it when it comes due (a heap has no cheap
        # removal, and a done entry costs one comparison).
        entry.done = True

    def _run(self) -> None:
        with self._changed:
            while True:
                while self._heap and self._heap[0].done:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._changed.wait()
                    continue
                wait = self._heap[0].due - time.monotonic()
                if wait > 0:
                    self._changed.wait(wait)
                    continue
                entry = heapq.heappop(self._heap)
                # The interrupt runs outside the lock: it may take a moment, and other
                # queries must still register meanwhile.
                self._changed.release()
                try:
                    if not entry.done:
                        entry.interrupt()
                except Exception:  # a cursor closed meanwhile: nothing left to stop
                    logger.debug("query deadline: the interrupt failed", exc_info=True)
                finally:
                    self._changed.acquire()


WATCHDOG = Watchdog()
