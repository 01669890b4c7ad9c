"""Is a worker alive: the one answer for export jobs and sync runs.

A process that does work others wait on names itself "<role id>:<pid>" (QUARRY_ROLE_ID,
docs/deployment.md) on what it works on: an export job's row, a sync run's tags. Only its
own role can look at the process (same host, same process table); from any other role the
job's heartbeat is the only sign of life.
"""

from __future__ import annotations

import os
from pathlib import Path


def worker_identity(role_id: str, pid: int | None = None) -> str:
    """How this process (or `pid`) of role `role_id` names itself."""
    return f"{role_id}:{os.getpid() if pid is None else pid}"


def process_alive(pid: int) -> bool:
    """True when process `pid` exists on this host and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a killed child its parent has not reaped yet is dead for us
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def stopped_process(worker: str | None, role_id: str) -> int | None:
    """The pid of `worker` when it is a process of role `role_id` that is gone; None when
    it lives, or belongs to another role (which this process cannot see)."""
    worker_role, _, pid = (worker or "").rpartition(":")
    if worker_role == role_id and pid.isdigit() and not process_alive(int(pid)):
        return int(pid)
    return None
