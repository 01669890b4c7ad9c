"""`python -m bench.profile_sync`: where one store's sync run spends its time, by kind of
work, from a cProfile of the run (docs/benchmark.md quotes its output).

Runs on a bench home that `python -m bench` seeded and synced with this code. The largest
store is synced in this process, as `quarry sync` would, either fully (`--full`) or after a
change of `--change` orders to its demo files (bench.change: 6 updated, 2 deleted, 2 added
of every 10; an untimed full sync of the store comes first); the demo files are put back
afterwards. Each kind of work is the cumulative time of the functions that do it (the
outermost call of a kind holds its inner ones); the whole profile is written for pstats or
snakeviz.
"""

from __future__ import annotations

import cProfile
import pstats
import time
from pathlib import Path

import click

# Kind of work -> (file path fragment, function name) pairs whose cumulative time it is.
KINDS: dict[str, tuple[tuple[str, str], ...]] = {
    "asset checks (key_health)": (("pipelines/sync/table_stats.py", "stores_key_health"),),
    "row counts for metadata": (("pipelines/sync/table_stats.py", "store_row_count"),),
    "sales model": (("warehouse/modelled/sales.py", "write_sales"),),
    "lake writes (deletes by key, inserts, commits)": (
        ("warehouse/writer.py", "apply"),
        ("warehouse/writer.py", "apply_changes"),
    ),
    "waiting for the platform's next page": (("quarry/read_ahead.py", "consume"),),
    "platform count (matches_platform)": (("platforms/demo/connector.py", "count"),),
    "Dagster event writes": (
        ("dagster/_core/instance/__init__.py", "handle_new_event"),
        ("dagster/_core/instance/methods/event_methods.py", "handle_new_event"),
    ),
    "Dagster run creation": (
        ("dagster/_core/instance/__init__.py", "create_run_for_job"),
        ("dagster/_core/instance/methods/run_methods.py", "create_run_for_job"),
    ),
}

# Work inside a kind above, shown apart: the rollups' share of the sales model.
ROLLUPS = "rollups (inside the sales model)"
INNER: dict[str, tuple[tuple[str, str], ...]] = {
    ROLLUPS: (
        ("warehouse/rollups/build.py", "apply_change"),
        ("warehouse/rollups/build.py", "write_store"),
    ),
}
# The sync's write steps, which the rollups' cost is held to (issue 29: <= 10%).
WRITE_STEPS = ("sales model", "lake writes (deletes by key, inserts, commits)")


def summarise(
    stats: pstats.Stats, kinds: dict[str, tuple[tuple[str, str], ...]] = KINDS
) -> dict[str, float]:
    """Seconds per kind of work: the cumulative time of each kind's functions."""
    table = stats.stats  # type: ignore[attr-defined]
    seconds: dict[str, float] = {}
    for kind, functions in kinds.items():
        found = [
            cumulative
            for (path, _line, name), (_cc, _nc, _tt, cumulative, _callers) in table.items()
            for fragment, wanted in functions
            if name == wanted and path.endswith(fragment)
        ]
        seconds[kind] = sum(found)
    return seconds


@click.command()
@click.option("--home", type=click.Path(path_type=Path), required=True, help="A bench home.")
@click.option("--full", is_flag=True, help="Profile a full re-sync instead of a change.")
@click.option("--change", default=2_000, show_default=True, help="Orders changed in the store.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("sync.prof"))
def main(home: Path, full: bool, change: int, out: Path) -> None:
    """Profile one sync run of the bench home's largest store."""
    from bench.dataset import demo_files_restored, open_synced

    try:
        dataset = open_synced(home.expanduser().resolve())
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    # Imported once the environment is the home's, as a process of that home would.
    from bench.change import change_orders
    from pipelines.runner import sync_stores
    from platforms.demo.storage import read_store_table, store_dir

    largest = max(
        dataset.store_ids,
        key=lambda s: (
            read_store_table(store_dir(dataset.settings, dataset.account_id, s), "orders").num_rows
        ),
    )
    profiler = cProfile.Profile()
    with demo_files_restored(dataset):
        if not full:
            # A bench run leaves the store synced past its restored demo files (it syncs an
            # advance, then puts the files back): a full sync first, untimed, so the change
            # made next is newer than the store's cursor.
            sync_stores(dataset.settings, dataset.registry, [largest], full=True)
            change_orders(
                dataset.settings,
                dataset.registry,
                dataset.account_id,
                [largest],
                change,
                dataset.seed,
            )
        started = time.perf_counter()
        profiler.enable()
        [outcome] = [
            o
            for o in sync_stores(dataset.settings, dataset.registry, [largest], full=full)
            if o.label != "exchange_rates"
        ]
        profiler.disable()
        wall = time.perf_counter() - started
    if not outcome.success:
        raise click.ClickException(f"the run failed: {outcome.failed_step}: {outcome.error}")
    profiler.dump_stats(out)
    stats = pstats.Stats(str(out))
    what = "full sync" if full else f"change of {change:,} orders"
    click.echo(f"{largest}: {what}, {wall:.2f} s in process (profiled), rows {outcome.rows}")
    accounted = 0.0
    kinds = summarise(stats)
    for kind, seconds in kinds.items():
        accounted += seconds
        click.echo(f"  {kind:<48} {seconds:7.2f} s")
    click.echo(f"  {'the rest (Dagster steps, registry, Python)':<48} {wall - accounted:7.2f} s")
    rollups = summarise(stats, INNER)[ROLLUPS]
    writes = sum(kinds[k] for k in WRITE_STEPS)
    share = 100 * rollups / writes if writes else 0.0
    click.echo(f"  {ROLLUPS:<48} {rollups:7.2f} s: {share:.1f}% of the write steps")
    click.echo(f"profile written to {out}")


if __name__ == "__main__":
    main()
