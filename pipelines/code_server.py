"""Quarry's Dagster code server: `dagster api grpc`, whose run processes start warm.

Stock Dagster starts each run in a new interpreter (multiprocessing's `spawn`), which imports
the code location again before it does any work: `import pipelines.definitions` is 1.5-2 s
of CPU in a fresh process (docs/benchmark.md, Session 20), more than a changed-rows export
of a 1M-order store does in its whole run. Here the server's runs come from a forkserver
(multiprocessing's `forkserver`) that imported the code location and built its repository
once, when the server started: each run is a fork of that process and begins with the
imports done. The forkserver holds no Python thread, connection or open lake; a run opens its own
as before.

Dagster's server takes its multiprocessing context in its constructor and offers no
setting for it, so this module replaces that one attribute (`_mp_ctx`) on a subclass and
refuses to start if a Dagster upgrade renamed it, rather than fall back silently
(tests/exports/test_end_to_end.py checks that a run is a child of the forkserver;
tests/pipelines/test_code_server.py that the forkserver holds no Python thread or open file).

Run as `python -m pipelines.code_server <options of dagster api grpc>`.
"""

from __future__ import annotations

import multiprocessing
import sys
from multiprocessing.context import BaseContext, SpawnContext
from typing import Any

# What the forkserver imports before it forks the first run (pipelines.run_preload).
PRELOAD = ["pipelines.run_preload"]
_CONTEXT_ATTRIBUTE = "_mp_ctx"


def warm_context() -> BaseContext:
    """A forkserver context that preloads the code location, its server started now: the
    first run is as warm as the others, and the server's start (not a run) pays the
    imports."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    from multiprocessing import forkserver

    forkserver.ensure_running()
    return context


def install() -> None:
    """Make Dagster's `api grpc` command build servers whose runs fork from a warm process."""
    from dagster._grpc import server

    class WarmApiServer(server.DagsterApiServer):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if not isinstance(getattr(self, _CONTEXT_ATTRIBUTE, None), SpawnContext):
                raise RuntimeError(
                    "Dagster's code server no longer keeps its run processes' multiprocessing "
                    f"context in `{_CONTEXT_ATTRIBUTE}`: pipelines/code_server.py needs "
                    "updating for this Dagster version"
                )
            setattr(self, _CONTEXT_ATTRIBUTE, warm_context())

    # `dagster api grpc` looks the class up in this module when it builds the server.
    server.DagsterApiServer = WarmApiServer  # type: ignore[misc]


def command(module: str, attribute: str, location: str, *options: str) -> list[str]:
    """The command running this server for the code location `location` (`module`'s
    `attribute`); `options`: more of `dagster api grpc`'s (its address, its log level)."""
    return [sys.executable, "-m", "pipelines.code_server", "-m", module, "-a", attribute,
            "--location-name", location, *options]  # fmt: skip


def main(arguments: list[str]) -> None:
    from dagster._cli import main as dagster_main

    install()
    sys.argv = ["dagster", "api", "grpc", *arguments]
    dagster_main()


if __name__ == "__main__":
    main(sys.argv[1:])
