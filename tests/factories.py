"""Shared test factories: registry rows with sensible defaults, and the small process and
network helpers many test files need. One copy each; a test file that needs a variant
passes arguments rather than writing its own."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from registry.accounts import create_account, create_store
from registry.db import Registry
from registry.principals import Principal, StoreView


def add_account(registry: Registry, name: str = "Acme", **fields: str) -> str:
    """A new account's id; currency USD and zone America/New_York unless given."""
    values = {"currency": "USD", "timezone": "America/New_York"} | fields
    with registry.session() as session:
        return create_account(session, name=name, **values).id


def add_store(registry: Registry, account_id: str, name: str = "Main", **fields: str) -> str:
    """A new store's id, on the demo platform in EUR and Europe/Berlin unless given; its
    domain is derived from the name."""
    values = {"currency": "EUR", "timezone": "Europe/Berlin", "platform": "demo"} | fields
    with registry.session() as session:
        return create_store(
            session, account_id=account_id, name=name, domain=f"{name.lower()}.example", **values
        ).id


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def dead_pid() -> int:
    """The pid of a process that has ended (and been waited for)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def parent_pid(pid: int) -> int:
    """The parent of `pid`, from /proc/PID/stat ("pid (comm) state ppid ..."; comm may hold
    spaces, not ")"). OSError once the process is gone."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def wait_for(check: Callable[[], Any], what: str, timeout: float = 90.0, every: float = 0.5) -> Any:
    """`check()`'s first truthy value, polled every `every` s; AssertionError naming `what`
    after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def principal_for(
    account_id: str, readable: Sequence[str], account_stores: Sequence[str] | None = None
) -> Principal:
    """A key's Principal as registry.principals loads it: reading `readable` of the
    account's stores (`account_stores`, default: the readable ones)."""
    return Principal(
        key_id="key_test",
        account_id=account_id,
        account_name="Acme",
        subscription_id="sub_test",
        api_enabled=True,
        currency="USD",
        timezone="UTC",
        scopes=("read_data", "exports"),
        stores=tuple(
            StoreView(s, s, f"{s}.example", "USD", "UTC", "active", None) for s in readable
        ),
        account_store_ids=tuple(sorted(account_stores or readable)),
    )


@contextmanager
def running_server(
    command: list[str],
    home: Path,
    secret_key: str,
    log_path: Path,
    ready: Callable[[str], bool],
    **env: str,
) -> Iterator[None]:
    """`command` serving the API over `home` (Dagster unreachable, `env` added to the
    environment, output in `log_path`), until `ready(log text)`; stopped after."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("QUARRY_")}
    environment.update(
        QUARRY_HOME=str(home),
        QUARRY_SECRET_KEY=secret_key,
        QUARRY_DAGSTER_URL="http://127.0.0.1:9",
        **env,
    )
    with log_path.open("w") as log:
        process = subprocess.Popen(
            command, env=environment, stdout=log, stderr=subprocess.STDOUT,
            cwd=Path(__file__).resolve().parents[1], start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while not ready(log_path.read_text()):
            assert process.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, log_path.read_text()[-3000:]
            time.sleep(0.2)
        yield
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@contextmanager
def running_api(home: Path, secret_key: str, log_path: Path, **env: str) -> Iterator[int]:
    """`quarry serve` on a free loopback port (running_server); yields the port."""
    port = free_port()
    quarry = Path(sys.executable).parent / "quarry"
    command = [str(quarry), "serve", "--host", "127.0.0.1", "--port", str(port)]
    started = "Application startup complete"
    with running_server(command, home, secret_key, log_path, lambda log: started in log, **env):
        yield port
