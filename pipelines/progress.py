"""Following a sync run while it executes: each finished step as it happens, read from the
run's event log (the same events the Dagster UI shows), so that `quarry sync` can say what
it is doing instead of printing one block at the end.

The follower polls the instance from a thread beside the run: in-process runs write their
events to the instance as they go, and runs on a worker write them to the same storage.
Following is best-effort: a failed look is skipped and never fails the run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from dagster import DagsterEventType, DagsterInstance

from quarry.periodic import repeating

log = logging.getLogger(__name__)

# Seconds between looks at a running run's events.
FOLLOW_SECONDS = 0.5
_FOLLOWED = {
    DagsterEventType.STEP_START,
    DagsterEventType.ASSET_MATERIALIZATION,
    DagsterEventType.STEP_SUCCESS,
    DagsterEventType.STEP_FAILURE,
}


@dataclass(frozen=True)
class RunStarted:
    label: str  # the store id, or exchange_rates
    name: str


@dataclass(frozen=True)
class StepFinished:
    """A step of a run that wrote rows (a dataset, the sales model), or one that failed."""

    label: str
    name: str
    step: str  # Dagster's step key (sync_orders, sales, ...)
    success: bool
    seconds: float
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows written


@dataclass(frozen=True)
class RunOutcome:
    """One in-process run: what it wrote, or which step failed and why."""

    label: str
    name: str
    run_id: str
    success: bool
    seconds: float
    rows: dict[str, int] = field(default_factory=dict)
    failed_step: str | None = None
    error: str | None = None
    # Ctrl-C: Dagster ends the run as failed rather than letting KeyboardInterrupt through.
    interrupted: bool = False


# What a sync reports as it goes: a run starting, a step finishing, a run's outcome.
Report = Callable[[RunStarted | StepFinished | RunOutcome], None]


@dataclass
class RunFollower:
    """Reports each step of `run_id` once it has finished."""

    instance: DagsterInstance
    run_id: str
    label: str
    name: str
    report: Callable[[StepFinished], None]
    _cursor: str | None = None
    _started: dict[str, float] = field(default_factory=dict)
    _rows: dict[str, dict[str, int]] = field(default_factory=dict)

    def poll(self) -> None:
        """Reads the events written since the last look and reports finished steps."""
        while True:
            page = self.instance.get_records_for_run(
                self.run_id, cursor=self._cursor, of_type=_FOLLOWED
            )
            for record in page.records:
                self._see(record.event_log_entry.timestamp, record.event_log_entry.dagster_event)
            self._cursor = page.cursor
            if not page.has_more:
                return

    def _see(self, at: float, event: object) -> None:
        from dagster import DagsterEvent

        if not isinstance(event, DagsterEvent) or event.step_key is None:
            return
        step = event.step_key
        if event.event_type == DagsterEventType.STEP_START:
            self._started[step] = at
        elif event.event_type == DagsterEventType.ASSET_MATERIALIZATION:
            materialization = event.step_materialization_data.materialization
            written = materialization.metadata.get("rows_written")
            if written is not None:
                table = materialization.asset_key.to_user_string()
                self._rows.setdefault(step, {})[table] = int(written.value)  # type: ignore[arg-type]
        elif event.event_type in (DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE):
            success = event.event_type == DagsterEventType.STEP_SUCCESS
            rows = self._rows.pop(step, None)
            # Checks and bookkeeping steps write no rows: only their failures are news.
            if rows is None and success:
                return
            seconds = max(0.0, at - self._started.get(step, at))
            self.report(StepFinished(self.label, self.name, step, success, seconds, rows or {}))

    @contextmanager
    def following(self) -> Iterator[None]:
        """Polls in a thread while the block runs, then once more for the last events."""
        with repeating(FOLLOW_SECONDS, self._safe_poll, name=f"follow-{self.run_id[:8]}"):
            yield
        self._safe_poll()

    def _safe_poll(self) -> None:
        try:
            self.poll()
        except Exception:  # progress is a courtesy; the run alone decides success
            log.debug("could not read the events of run %s", self.run_id, exc_info=True)
