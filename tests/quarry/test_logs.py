"""QUARRY_LOG_FORMAT and QUARRY_LOG_LEVEL, through the real processes: the CLI, the API
under uvicorn (its access log included), a process of the code location; Dagster's
commands get the same choice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from cli.run import _orchestrator_commands
from quarry.settings import Settings, load_settings
from tests.conftest import TEST_SECRET_KEY
from tests.factories import running_api, wait_for
from tests.quarry.test_cli_process import assert_one_line_error, run


def _json_lines(text: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    for line in lines:
        assert {"time", "level", "logger", "message"} <= set(line), line
        assert line["time"].endswith("Z")
    return lines


def test_the_cli_writes_json_lines(quarry_env: Settings) -> None:
    result = run("accounts", "list", QUARRY_LOG_FORMAT="json", QUARRY_LOG_LEVEL="info")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ID", "CURRENCY", "TIMEZONE", "NAME"]
    # Migrating the new registry logs at INFO: every line of it is one JSON object.
    logged = _json_lines(result.stderr)
    assert any(line["logger"].startswith("alembic") for line in logged)
    quiet = run("accounts", "list", QUARRY_LOG_FORMAT="json")  # the CLI's WARNING
    assert quiet.returncode == 0 and quiet.stderr == ""


@pytest.mark.parametrize(
    ("variable", "value", "allowed"),
    [("QUARRY_LOG_FORMAT", "xml", "'text' or 'json'"), ("QUARRY_LOG_LEVEL", "loud", "'ERROR'")],
)
def test_a_bad_value_is_one_line_naming_it(
    quarry_env: Settings, variable: str, value: str, allowed: str
) -> None:
    assert_one_line_error(run("accounts", "list", **{variable: value}), variable, allowed)


def test_the_api_writes_json_lines_with_request_ids(tmp_path: Path) -> None:
    log = tmp_path / "api.log"
    key = "qk_" + "S3cr3tKeyMaterial" * 3
    with running_api(tmp_path / "home", TEST_SECRET_KEY, log, QUARRY_LOG_FORMAT="json") as port:
        # A key where it does not belong: the access line masks it, in JSON as in text.
        response = httpx.get(
            f"http://127.0.0.1:{port}/healthz?api_key={key}",
            headers={"X-Request-Id": "trace-42"},
        )
        assert response.status_code in (200, 503)
        wait_for(lambda: "trace-42" in log.read_text(), "the access line", timeout=10)
    text = log.read_text()
    logged = _json_lines(text)
    (access,) = [line for line in logged if line.get("request_id") == "trace-42"]
    assert access["logger"] == "uvicorn.access" and "GET /healthz" in access["message"]
    assert "api_key=qk_***" in access["message"] and key not in text
    # uvicorn's own lines from its first one (written before the app is built) to its last.
    messages = [line["message"] for line in logged if line["logger"] == "uvicorn.error"]
    assert messages[0].startswith("Started server process")
    assert messages[-1].startswith("Finished server process")
    # Outside a request there is no request id, not a placeholder.
    assert all(line.get("request_id") != "-" for line in logged)


# A process of the code location, as a code server or a run worker is: nothing has set up
# logging when Quarry's resource is set up (here for the partitions sensor's tick).
CODE_LOCATION = """
import logging
from dagster import build_sensor_context, instance_for_test
from pipelines.resources import QuarryResource
from pipelines.sync.sensors import store_partitions
from quarry.redaction import redacting

with instance_for_test() as instance:
    with build_sensor_context(instance=instance, resources={"quarry": QuarryResource()}) as context:
        store_partitions(context)
log = logging.getLogger("exports.jobs.execute")
log.info("not shown: the code location logs WARNING unless asked")
with redacting(["hunter2-password"]):
    try:
        raise OSError("login refused for hunter2-password")
    except OSError:
        log.exception("export job %s failed", "job_1")
"""


def test_the_code_location_writes_json_lines(quarry_env: Settings) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CODE_LOCATION],
        env=os.environ | {"QUARRY_LOG_FORMAT": "json"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    (failed,) = _json_lines(done.stderr)
    assert failed["logger"] == "exports.jobs.execute" and failed["level"] == "error"
    assert failed["message"] == "export job job_1 failed"
    assert "OSError: login refused for ***" in failed["exception"]
    assert "hunter2" not in done.stderr


# A run of one of Quarry's jobs, as a run worker executes it: the events Dagster stores, and
# what its console logger printed.
RUN = """
from dagster import DagsterEventType, instance_for_test
from pipelines.definitions import defs

with instance_for_test() as instance:
    result = defs.get_job_def("warehouse_maintenance").execute_in_process(instance=instance)
    stored = instance.get_records_for_run(result.run_id).records
    print(sum(r.event_log_entry.dagster_event_type == DagsterEventType.STEP_SUCCESS
              for r in stored))
"""


def _run_job(**env: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-c", RUN],
        env=os.environ | env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1"]  # the step's success is in the event log either way
    return done


def test_a_runs_events_follow_the_settings(quarry_env: Settings) -> None:
    # Dagster's own console logger printed every event at DEBUG, in its own text format.
    assert "STEP_SUCCESS" not in _run_job().stderr
    loud = _run_job(QUARRY_LOG_FORMAT="json", QUARRY_LOG_LEVEL="debug")
    events = [line for line in _json_lines(loud.stderr) if line["logger"] == "dagster"]
    assert any(
        line["level"] == "debug" and "maintain_warehouse - STEP_SUCCESS" in line["message"]
        for line in events
    ), events


def test_dagster_commands_follow_the_settings(
    quarry_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    quiet = _orchestrator_commands(load_settings(), "127.0.0.1", 3000)
    # Unset: the daemon at WARNING (its INFO is a line per sensor tick) and its code
    # servers at ERROR (a WARNING each time it replaces one), no JSON.
    assert quiet["dagster-daemon"][-4:] == [
        "--log-level", "warning", "--code-server-log-level", "error",
    ]  # fmt: skip
    assert quiet["dagster-webserver"][-2:] == ["--dagster-log-level", "info"]
    monkeypatch.setenv("QUARRY_LOG_FORMAT", "json")
    monkeypatch.setenv("QUARRY_LOG_LEVEL", "DEBUG")
    loud = _orchestrator_commands(load_settings(), "127.0.0.1", 3000)
    assert loud["dagster-daemon"][-6:] == [
        "--log-level", "debug", "--code-server-log-level", "debug", "--log-format", "json",
    ]  # fmt: skip
    assert loud["dagster-webserver"][-4:] == [
        "--dagster-log-level", "debug", "--log-format", "json",
    ]  # fmt: skip
    # The commands accept them (a typo here would stop `quarry up` at start).
    daemon, webserver = loud["dagster-daemon"], loud["dagster-webserver"]
    for command, help_command in ((daemon, daemon[:2]), (webserver, webserver[:1])):
        checked = subprocess.run([*help_command, "--help"], capture_output=True, text=True)
        assert all(option in checked.stdout for option in command if option.startswith("--"))
