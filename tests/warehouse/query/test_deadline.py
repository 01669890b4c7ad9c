"""The query watchdog: each deadline interrupts once when it comes due, in due order; a
cancelled one never does; a failing interrupt does not stop the others."""

from __future__ import annotations

import threading
import time

from warehouse.query.deadline import Watchdog


def test_deadlines_fire_in_due_order_and_cancelled_ones_never() -> None:
    watchdog = Watchdog()
    fired: list[str] = []
    done = threading.Event()

    def mark(name: str) -> None:
        fired.append(name)
        if name == "last":
            done.set()

    late = watchdog.watch(0.3, lambda: mark("last"))
    cancelled = watchdog.watch(0.1, lambda: mark("cancelled"))
    watchdog.watch(0.15, lambda: mark("second"))
    # Registered last but due first: the sleeping thread must wake for it.
    watchdog.watch(0.05, lambda: mark("first"))
    watchdog.cancel(cancelled)
    assert done.wait(5)
    assert fired == ["first", "second", "last"]
    watchdog.cancel(late)  # after it fired: nothing happens


def test_a_failing_interrupt_leaves_the_watchdog_working() -> None:
    watchdog = Watchdog()
    fired = threading.Event()

    def broken() -> None:
        raise RuntimeError("the cursor was closed")

    watchdog.watch(0.01, broken)
    time.sleep(0.05)
    watchdog.watch(0.01, fired.set)
    assert fired.wait(5)
