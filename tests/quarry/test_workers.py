"""One answer to "is this worker alive", for export jobs and sync runs alike."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from quarry.workers import process_alive, stopped_process, worker_identity
from tests.factories import dead_pid


def test_a_live_process_is_alive_and_an_ended_one_is_not() -> None:
    assert process_alive(os.getpid())
    assert not process_alive(dead_pid())


def test_a_killed_child_not_yet_reaped_is_dead() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while process_alive(child.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        # Still in the process table as a zombie: its parent (this test) has not waited.
        assert os.path.exists(f"/proc/{child.pid}")
        assert not process_alive(child.pid)
    finally:
        child.wait()


def test_only_the_workers_own_role_can_say_it_stopped() -> None:
    dead = dead_pid()
    assert worker_identity("api-1", dead) == f"api-1:{dead}"
    assert stopped_process(worker_identity("api-1", dead), "api-1") == dead
    assert stopped_process(worker_identity("api-2", dead), "api-1") is None
    assert stopped_process(worker_identity("api-1"), "api-1") is None
    assert stopped_process(None, "api-1") is None
    assert stopped_process("garbage", "api-1") is None
