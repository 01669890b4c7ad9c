"""Sync figures: a full sync's throughput, and an incremental sync of about 1% changed
orders whose merge is held against the full sync's merge.

Both run exactly as `quarry sync` does (pipelines.runner.sync_stores, in this process: a
full sync is a `full_resync` run per store, an incremental one a fleet run). A run's time
splits into its write steps (`sync_<dataset>` and `sales`: reading the platform's changes
and writing them to the lake), its asset checks, the snapshot step, and the rest: Dagster's
own per-run cost, shown apart next to a run of a job that does nothing. Generating the demo
data is not part of any figure (the dataset is seeded before, and `quarry demo advance` runs
untimed).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dagster import DagsterEventType

from bench.dataset import Dataset, demo_files_restored
from bench.stats import Figure, Section, at_least_value, within
from pipelines.instance import open_instance
from pipelines.progress import RunOutcome, StepFinished
from pipelines.runner import QUIET, sync_stores

if TYPE_CHECKING:
    from bench.change import FixedChange

FULL_SYNC_TARGET = 50_000  # orders per second
INCREMENTAL_SHARE = 0.01
# The fixed change (bench.change) held between dataset sizes: at 10M orders it may cost at
# most 1.2x what it costs at 1M (docs/benchmark.md compares the runs).
FIXED_CHANGE_ORDERS = 10_000
MAX_ADVANCE_DAYS = 60


@dataclass
class SyncTimes:
    """Seconds of a set of store runs, by kind of step."""

    wall: float = 0.0
    write: float = 0.0
    checks: float = 0.0
    snapshot: float = 0.0
    steps: dict[str, float] = field(default_factory=dict)

    @property
    def outside_steps(self) -> float:
        return self.wall - self.write - self.checks - self.snapshot


def run_sync(dataset: Dataset, *, full: bool) -> tuple[list[RunOutcome], SyncTimes]:
    """Sync every store; raises when a run fails (a figure of a failed sync means nothing).

    Full: a run per store, timed from each run's step events. Incremental: one fleet run,
    timed as a whole; its write steps are the stores' dataset and sales steps as the run
    reports them (pipelines.fleet.progress)."""
    steps: list[StepFinished] = []

    def hear(event: object) -> None:
        if isinstance(event, StepFinished) and event.success:
            steps.append(event)

    started = time.perf_counter()
    outcomes = sync_stores(dataset.settings, dataset.registry, full=full, report=hear)
    elapsed = time.perf_counter() - started
    failed = [o for o in outcomes if not o.success]
    if failed:
        raise RuntimeError(
            "; ".join(f"{o.label}: {o.failed_step}: {o.error} (run {o.run_id})" for o in failed)
        )
    stores = [o for o in outcomes if o.label != "exchange_rates"]
    if full:
        return outcomes, _times(dataset, stores)
    rates = sum(o.seconds for o in outcomes if o.label == "exchange_rates")
    times = SyncTimes(wall=elapsed - rates)
    for step in steps:
        times.steps[step.step] = times.steps.get(step.step, 0.0) + step.seconds
    times.write = sum(times.steps.values())
    return outcomes, times


def _times(dataset: Dataset, outcomes: list[RunOutcome]) -> SyncTimes:
    times = SyncTimes(wall=sum(o.seconds for o in outcomes))
    with open_instance(dataset.settings) as instance:
        for outcome in outcomes:
            for step, seconds in step_seconds(instance, outcome.run_id).items():
                times.steps[step] = times.steps.get(step, 0.0) + seconds
    for step, seconds in times.steps.items():
        if step.startswith("sync_") or step == "sales":
            times.write += seconds
        elif step.startswith("check_"):
            times.checks += seconds
        else:
            times.snapshot += seconds
    return times


def step_seconds(instance: object, run_id: str) -> dict[str, float]:
    """Each step's time from STEP_START to its success or failure, from the run's events."""
    started: dict[str, float] = {}
    seconds: dict[str, float] = {}
    for entry in instance.all_logs(run_id):  # type: ignore[attr-defined]
        event = entry.dagster_event
        if event is None or entry.step_key is None:
            continue
        if event.event_type == DagsterEventType.STEP_START:
            started[entry.step_key] = entry.timestamp
        elif event.event_type in (DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE):
            begun = started.get(entry.step_key)
            if begun is not None:
                seconds[entry.step_key] = entry.timestamp - begun
    return seconds


def trivial_run_seconds(dataset: Dataset, repeats: int = 3) -> float:
    """The median time of an in-process run of a job that does nothing, on the same
    instance: what every sync run pays to Dagster whatever it writes."""
    from bench.floor_job import bench_floor

    samples = []
    with open_instance(dataset.settings) as instance:
        for _ in range(repeats):
            started = time.perf_counter()
            result = bench_floor.execute_in_process(instance=instance, run_config=QUIET)
            samples.append(time.perf_counter() - started)
            if not result.success:
                raise RuntimeError("the trivial Dagster run failed")
    return sorted(samples)[len(samples) // 2]


def full_sync(dataset: Dataset, section: Section) -> SyncTimes:
    """Measure a full re-sync of every store; the dataset is synced afterwards."""
    started = time.perf_counter()
    outcomes, times = run_sync(dataset, full=True)
    dataset.mark_synced()
    rows = sum(o.rows.get("orders", 0) for o in outcomes)
    trivial = trivial_run_seconds(dataset)
    runs = len(outcomes) - sum(o.label == "exchange_rates" for o in outcomes)
    section.add(
        Figure(
            "sync.full.orders_per_second",
            "Full sync throughput (orders/s, store runs' wall time)",
            "orders/s",
            rows / times.wall,
            target=at_least_value(FULL_SYNC_TARGET, "orders/s"),
            note=f"{rows:,} orders in {times.wall:.1f} s over {runs} store runs",
            detail=_detail(times) | {"orders": rows, "with_rates_s": time.perf_counter() - started},
        )
    )
    section.add(
        Figure(
            "sync.full.orders_per_second_in_write_steps",
            "Full sync throughput counting write steps only (orders/s)",
            "orders/s",
            rows / times.write if times.write else 0.0,
            note="excludes checks, the snapshot step and Dagster's per-run cost",
        )
    )
    section.add(
        Figure(
            "sync.dagster_run_overhead",
            "Dagster per-run cost: trivial in-process run (s)",
            "s",
            trivial,
            note=f"paid once per store run ({runs} runs); outside steps per run measured "
            f"{times.outside_steps / max(runs, 1):.2f} s",
        )
    )
    return times


def incremental_sync(dataset: Dataset, section: Section, full: SyncTimes) -> None:
    """Advance the demo platform until about 1% of orders changed, sync, and hold the
    incremental merge to 10% of the full merge; then sync a change of a fixed number of
    orders (bench.change). The demo files are put back afterwards."""
    from cli.demo_account import advance_demo

    with demo_files_restored(dataset):
        first = advance_demo(dataset.settings, dataset.registry, dataset.account_id, days=1)
        changed = _changed_orders(first.to_json())
        wanted = INCREMENTAL_SHARE * dataset.orders
        days = 1
        if 0 < changed < wanted:
            more = min(MAX_ADVANCE_DAYS, math.ceil((wanted - changed) / changed))
            later = advance_demo(dataset.settings, dataset.registry, dataset.account_id, more)
            changed += _changed_orders(later.to_json())
            days += more
        outcomes, times = run_sync(dataset, full=False)
        fixed_change(dataset, section)
    rows = sum(o.rows.get("orders", 0) for o in outcomes)
    share = changed / dataset.orders
    section.add(
        Figure(
            "sync.incremental.merge_seconds",
            "Incremental sync merge (write steps) vs full sync merge (s)",
            "s",
            times.write,
            floor=full.write,
            target=within(0.10, 0, "s"),
            note=f"{changed:,} orders changed ({share:.2%}, {days} demo days); "
            f"{rows:,} order rows written",
            detail=_detail(times) | {"orders_changed": changed, "days_advanced": days},
        )
    )
    section.add(
        Figure(
            "sync.incremental.wall_seconds",
            "Incremental sync, store runs' wall time (s)",
            "s",
            times.wall,
            floor=full.wall,
            note="context: includes checks, snapshot and Dagster's per-run cost",
        )
    )


def sync_change(
    dataset: Dataset, total: int, round_: int = 0
) -> tuple[FixedChange, SyncTimes, int]:
    """Change `total` orders of the dataset's stores (bench.change, its `round_`) and sync
    it incrementally: what changed, the sync's times and the order rows it wrote."""
    from bench.change import change_orders

    change = change_orders(
        dataset.settings,
        dataset.registry,
        dataset.account_id,
        dataset.store_ids,
        total,
        dataset.seed,
        round_,
    )
    outcomes, times = run_sync(dataset, full=False)
    return change, times, sum(o.rows.get("orders", 0) for o in outcomes)


