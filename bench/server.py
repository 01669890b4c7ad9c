"""The services a benchmark talks to, as child processes on free loopback ports: the API
under uvicorn, and Dagster's webserver and daemon for export runs.

Each child gets its own session (process group), so stopping it stops what it started too
(the webserver runs a code server under it): SIGTERM to the group, up to STOP_GRACE_SECONDS
to go, then SIGKILL (Dagster's processes ignore SIGTERM for a while). Output goes to a log
file per service, whose tail is quoted when a service does not come up.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import yaml

from cli.readiness import accepts, socket_path
from pipelines import code_server

PROJECT_ROOT = Path(__file__).resolve().parents[1]
STOP_GRACE_SECONDS = 10.0
LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A port nobody listens on right now (another process could still take it first, which
    only makes the service fail to start, loudly)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def tool(name: str) -> str:
    """An executable of this virtualenv (beside the running Python)."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else name


class ServiceFailed(RuntimeError):
    """A service did not come up; the message ends with the tail of its log."""


class Service:
    """One child process in its own process group, logging to `log_path`."""

    def __init__(
        self, name: str, command: Sequence[str], env: Mapping[str, str], log_path: Path
    ) -> None:
        self.name, self.command, self.env, self.log_path = name, list(command), env, log_path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.command,
                env=dict(self.env),
                cwd=PROJECT_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_until(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        """Poll `ready` until it says yes; ServiceFailed when the process exits or time runs
        out first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                code = None if self.process is None else self.process.returncode
                raise ServiceFailed(f"{self.name} exited (status {code}) {self._tail()}")
            with contextlib.suppress(httpx.HTTPError, OSError):
                if ready():
                    return
            time.sleep(0.2)
        raise ServiceFailed(f"{self.name}: {what} not within {timeout:g} s {self._tail()}")

    def stop(self) -> None:
        process = self.process
        if process is None:
            return
        _signal_group(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        while process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        # The group too when the leader is gone: its children may still run.
        _signal_group(process.pid, signal.SIGKILL)
        process.wait()
        self.process = None

    def _tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return ""
        return f"(log {self.log_path}):\n" + "\n".join(text)


def _signal_group(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


class ApiServer:
    """The API as `quarry serve` runs it: uvicorn with the app factory, spawned workers."""

    def __init__(self, env: Mapping[str, str], log_dir: Path, *, workers: int = 1) -> None:
        self.port = free_port()
        self.url = f"http://{LOOPBACK}:{self.port}"
        command = [
            sys.executable, "-m", "uvicorn", "api.main:create_app", "--factory",
            "--host", LOOPBACK, "--port", str(self.port), "--workers", str(workers),
            # Access logs are an operator's choice; a benchmark would measure the log file.
            "--no-access-log", "--log-level", "warning",
        ]  # fmt: skip
        self.service = Service("api", command, env, log_dir / "api.log")

    def __enter__(self) -> ApiServer:
        self.service.start()
        try:
            self.service.wait_until(self._healthy, 120, "/healthz answering")
        except BaseException:
            self.service.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.service.stop()

    def _healthy(self) -> bool:
        return httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200


# The bench's code locations: the project's, and the floor job's. Each is served by a code
# server as `quarry up` starts it (pipelines.code_server: runs fork from a warm process), so
# the floor is the fixed cost of a run under Quarry's own launcher, not stock Dagster's.
LOCATIONS = {"quarry": ("pipelines.definitions", "defs"), "bench": ("bench.floor_job", "defs")}
# The periodic sync and rates schedules start RUNNING: a tick during the benchmark would
# put a sync run beside the measured work.
SCHEDULES_TO_STOP = ("hourly_sync", "daily_exchange_rates")
SCHEDULE_QUERY = """query ($selector: ScheduleSelector!) { scheduleOrError(scheduleSelector:
  $selector) { __typename ... on Schedule { scheduleState { id status } } } }"""
STOP_SCHEDULE = """mutation ($id: String) { stopRunningSchedule(id: $id) { __typename } }"""
LOCATIONS_QUERY = """{ workspaceOrError { __typename ... on Workspace {
  locationEntries { name loadStatus locationOrLoadError { __typename } } } } }"""


class DagsterServices:
    """The bench's code servers, then dagster-webserver and dagster-daemon on a workspace of
    them, as `quarry up` runs them; `port` is chosen up front so the API can be told where
    Dagster is."""

    def __init__(self, env: Mapping[str, str], dagster_home: Path, log_dir: Path, port: int):
        self.port = port
        self.url = f"http://{LOOPBACK}:{port}"
        workspace = dagster_home / "bench-workspace.yaml"
        dagster_home.mkdir(parents=True, exist_ok=True)
        self.sockets = {
            name: socket_path(dagster_home / f"bench-{name}.sock") for name in LOCATIONS
        }
        entries = [{"grpc_server": {"socket": str(path), "location_name": name}}
                   for name, path in self.sockets.items()]  # fmt: skip
        workspace.write_text(yaml.safe_dump({"load_from": entries}, sort_keys=False))
        self.code_servers = [
            Service(
                f"code-server-{name}",
                code_server.command(module, attribute, name, "--socket", str(self.sockets[name])),
                env,
                log_dir / f"code-server-{name}.log",
            )
            for name, (module, attribute) in LOCATIONS.items()
        ]
        self.services = [
            Service(
                "dagster-webserver",
                [tool("dagster-webserver"), "-w", str(workspace), "-h", LOOPBACK, "-p", str(port)],
                env,
                log_dir / "dagster-webserver.log",
            ),
            Service(
                "dagster-daemon",
                [tool("dagster-daemon"), "run", "-w", str(workspace)],
                env,
                log_dir / "dagster-daemon.log",
            ),
        ]

    def __enter__(self) -> DagsterServices:
        try:
            served = list(zip(self.code_servers, self.sockets.values(), strict=True))
            for server, path in served:
                path.unlink(missing_ok=True)  # left by a killed bench
                server.start()
            for server, path in served:
                server.wait_until(lambda p=path: accepts(p), 300, "its socket accepting")
            for service in self.services:
                service.start()
            self.services[0].wait_until(self._locations_loaded, 300, "both code locations loaded")
            for name in SCHEDULES_TO_STOP:
                self._stop_schedule(name)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        for service in [*self.services, *self.code_servers]:
            service.stop()

    @property
    def runs_group(self) -> int:
        """The process group of the project's code server, whose forkserver forks every run
        of the project's jobs (the code server's pid: it leads a session of its own)."""
        process = self.code_servers[0].process
        if process is None:
            raise RuntimeError("the project's code server is not running")
        return process.pid

    def _graphql(self, query: str, variables: dict[str, object]) -> dict[str, Any]:
        response = httpx.post(
            f"{self.url}/graphql", json={"query": query, "variables": variables}, timeout=30
        )
        response.raise_for_status()
        return response.json()["data"]

    def _stop_schedule(self, name: str) -> None:
        """Stop a schedule of the `quarry` location (the state is kept in DAGSTER_HOME)."""
        selector = {
            "repositoryLocationName": "quarry",
            "repositoryName": "__repository__",
            "scheduleName": name,
        }
        found = self._graphql(SCHEDULE_QUERY, {"selector": selector})["scheduleOrError"]
        if found.get("__typename") != "Schedule":
            raise ServiceFailed(f"schedule {name!r} not found: {found}")
        if found["scheduleState"]["status"] == "STOPPED":
            return
        result = self._graphql(STOP_SCHEDULE, {"id": found["scheduleState"]["id"]})
        if result["stopRunningSchedule"].get("__typename") == "PythonError":
            raise ServiceFailed(f"could not stop schedule {name!r}: {result}")

    def _locations_loaded(self) -> bool:
        response = httpx.post(f"{self.url}/graphql", json={"query": LOCATIONS_QUERY}, timeout=5)
        workspace = response.json()["data"]["workspaceOrError"]
        entries = {e["name"]: e for e in workspace.get("locationEntries", [])}
        for name in ("quarry", "bench"):
            entry = entries.get(name)
            if entry is None or entry["loadStatus"] != "LOADED":
                return False
            loaded = entry["locationOrLoadError"] or {}
            if loaded.get("__typename") == "PythonError":
                raise ServiceFailed(f"code location {name!r} failed to load: see the webserver log")
        return True
