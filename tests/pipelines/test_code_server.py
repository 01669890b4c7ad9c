"""The warm process runs fork from (pipelines.code_server): what it holds must be safe to
fork. A Python thread would be left behind in every run with whatever locks it held, an
open connection or file shared by every run. (Native threads of libraries that handle
fork themselves are there after the imports, as in any process that imports them:
OpenBLAS's through numpy, jemalloc's background thread through pyarrow.) That a run is a
child of the forkserver: tests/exports/test_end_to_end.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from quarry.settings import Settings

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, os, threading
import pipelines.run_preload
from pipelines.run_preload import RUN_MODULES
import sys
fds = []
for fd in os.listdir("/proc/self/fd"):
    try:
        fds.append(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        pass  # the listing's own descriptor, closed already
print(json.dumps({
    "threads": threading.active_count(),
    "open": [f for f in fds if f.startswith(("socket:", "/")) and not f.startswith("/dev/")],
    "missing": [m for m in RUN_MODULES if m not in sys.modules],
}))
"""


def test_the_preload_starts_no_thread_and_opens_nothing(quarry_env: Settings) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["threads"] == 1, found
    # Files it read are closed again; only the interpreter's own are left.
    assert [f for f in found["open"] if not f.endswith((".py", ".pyc"))] == [], found
    # Every module a run needs is there (an upgrade that renamed one shows up here).
    assert found["missing"] == [], found
