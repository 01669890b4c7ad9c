"""Running one function in several threads at once, for the tests of races."""

from __future__ import annotations

import threading
from collections.abc import Callable


def errors_in_threads(target: Callable[[], None], count: int) -> list[BaseException]:
    """Call `target` in `count` threads released together; what they raised, if anything."""
    start = threading.Barrier(count)
    errors: list[BaseException] = []

    def run() -> None:
        start.wait()
        try:
            target()
        except BaseException as exc:  # collected for the caller's assertion
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors
