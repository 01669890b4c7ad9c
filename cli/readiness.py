"""Saying when a service is ready, not when it was started: what `quarry up` and `quarry
demo start` print once the API (or the Dagster UI) answers, and the check that their
ports are free before anything starts."""

from __future__ import annotations

import hashlib
import socket
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from quarry.errors import ConfigurationError

# How long one probe may take: the supervisor probes between its checks of the children.
PROBE_TIMEOUT_SECONDS = 0.5


@dataclass
class Announcement:
    """`say()` once a GET of `url` answers 200 (until then nothing is printed)."""

    url: str
    say: Callable[[], None]
    done: bool = False

    def poll(self) -> bool:
        """Probe once unless done; True once it has been said."""
        if not self.done and answers(self.url):
            self.say()
            self.done = True
        return self.done


def answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=PROBE_TIMEOUT_SECONDS).status_code == 200
    except httpx.HTTPError:
        return False


# A Unix socket's path holds at most 107 bytes on Linux.
MAX_SOCKET_PATH = 100


def socket_path(preferred: Path) -> Path:
    """`preferred`, or when that path is too long for a Unix socket, one of the same name in
    the temporary folder, distinct per preferred path."""
    if len(str(preferred).encode()) <= MAX_SOCKET_PATH:
        return preferred
    digest = hashlib.sha256(str(preferred).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"quarry-{digest}-{preferred.name}"


def accepts(path: Path) -> bool:
    """Whether a server accepts connections on the Unix socket at `path` (a gRPC code
    server binds it only once it has loaded its code)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(PROBE_TIMEOUT_SECONDS)
        try:
            probe.connect(str(path))
        except OSError:
            return False
        return True


def check_ports_free(host: str, ports: dict[str, int], hint: str) -> None:
    """ConfigurationError naming the first of `ports` (what -> port) that something
    already listens on, with `hint` on how to choose another."""
    for what, port in ports.items():
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            # As uvicorn and Dagster bind: a port in TIME_WAIT after a restart is free.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, port))
            except OSError as exc:
                raise ConfigurationError(
                    f"{what} port {port} on {host} is taken ({exc.strerror or exc}): {hint}"
                ) from exc
