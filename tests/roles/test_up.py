"""`quarry up` on one machine: the API it starts looks for Dagster where `up` put it, and
Ctrl-C stops every process it started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from cli import run
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
        assert len(started) >= 5  # up, the API, the webserver, the daemon, the housekeeper
        up.send_signal(signal.SIGINT)
        assert up.wait(timeout=60) == 0

        # The code server the webserver started shuts itself down once the webserver
        # has gone (it logs "Shutting down Dagster code server"), a few seconds later.
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
    # The children of `quarry up` and `quarry orchestrator` start in the project's folder,
    # with its workspace.yaml (cli/ moved up a level once and this pointed outside it).
    assert (run.PROJECT_ROOT / "pyproject.toml").is_file()
    assert run._workspace(load_settings()) == run.PROJECT_ROOT / "workspace.yaml"
