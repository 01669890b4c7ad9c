"""Throughput at a fixed concurrency: HTTP with wrk (Debian's package), and the same read
run directly in DuckDB by as many threads, each on its own cursor of one snapshot.

Without wrk, HTTP load comes from an asyncio client in a child process; it spends CPU
the server would otherwise have on a 2-core machine, so the figure says which tool made it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

WRK_THREADS = 2
_RATE = re.compile(r"Requests/sec:\s*([0-9.]+)")
_NON_2XX = re.compile(r"Non-2xx or 3xx responses:\s*(\d+)")
_ERRORS = re.compile(r"Socket errors:.*")


@dataclass(frozen=True)
class Throughput:
    per_second: float
    tool: str
    failures: int
    note: str = ""


def http_throughput(url: str, key: str, connections: int, seconds: float) -> Throughput:
    """Requests per second for GET `url` with `connections` keep-alive connections."""
    wrk = shutil.which("wrk")
    if wrk is None:
        return _python_load(url, key, connections, seconds)
    command = [
        wrk, f"-t{min(WRK_THREADS, connections)}", f"-c{connections}", f"-d{seconds:g}s",
        "--latency", "-H", f"Authorization: Bearer {key}", url,
    ]  # fmt: skip
    completed = subprocess.run(
        command,
        capture_output=True,
        text=True,
        check=True,
        timeout=seconds + 60,
    )
    out = completed.stdout
    rate = _RATE.search(out)
    if rate is None:
        raise RuntimeError(f"wrk printed no rate: {out[-500:]}")
    failures = _NON_2XX.search(out)
    errors = _ERRORS.search(out)
    return Throughput(
        float(rate.group(1)),
        "wrk",
        int(failures.group(1)) if failures else 0,
        errors.group(0) if errors else "",
    )


def _python_load(url: str, key: str, connections: int, seconds: float) -> Throughput:
    script = PYTHON_LOAD.format(url=url, key=key, connections=connections, seconds=seconds)
    completed = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=seconds + 60,
    )
    done, failed = (int(x) for x in completed.stdout.split())
    return Throughput(done / seconds, "python asyncio client (wrk not installed)", failed)


PYTHON_LOAD = """
import asyncio, time, httpx
async def main():
    deadline = time.monotonic() + {seconds}
    counts = [0, 0]
    limits = httpx.Limits(max_connections={connections})
    headers = {{"Authorization": "Bearer {key}"}}
    async with httpx.AsyncClient(limits=limits, headers=headers, timeout=60) as client:
        async def worker():
            while time.monotonic() < deadline:
                response = await client.get("{url}")
                counts[response.status_code != 200] += 1
        await asyncio.gather(*(worker() for _ in range({connections})))
    print(counts[0], counts[1])
asyncio.run(main())
"""


def thread_throughput(
    open_cursor: Callable[[], Any], read: Callable[[Any], Any], threads: int, seconds: float
) -> Throughput:
    """Reads per second of `read(cursor)` by `threads` threads for `seconds`, each thread
    holding its own cursor (`open_cursor` returns a context manager)."""
    counts = [0] * threads
    start = threading.Barrier(threads + 1)
    stop_at: list[float] = []

    def worker(index: int) -> None:
        with open_cursor() as cursor:
            read(cursor)  # warm, before the clock starts
            start.wait()
            while time.monotonic() < stop_at[0]:
                read(cursor)
                counts[index] += 1

    pool = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(threads)]
    for thread in pool:
        thread.start()
    stop_at.append(time.monotonic() + 3600)  # placeholder until every thread is warm
    start.wait()
    began = time.monotonic()
    stop_at[0] = began + seconds
    for thread in pool:
        thread.join()
    elapsed = time.monotonic() - began
    return Throughput(sum(counts) / elapsed, f"{threads} threads, one DuckDB cursor each", 0)
