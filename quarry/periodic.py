"""Doing something every few seconds beside a block of work, in a thread of its own (an
export job's heartbeat, following a run's events): one way, so each such thread starts,
stops and is joined the same way."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def repeating(every: float, task: Callable[[], None], *, name: str) -> Iterator[None]:
    """Calls `task` every `every` seconds while the block runs (not at once), in a daemon
    thread named `name`; joined when the block ends. `task` handles its own errors: one
    that escapes ends the repetition, not the block."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every):
            task()

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