def fixed_change(dataset: Dataset, section: Section) -> None:
    """Sync a change of FIXED_CHANGE_ORDERS orders made after everything synced so far."""
    total = min(FIXED_CHANGE_ORDERS, dataset.orders // 10)
    change, times, rows = sync_change(dataset, total)
    section.add(
        Figure(
            "sync.fixed_change.write_seconds",
            f"Incremental sync of a fixed change of {total:,} orders, write steps (s)",
            "s",
            times.write,
            note=f"{change.updated:,} updated, {change.deleted:,} deleted, {change.added:,} "
            f"added; {rows:,} order rows written; held across dataset sizes in "
            "docs/benchmark.md (10M at most 1.2x 1M)",
            detail=_detail(times)
            | {"updated": change.updated, "deleted": change.deleted, "added": change.added},
        )
    )
    section.add(
        Figure(
            "sync.fixed_change.wall_seconds",
            f"Incremental sync of a fixed change of {total:,} orders, store runs' wall time (s)",
            "s",
            times.wall,
            note="context: includes checks, snapshot and Dagster's per-run cost",
        )
    )


def _changed_orders(summary: dict[str, object]) -> int:
    changes = summary["changes"]["orders"]  # type: ignore[index]
    return int(changes["added"] + changes["updated"] + changes["deleted"])


def _detail(times: SyncTimes) -> dict[str, object]:
    return {
        "wall_s": round(times.wall, 3),
        "write_steps_s": round(times.write, 3),
        "checks_s": round(times.checks, 3),
        "snapshot_s": round(times.snapshot, 3),
        "outside_steps_s": round(times.outside_steps, 3),
        "steps_s": {k: round(v, 3) for k, v in sorted(times.steps.items())},
    }
