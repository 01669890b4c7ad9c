"""`quarry up` on one machine: the API it starts looks for Dagster where `up` put it, and
Ctrl-C stops every process it started."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from cli import run
from cli.readiness import MAX_SOCKET_PATH
from quarry.errors import ConfigurationError
from quarry.settings import Settings, load_settings
from tests.factories import free_port, wait_for
from tests.roles.deployment import descendants

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("several-machines")]

ROOT = Path(__file__).resolve().parents[2]


def _ready(url: str) -> dict[str, object] | None:
    try:
        response = httpx.get(url, timeout=5)
    except httpx.HTTPError:
        return None
    return response.json() if response.status_code in (200, 503) else None


def test_up_tells_the_api_where_dagster_is_and_stops_everything(tmp_path: Path) -> None:
    api_port, dagster_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QUARRY_", "DAGSTER_"))}
    env |= {
        "QUARRY_HOME": str(tmp_path / "home"),
        # Not where `up` starts Dagster: `up` must tell the API itself.
        "QUARRY_DAGSTER_URL": "http://127.0.0.1:9",
    }
    log = (tmp_path / "up.log").open("wb")
    up = subprocess.Popen(
        [str(Path(sys.executable).parent / "quarry"), "up", "--port", str(api_port),
         "--dagster-port", str(dagster_port)],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:

        def reachable() -> bool:
            ready = _ready(f"http://127.0.0.1:{api_port}/readyz")
            exports = ready.get("exports") if ready else None
            return isinstance(exports, dict) and exports.get("dagster_webserver") == "reachable"

        wait_for(reachable, "the API to reach the Dagster that `up` started", timeout=240)
        started = descendants(up.pid)
        # up, the API, the code server and its forkserver, the webserver, the daemon, the
        # housekeeper
        assert len(started) >= 7
        up.send_signal(signal.SIGINT)
        assert up.wait(timeout=60) == 0

        # Every process `up` started is gone, the code server's forkserver included.
        def alive() -> list[int]:
            return [p for p in started if Path(f"/proc/{p}").exists()]

        deadline = time.monotonic() + 45
        while alive() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert alive() == [], (alive(), (tmp_path / "up.log").read_text()[-2000:])
    finally:
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGKILL)


def test_the_roles_run_from_the_project_and_its_workspace(quarry_env: Settings) -> None:
    # The children of `quarry up` and `quarry orchestrator` start in the project's folder
    # (cli/ moved up a level once and this pointed outside it).
    assert (run.PROJECT_ROOT / "pyproject.toml").is_file()


def _workspace_entry(settings: Settings) -> dict[str, object]:
    written = yaml.safe_load((settings.resolved_dagster_home / "workspace.yaml").read_text())
    [entry] = written["load_from"]
    return entry["grpc_server"]


def test_up_serves_the_code_location_from_its_own_warm_code_server(
    quarry_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = load_settings()
    gates, commands = run._orchestrator_commands(settings, "127.0.0.1", 3999)
    # The code server starts first, and the others once its socket accepts.
    assert next(iter(commands)) == run.CODE_SERVER and list(gates) == [run.CODE_SERVER]
    socket_path = run.code_server_socket(settings)
    assert commands[run.CODE_SERVER][1:3] == ["-m", "pipelines.code_server"]
    assert str(socket_path) in commands[run.CODE_SERVER]
    assert _workspace_entry(settings) == {"socket": str(socket_path), "location_name": "quarry"}
    assert gates[run.CODE_SERVER]() is False  # nothing serves there yet

    monkeypatch.setenv("QUARRY_WORKER_ADDRESS", "worker-1:4000")
    settings = load_settings()
    gates, commands = run._orchestrator_commands(settings, "127.0.0.1", 3999)
    assert run.CODE_SERVER not in commands and gates == {}
    assert _workspace_entry(settings) == {
        "host": "worker-1",
        "port": 4000,
        "location_name": "quarry",
    }


def test_a_second_orchestrator_on_a_home_is_refused_before_it_takes_the_socket(
    quarry_env: Settings,
) -> None:
    settings = load_settings()
    path = run.code_server_socket(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as first:
        first.bind(str(path))
        first.listen()
        with pytest.raises(ConfigurationError, match="already serves"):
            run._orchestrator_commands(settings, "127.0.0.1", 3999)
        assert path.exists()  # the first one's socket is left alone
    # Once nothing listens, a socket file left behind is taken over.
    gates, _commands = run._orchestrator_commands(settings, "127.0.0.1", 3999)
    assert not path.exists() and list(gates) == [run.CODE_SERVER]


def test_a_home_too_deep_for_a_socket_path_gets_one_in_the_temporary_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = tmp_path / ("d" * 90) / "home"
    monkeypatch.setenv("QUARRY_HOME", str(deep))
    settings = load_settings()
    path = run.code_server_socket(settings)
    assert len(str(path).encode()) <= MAX_SOCKET_PATH and not path.is_relative_to(deep)
    # Its own per home: another deep home gets another.
    monkeypatch.setenv("QUARRY_HOME", str(tmp_path / ("e" * 90) / "home"))
    assert run.code_server_socket(load_settings()) != path
