"""THE job state: every row status against every Dagster run status."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import pytest
from dagster import DagsterRunStatus

from exports.jobs.state import (
    ACTIVE,
    ENDED,
    FRESH_BEAT,
    WAITING,
    RunView,
    job_state,
    needs_run_status,
)


@dataclass
class Row:
    id: str = "job_1"
    status: str = "queued"
    error: str | None = None


@dataclass(frozen=True)
class BeatingRow:
    status: str
    heartbeat_at: datetime | None
    id: str = "job_1"
    error: str | None = None


RUN_STATUSES = [None, *(s.value for s in DagsterRunStatus)]
# row status -> run status (None: no run) -> expected status
EXPECTED = {
    "queued": {None: "queued", **dict.fromkeys(WAITING, "queued"),
               **dict.fromkeys(ACTIVE, "running"), **dict.fromkeys(ENDED, "failed")},
    "running": {None: "running", **dict.fromkeys(WAITING, "running"),
                **dict.fromkeys(ACTIVE, "running"), **dict.fromkeys(ENDED, "failed")},
    "completed": dict.fromkeys(RUN_STATUSES, "completed"),
    "failed": dict.fromkeys(RUN_STATUSES, "failed"),
}  # fmt: skip


def test_every_dagster_status_is_classified() -> None:
    assert set(WAITING) | set(ACTIVE) | set(ENDED) == {s.value for s in DagsterRunStatus}


@pytest.mark.parametrize("row_status", list(EXPECTED))
@pytest.mark.parametrize("run_status", RUN_STATUSES)
def test_state_table(row_status: str, run_status: str | None) -> None:
    row = Row(status=row_status, error="disk full" if row_status == "failed" else None)
    run = RunView("r1", run_status, "step blew up") if run_status else None
    state = job_state(row, run)
    assert state.status == EXPECTED[row_status][run_status]
    if state.status == "failed":
        assert state.error, "a failed job always says why"
    else:
        assert state.error is None


def test_reasons() -> None:
    queued = Row()
    assert job_state(Row(status="failed", error="disk full"), None).error == "disk full"
    assert job_state(queued, RunView("r1", "FAILURE", "boom")).error == (
        "boom; run the export again"
    )
    killed = job_state(Row(status="running"), RunView("r1", "FAILURE", "marked failed"))
    assert killed.error == (
        "the export worker stopped before it finished (marked failed); run the export again"
    )
    assert "failed" in (job_state(queued, RunView("r1", "FAILURE")).error or "")
    assert "canceled" in (job_state(queued, RunView("r1", "CANCELED")).error or "")
    assert "without recording" in (job_state(queued, RunView("r1", "SUCCESS")).error or "")
    # A final row wins over whatever the run says.
    assert job_state(Row(status="completed"), RunView("r1", "FAILURE", "x")).error is None


def test_a_running_job_whose_worker_beats_is_not_read_from_its_run() -> None:
    """A poll reads the Dagster run of an unfinished job, unless the row says enough: a
    running job whose worker beat within two heartbeats is running."""
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    beat = BeatingRow(status="running", heartbeat_at=now - FRESH_BEAT + timedelta(seconds=1))
    assert not needs_run_status(beat, now)
    assert needs_run_status(replace(beat, heartbeat_at=now - FRESH_BEAT), now)  # stale
    assert needs_run_status(replace(beat, heartbeat_at=None), now)  # not yet beating
    assert needs_run_status(replace(beat, status="queued"), now)
    assert not needs_run_status(replace(beat, status="completed", heartbeat_at=None), now)
    assert not needs_run_status(replace(beat, status="failed", heartbeat_at=None), now)
