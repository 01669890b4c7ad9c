"""What `make demo` (`quarry demo start`) does around the sync: the demo's key reused or
replaced (never piling up), ports checked before anything starts, and addresses said only
once the service answers."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from cli.demo_key import demo_key, key_file
from cli.readiness import Announcement, check_ports_free
from cli.run import Supervisor
from quarry.errors import ConfigurationError
from quarry.settings import Settings
from registry.db import Registry
from registry.keys import revoke_key
from registry.models import ApiKey
from tests.cli.runner import invoke, new_account
from tests.factories import free_port


def _live_keys(registry: Registry, account_id: str) -> list[str]:
    with registry.session() as session:
        return list(
            session.scalars(
                select(ApiKey.id).where(
                    ApiKey.account_id == account_id, ApiKey.revoked_at.is_(None)
                )
            )
        )


def test_the_demo_key_is_reused_then_replaced_and_revoked(home: Settings) -> None:
    first_account, second_account = new_account("Demo one"), new_account("Demo two")
    registry = Registry(home)
    try:
        first = demo_key(home, registry, first_account)
        assert not first.reused and first.replaced_id is None
        assert stat.S_IMODE(key_file(home).stat().st_mode) == 0o600
        again = demo_key(home, registry, first_account)
        assert again.reused and again.secret == first.secret
        assert len(_live_keys(registry, first_account)) == 1  # no new key per run

        # `quarry demo seed` made a newer demo account: its own key, the old one revoked.
        moved = demo_key(home, registry, second_account)
        assert not moved.reused and moved.secret != first.secret and moved.replaced_id
        assert _live_keys(registry, first_account) == []
        assert _live_keys(registry, second_account) != []

        # Revoked by hand (`quarry keys revoke`): a new one, nothing left to revoke.
        with registry.session() as session:
            revoke_key(session, _live_keys(registry, second_account)[0])
        fresh = demo_key(home, registry, second_account)
        assert not fresh.reused and fresh.replaced_id is None
        assert key_file(home).read_text().strip() == fresh.secret
        assert len(_live_keys(registry, second_account)) == 1
    finally:
        registry.dispose()


def test_a_port_in_use_stops_the_demo_before_anything_else(home: Settings) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigurationError) as refused:
            check_ports_free("127.0.0.1", {"the API": free_port(), "the UI": port}, "hint")
        assert f"the UI port {port} on 127.0.0.1 is taken" in refused.value.detail
        result = invoke("demo", "start", "--port", str(port), "--dagster-port", str(free_port()))
    assert result.exit_code == 1 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: the API port {port} on 127.0.0.1 is taken")
    assert "make demo PORT=" in line
    assert not (home.home / "registry.db").exists() or _no_account(home)


def _no_account(settings: Settings) -> bool:
    registry = Registry(settings)
    try:
        with registry.session() as session:
            return session.scalars(select(ApiKey.id)).first() is None
    finally:
        registry.dispose()


def test_an_address_is_said_once_its_service_answers(tmp_path: Path) -> None:
    """The child listens only after 2 s: nothing is said before, once after."""
    port = free_port()
    code = (
        "import time, http.server as h; time.sleep(2); "
        f"h.HTTPServer(('127.0.0.1', {port}), h.SimpleHTTPRequestHandler).serve_forever()"
    )
    server = [sys.executable, "-c", code]
    said: list[float] = []
    supervisor: Supervisor

    def say() -> None:
        said.append(time.monotonic())
        supervisor._stop_requested = True

    announcement = Announcement(f"http://127.0.0.1:{port}/", say)
    supervisor = Supervisor({"web": server}, env={}, cwd=tmp_path, announcements=[announcement])
    started = time.monotonic()
    assert supervisor.run() == 0
    assert len(said) == 1 and said[0] - started >= 2
    assert announcement.done


def test_make_demo_passes_its_ports() -> None:
    root = Path(__file__).resolve().parents[2]
    planned = subprocess.run(
        ["make", "-n", "-C", str(root), "demo", "PORT=8080", "DAGSTER_PORT=3080"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "quarry demo start --port 8080 --dagster-port 3080" in planned.stdout
    # Only make's command line sets them: a PORT some host put in the environment does not.
    default = subprocess.run(
        ["make", "-n", "-C", str(root), "demo"],
        capture_output=True, text=True, check=True, env={**os.environ, "PORT": "1234"},
    )  # fmt: skip
    assert "quarry demo start --port 8000 --dagster-port 3000" in default.stdout
