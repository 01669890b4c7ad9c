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
from pipelines.fleet.store_sensors import store_partitions
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
    quiet = _run_job().stderr
    assert "STEP_SUCCESS" not in quiet and "RUN_SUCCESS" not in quiet
    loud = _run_job(QUARRY_LOG_FORMAT="json", QUARRY_LOG_LEVEL="debug")
    events = [line for line in _json_lines(loud.stderr) if line["logger"] == "dagster"]
    # The run's last event: the step's own (STEP_SUCCESS) is logged while Dagster may
    # still be capturing the step's stderr into its compute log, and on a loaded machine
    # it landed there instead (about 1 run in 20), though the event log held it.
    assert any(
        line["level"] == "debug"
        and "warehouse_maintenance" in line["message"]
        and "RUN_SUCCESS" in line["message"]
        for line in events
    ), events


def test_dagster_commands_follow_the_settings(
    quarry_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    _gates, quiet = _orchestrator_commands(load_settings(), "127.0.0.1", 3000)
    # Unset: the daemon at WARNING (its INFO is a line per sensor tick), no JSON.
    assert quiet["dagster-daemon"][-2:] == ["--log-level", "warning"]
    assert quiet["dagster-webserver"][-2:] == ["--dagster-log-level", "info"]
    assert quiet["code-server"][-2:] == ["--log-level", "info"]
    monkeypatch.setenv("QUARRY_LOG_FORMAT", "json")
    monkeypatch.setenv("QUARRY_LOG_LEVEL", "DEBUG")
    _gates, loud = _orchestrator_commands(load_settings(), "127.0.0.1", 3000)
    assert loud["dagster-daemon"][-4:] == ["--log-level", "debug", "--log-format", "json"]
    assert loud["dagster-webserver"][-4:] == [
        "--dagster-log-level", "debug", "--log-format", "json",
    ]  # fmt: skip
    assert loud["code-server"][-4:] == ["--log-level", "debug", "--log-format", "json"]
    # The commands accept them (a typo here would stop `quarry up` at start); the code
    # server's are those of `dagster api grpc`, which it runs.
    daemon, webserver = loud["dagster-daemon"], loud["dagster-webserver"]
    code_server = loud["code-server"]
    api_grpc = [str(Path(sys.executable).with_name("dagster")), "api", "grpc"]
    for command, help_command in (
        (daemon, daemon[:2]),
        (webserver, webserver[:1]),
        (code_server, api_grpc),
    ):
        checked = subprocess.run([*help_command, "--help"], capture_output=True, text=True)
        assert all(option in checked.stdout for option in command if option.startswith("--"))


# A child of `quarry up` as Dagster's processes log: the code server's heartbeat warning in
# Dagster's coloured text (what the code servers the webserver starts print, with no
# --log-format of theirs), a line in Dagster's JSON, a grandchild's line, a stray print.
DAGSTER_CHILD = """
import logging, subprocess, sys
from dagster._utils.log import configure_loggers
configure_loggers(formatter=sys.argv[1], log_level="INFO")
logging.getLogger("dagster.code_server").warning("No heartbeat received in 20 seconds")
sys.stdout.flush()
if sys.argv[1] == "colored":
    subprocess.run([sys.executable, sys.argv[0], "json"], check=True)
    print("\\x1b[31mplain text\\x1b[0m", file=sys.stderr)
"""


def test_children_of_quarry_up_write_quarry_s_json_lines(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from cli.run import Supervisor

    script = tmp_path / "child.py"
    script.write_text(DAGSTER_CHILD)
    child = [sys.executable, str(script), "colored"]
    supervisor = Supervisor({"dagster-webserver": child}, env=dict(os.environ), cwd=tmp_path,
                            json_logs=True)  # fmt: skip
    assert supervisor.run() == 1  # the child ended: the supervisor stops
    lines = _json_lines(capfd.readouterr().err.split("error:")[0])
    assert "\x1b" not in json.dumps(lines)
    heartbeat = [line for line in lines if line["logger"] == "dagster.code_server"]
    assert len(heartbeat) == 2 and {line["level"] for line in heartbeat} == {"warning"}
    assert all(line["message"] == "No heartbeat received in 20 seconds" for line in heartbeat)
    assert all("event" not in line and "timestamp" not in line for line in lines)
    (stray,) = [line for line in lines if line["message"] == "plain text"]
    assert stray["logger"] == "dagster-webserver"


# A code server as the daemon and the webserver start it (`--log-level error`), after its
# definitions ran Quarry's resource (which sets up the root logger) and Dagster's
# get_dagster_logger() (which sets the "dagster" logger to DEBUG).
CODE_SERVER = """
import logging
from dagster import get_dagster_logger
from dagster._utils.log import configure_loggers
from quarry import logs
from quarry.settings import load_settings

configure_loggers(formatter="colored", log_level="ERROR")
logs.configure_unconfigured(load_settings())
get_dagster_logger()
logging.getLogger("dagster.code_server").warning("No heartbeat received in 20 seconds")
logging.getLogger("dagster.code_server").info("Shutting down Dagster code server")
logging.getLogger("dagster.code_server").error("Error while importing code")
logging.getLogger("exports.jobs.execute").warning("Quarry's own warning")
"""


def test_a_code_server_at_error_prints_only_errors(quarry_env: Settings) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CODE_SERVER], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    printed = done.stdout + done.stderr
    assert "No heartbeat" not in printed and "Shutting down" not in printed
    assert printed.count("Error while importing code") == 1  # Dagster's handler, once
    assert "Quarry's own warning" in done.stderr


def test_a_child_s_traceback_is_error_lines() -> None:
    from quarry.logs import as_quarry_json

    traceback = ["Traceback (most recent call last):", '  File "x.py", line 1, in <module>',
                 "ValueError: no"]  # fmt: skip
    lines = [json.loads(as_quarry_json(text + "\n", "api")) for text in traceback]
    assert [(line["level"], line["logger"]) for line in lines] == [("error", "api")] * 3
    assert [line["message"] for line in lines] == traceback
    assert json.loads(as_quarry_json("serving\n", "api"))["level"] == "info"
    assert as_quarry_json("\n", "api") == ""
