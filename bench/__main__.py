"""`python -m bench` (`make bench`): the benchmark harness. See docs/benchmark.md.

Seeds (or reuses) the dataset in its own QUARRY_HOME, measures each section's figures next
to their floors in this one run, and writes bench/results/latest.json and latest.md.
A section that cannot be measured says why ("not available: ..."); no figure is ever
made up. The exit status is 0 when the results were written, whatever they show.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

from bench.dataset import ANCHOR, SEED, Dataset, bench_environment
from bench.stats import Section

T = TypeVar("T")

SECTIONS = ("sync", "query", "records", "exports", "fleet")
DEFAULT_OUT = Path("bench/results/latest.json")


def say(message: str) -> None:
    click.echo(f"bench {time.strftime('%H:%M:%S')}: {message}", err=True)


@click.command()
@click.option("--orders", default=1_000_000, show_default=True, help="Orders in the dataset.")
@click.option("--stores", default=5, show_default=True, help="Stores in the dataset.")
@click.option("--seed", default=SEED, show_default=True, help="The generator's seed.")
@click.option(
    "--reuse/--fresh",
    default=True,
    show_default=True,
    help="Reuse the dataset when its marker matches, or seed a new one.",
)
@click.option(
    "--sections",
    default=",".join(("query", "records", "exports", "sync", "fleet")),
    show_default=True,
    help="Comma-separated: query, records, exports, sync, fleet.",
)
@click.option(
    "--fleet-stores",
    default="1000",
    show_default=True,
    help="Comma-separated fleet sizes (stores) the fleet section measures.",
)
@click.option(
    "--fleet-postgres",
    default=None,
    help="A PostgreSQL server (libpq URL) for the fleet's registry, lake catalog and Dagster "
    "storage, as a fleet is deployed; the bench makes its own databases there. Unset: "
    "SQLite files in the fleet's home.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=DEFAULT_OUT,
    show_default=True,
    help="The JSON results; the markdown goes beside it (.md).",
)
@click.option(
    "--home",
    type=click.Path(path_type=Path),
    default=Path(".quarry-bench"),
    show_default=True,
    help="The benchmark's QUARRY_HOME.",
)
@click.option("--repeats", default=20, show_default=True, help="Timed repeats per latency.")
@click.option(
    "--load-seconds", default=10.0, show_default=True, help="Seconds of each throughput run."
)
@click.option("--quick", is_flag=True, help="Fewest repeats of slow steps (the smoke test).")
@click.option(
    "--xlsx/--no-xlsx",
    default=True,
    show_default=True,
    help="Measure the XLSX export of all orders (about half an hour at 10M orders).",
)
def main(
    orders: int,
    stores: int,
    seed: int,
    reuse: bool,
    sections: str,
    out: Path,
    home: Path,
    repeats: int,
    load_seconds: float,
    quick: bool,
    xlsx: bool,
    fleet_stores: str,
    fleet_postgres: str | None,
) -> None:
    """Measure Quarry against its floors and write the results."""
    chosen = [s.strip() for s in sections.split(",") if s.strip()]
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown or not chosen:
        raise click.BadParameter(f"unknown sections {unknown}; choose from {SECTIONS}")
    home = home.expanduser().resolve()
    from bench.server import free_port

    dagster_port = free_port()
    # Every QUARRY_* setting of this process and its children comes from the bench home.
    for name in [n for n in os.environ if n.startswith("QUARRY_") or n == "DAGSTER_HOME"]:
        del os.environ[name]
    os.environ.update(bench_environment(home, dagster_port))
    logging.getLogger("dagster").setLevel(logging.WARNING)
    results = run(
        home,
        orders=orders,
        stores=stores,
        seed=seed,
        reuse=reuse,
        chosen=[s for s in SECTIONS if s in chosen],
        repeats=repeats,
        load_seconds=load_seconds,
        quick=quick,
        xlsx=xlsx,
        dagster_port=dagster_port,
        fleet_sizes=[int(n) for n in fleet_stores.split(",") if n.strip()],
        fleet_postgres=fleet_postgres,
    )
    from bench.report import write

    text = write(results, out.resolve())
    click.echo(text)
    say(f"wrote {out} and {out.with_suffix('.md')}")


def run(
    home: Path,
    *,
    orders: int,
    stores: int,
    seed: int,
    reuse: bool,
    chosen: list[str],
    repeats: int,
    load_seconds: float,
    quick: bool,
    xlsx: bool,
    dagster_port: int,
    fleet_sizes: list[int] | None = None,
    fleet_postgres: str | None = None,
) -> dict[str, object]:
    from bench import report
    from bench.dataset import open_dataset, table_counts
    from bench.sync import full_sync, incremental_sync, run_sync

    at_start = report.machine()
    sections = {name: Section(name) for name in chosen}
    if "fleet" in sections:
        from bench.fleet import run_section as fleet_section

        for size in fleet_sizes or [1000]:
            _measure(
                sections["fleet"],
                lambda s, n=size: fleet_section(  # type: ignore[misc]
                    s, home / f"fleet-{n}", n, say, postgres=fleet_postgres
                ),
                keep=True,
            )
        if chosen == ["fleet"]:
            return report.build(
                sections,
                machine_at_start=at_start,
                dataset={"fleet sizes": fleet_sizes, "orders per store": 200},
                config={"sections": chosen, "home": str(home)},
            )
    say(f"dataset: {orders:,} orders, {stores} stores, seed {seed}, in {home}")
    dataset = open_dataset(home, orders=orders, stores=stores, seed=seed, reuse=reuse)
    say("seeded a new dataset" if dataset.seeded_seconds is not None else "reusing the dataset")
    full = None
    if "sync" in sections:
        say("sync: full sync of every store")
        full = _measure(sections["sync"], lambda s: full_sync(dataset, s))
    if not dataset.synced:
        say("syncing the dataset (not measured)")
        run_sync(dataset, full=True)
        dataset.mark_synced()
    counts = table_counts(dataset)
    served = [s for s in ("query", "records", "exports") if s in sections]
    if served:
        _served_sections(
            dataset, sections, served, repeats, load_seconds, quick, xlsx, dagster_port
        )
    if "sync" in sections and full is not None:
        say("sync: incremental sync of about 1% changed orders")
        _measure(sections["sync"], lambda s: incremental_sync(dataset, s, full), keep=True)
    dataset_info: dict[str, object] = {
        "orders requested": orders,
        "stores": len(dataset.stores),
        "seed": seed,
        "anchor": ANCHOR.isoformat(),
        **{f"{table} rows": n for table, n in counts.items()},
        "seeded in": "reused" if dataset.seeded_seconds is None
        else f"{dataset.seeded_seconds:.1f} s (not part of any figure)",
    }  # fmt: skip
    return report.build(
        sections,
        machine_at_start=at_start,
        dataset=dataset_info,
        config={"repeats": repeats, "load_seconds": load_seconds, "quick": quick, "xlsx": xlsx,
                "sections": chosen, "home": str(home), "fleet_sizes": fleet_sizes},
    )  # fmt: skip


def _served_sections(
    dataset: Dataset,
    sections: dict[str, Section],
    served: list[str],
    repeats: int,
    load_seconds: float,
    quick: bool,
    xlsx: bool,
    dagster_port: int,
) -> None:
    from bench import exports, queries, records
    from bench.context import BenchContext
    from bench.dataset import create_key
    from bench.server import ApiServer, DagsterServices
    from pipelines.instance import write_instance_config
    from warehouse.reader import WarehouseReader

    env = dict(os.environ)
    logs = dataset.home / "logs"
    reader = WarehouseReader(dataset.settings, dataset.registry)
    try:
        say("starting the API under uvicorn")
        with ApiServer(env, logs) as api:
            ctx = BenchContext(
                dataset=dataset,
                reader=reader,
                snapshot=reader.snapshot(dataset.store_ids),
                api_url=api.url,
                key=create_key(dataset),
                repeats=repeats,
                load_seconds=load_seconds,
                quick=quick,
                xlsx=xlsx,
            )
            if "query" in served:
                say("query: the query set through HTTP and by hand in DuckDB")
                _measure(sections["query"], lambda s: queries.run_section(ctx, s))
            if "records" in served:
                say("records: pages, by id, and throughput")
                _measure(sections["records"], lambda s: records.run_section(ctx, s))
            if "exports" in served:
                say("exports: starting the code servers, Dagster's webserver and daemon")
                write_instance_config(dataset.settings)

                def measure_exports(section: Section) -> None:
                    dagster_home = dataset.settings.resolved_dagster_home
                    with DagsterServices(env, dagster_home, logs, dagster_port) as dagster:
                        say("exports: CSV, XLSX, Parquet, 100 rows, changed rows, and floors")
                        exports.run_section(ctx, section, dagster)

                _measure(sections["exports"], measure_exports, reason=exports.unavailable_reason)
    finally:
        reader.close()


def _measure(
    section: Section,
    measure: Callable[[Section], T],
    *,
    keep: bool = False,
    reason: Callable[[BaseException], str] | None = None,
) -> T | None:
    """Run one section's measurement; an error makes the section "not available" with the
    error as its reason (and the traceback on stderr), never a partial figure."""
    started = time.perf_counter()
    try:
        return measure(section)
    except Exception as error:
        traceback.print_exc()
        if not keep:
            section.figures.clear()
        section.unavailable = (reason or _reason)(error)
        return None
    finally:
        section.seconds += time.perf_counter() - started


def _reason(error: BaseException) -> str:
    return f"{type(error).__name__}: {str(error)[:500]}"


if __name__ == "__main__":
    sys.exit(main())
