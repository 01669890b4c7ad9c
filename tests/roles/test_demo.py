"""`make demo` (`quarry demo start`) from an empty home, as a new user runs it on other
ports: the account id, then "starting", then the addresses and a working key once the API
answers; and with QUARRY_LOG_FORMAT=json every line of its services is one of Quarry's
JSON lines (Dagster's included, no colours)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import TEST_SECRET_KEY
from tests.factories import free_port, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("several-machines")]

ROOT = Path(__file__).resolve().parents[2]


def test_demo_start_says_what_and_where_once_the_api_answers(tmp_path: Path) -> None:
    api_port, dagster_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QUARRY_", "DAGSTER_"))}
    env |= {
        "QUARRY_HOME": str(tmp_path / "home"),
        "QUARRY_SECRET_KEY": TEST_SECRET_KEY,
        "QUARRY_LOG_FORMAT": "json",
    }
    out, err = tmp_path / "demo.out", tmp_path / "demo.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        demo = subprocess.Popen(
            [str(Path(sys.executable).parent / "quarry"), "demo", "start", "--orders", "120",
             "--stores", "1", "--port", str(api_port), "--dagster-port", str(dagster_port)],
            cwd=ROOT, env=env, stdout=stdout, stderr=stderr, start_new_session=True,
        )  # fmt: skip
    try:
        wait_for(lambda: "Dagster UI ready on" in out.read_text(), "the demo's UI", timeout=300)
        text = out.read_text()
        account = re.search(r"^demo account (acc_\w+)", text, re.MULTILINE)
        key = re.search(r"^API key: (qk_\w+)$", text, re.MULTILINE)
        assert account and key, text
        order = [text.index(marker) for marker in (
            account.group(0), "starting the API", f"API ready on http://127.0.0.1:{api_port}",
            f"account: {account[1]}", key.group(0),
            f"Web console: http://127.0.0.1:{api_port}/console",
            f"curl -H 'Authorization: Bearer {key[1]}' 'http://127.0.0.1:{api_port}/v1/account'",
        )]  # fmt: skip
        assert order == sorted(order), text
        assert str(tmp_path / "home" / "demo-api-key") in text
        answer = httpx.get(
            f"http://127.0.0.1:{api_port}/v1/account",
            headers={"Authorization": f"Bearer {key[1]}"},
            timeout=10,
        )
        assert answer.status_code == 200 and answer.json()["account_id"] == account[1]
        # The printed console URL leads a person to the sign-in page.
        console = httpx.get(
            f"http://127.0.0.1:{api_port}/console", follow_redirects=True, timeout=10
        )
        assert console.status_code == 200 and "API key" in console.text
    finally:
        demo.send_signal(signal.SIGINT)
        assert demo.wait(timeout=60) == 0

    logged = err.read_text()
    assert "\x1b[" not in logged
    # The sync's progress lines are the command's report (docs/cli.md); the services' lines
    # are JSON, Dagster's with Quarry's field names.
    lines = [json.loads(line) for line in logged.splitlines() if line.startswith("{")]
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines), lines
    assert all("event" not in line and "timestamp" not in line for line in lines)
    assert any(line["logger"].startswith("dagster") for line in lines), lines
    assert any(line["logger"].startswith("uvicorn") for line in lines), lines
    services = logged[logged.index("{") :].splitlines()
    assert all(line.startswith("{") for line in services), services
