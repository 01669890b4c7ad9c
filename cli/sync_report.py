"""What `quarry sync` prints while it works: a line on stderr as each store starts and as
each of its datasets is written (tables, rows, time, rate), then the store's result line on
stdout (or, with --json, every result as one JSON array at the end).

On a terminal a spinner names the store being synced; in a log or a pipe the lines are
plain text. The lines come from the run's own events (pipelines.progress), so what they
say is what the Dagster UI shows for the run.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from typing import Any

import click
from rich.console import Console
from rich.status import Status

from pipelines.progress import RunOutcome, RunStarted, StepFinished
from pipelines.runner import step_asset


def _where(label: str) -> str:
    return "exchange rates" if label == "exchange_rates" else f"store {label}"


@dataclass
class SyncReport:
    """Hears a sync's events (pipelines.runner.sync_stores' `report`) and prints them."""

    as_json: bool = False
    # soft_wrap: a line in a log stays one line, whatever the width.
    console: Console = field(
        default_factory=lambda: Console(stderr=True, highlight=False, soft_wrap=True)
    )
    outcomes: list[RunOutcome] = field(default_factory=list)
    _status: Status | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, event: RunStarted | StepFinished | RunOutcome) -> None:
        # Steps are heard from the follower's thread, runs from the caller's.
        with self._lock:
            if isinstance(event, RunStarted):
                self._started(event)
            elif isinstance(event, StepFinished):
                self._step(event)
            else:
                self._finished(event)

    def _started(self, event: RunStarted) -> None:
        what = "exchange rates" if event.label == "exchange_rates" else event.name
        if self.console.is_terminal:
            self._status = self.console.status(f"syncing {what} ...")
            self._status.start()
        else:
            label = "" if event.label == "exchange_rates" else f" ({event.label})"
            self.console.print(f"syncing {what}{label} ...", markup=False)

    def _step(self, event: StepFinished) -> None:
        asset = step_asset(event.step)
        if not event.success:
            self.console.print(f"  {asset}: failed after {event.seconds:.1f} s", markup=False)
            return
        total = sum(event.rows.values())
        if list(event.rows) == [asset]:
            written = f"{total:,} rows"
        else:
            tables = ", ".join(f"{table} {rows:,}" for table, rows in event.rows.items())
            written = f"{tables} rows"
        rate = f", {total / event.seconds:,.0f} rows/s" if total and event.seconds > 0 else ""
        self.console.print(f"  {asset}: {written} in {event.seconds:.1f} s{rate}", markup=False)

    def _finished(self, outcome: RunOutcome) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None
        self.outcomes.append(outcome)
        where = _where(outcome.label)
        if outcome.interrupted:
            click.echo(f"error: {where}: interrupted (run {outcome.run_id})", err=True)
        elif not outcome.success:
            click.echo(
                f"error: {where}: {step_asset(outcome.failed_step)} failed: {outcome.error} "
                f"(run {outcome.run_id})",
                err=True,
            )
        elif not self.as_json:
            written = ", ".join(f"{t} {rows:,}" for t, rows in outcome.rows.items() if rows)
            click.echo(
                f"{outcome.label} ({outcome.name}): {written or 'no changes'} "
                f"({outcome.seconds:.1f} s)"
            )

    def results(self) -> list[dict[str, Any]]:
        """The outcomes as --json prints them."""
        return [
            {
                "store_id": None if o.label == "exchange_rates" else o.label,
                "name": o.name,
                **{k: v for k, v in asdict(o).items() if k not in ("label", "name")},
                "failed_step": o.failed_step and step_asset(o.failed_step),
                "seconds": round(o.seconds, 3),
            }
            for o in self.outcomes
        ]
