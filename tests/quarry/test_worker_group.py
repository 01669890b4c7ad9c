"""`quarry worker` as a service manager stops it: a signal to its process group (issue 32).
The code server used to run in a session of its own under the worker, so the group's
signal reached the worker alone and the code server and its runs stayed up."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from quarry.settings import Settings
from tests.factories import free_port
from tests.roles.deployment import descendants

QUARRY = Path(sys.executable).with_name("quarry")
ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def test_stopping_the_workers_group_stops_the_code_server_and_its_processes(
    quarry_env: Settings, tmp_path: Path
) -> None:
    port = free_port()
    with (tmp_path / "worker.log").open("wb") as log:
        worker = subprocess.Popen(
            [str(QUARRY), "worker", "--port", str(port)],
            cwd=ROOT,
            env=dict(os.environ),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # as a service manager starts it: a group of its own
        )
    try:
        deadline = time.monotonic() + 120
        while not _listening(port):
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()
            assert time.monotonic() < deadline, "the code server did not start"
            time.sleep(0.5)
        tree = descendants(worker.pid)
        # Its forkserver (which forks the runs) and the multiprocessing resource tracker are
        # under it too.
        assert len(tree) >= 2, tree
        assert {_group(pid) for pid in tree} == {worker.pid}
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=60)
        deadline = time.monotonic() + 30
        while any(_group(pid) == worker.pid for pid in tree) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [pid for pid in tree if _group(pid) == worker.pid]
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
