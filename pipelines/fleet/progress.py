"""Who hears a fleet run's stores as they go: `quarry sync` prints each store's steps and
result (cli.sync_report) as a run per store made it print them. Runs the daemon launches
have nobody listening: the default hears nothing, and the UI shows the run's events."""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.progress import Report, RunOutcome, RunStarted, StepFinished


def _nobody(_event: RunStarted | StepFinished | RunOutcome) -> None:
    pass


@dataclass(frozen=True)
class FleetProgress:
    """The fleet run's `fleet_progress` resource (passed in by whoever runs it in process)."""

    report: Report = _nobody

    def store_started(self, store_id: str, name: str) -> None:
        self.report(RunStarted(store_id, name))

    def step(
        self,
        store_id: str,
        name: str,
        step: str,
        success: bool,
        seconds: float,
        rows: dict[str, int],
    ) -> None:
        self.report(StepFinished(store_id, name, step, success, seconds, rows))

    def finished(self, outcome: RunOutcome) -> None:
        self.report(outcome)
