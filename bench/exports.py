"""Export figures: CSV, XLSX and Parquet of every order, a 100-row CSV, and a changed-rows
CSV after about 1% of the orders changed, each timed from
POST /v1/exports/{id}/run to the job reading `completed`, through a running Dagster
(webserver and daemon, as `quarry up` runs them).

Floors, measured in the same run: DuckDB's COPY of the same columns in the same order; a
plain streaming XLSX loop (xlsxwriter in constant-memory mode fed DuckDB's Arrow batches);
DuckDB's COPY (FORMAT parquet) for Parquet; the full CSV export for the changed rows;
and a Dagster job that does nothing, submitted and polled the same way (the orchestration
floor). Peak memory is the highest peak RSS (VmHWM) of Dagster run workers sampled while
the exports ran.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from bench.context import BenchContext
from bench.floor_job import FLOOR_JOB
from bench.server import DagsterServices, ServiceFailed
from bench.stats import Figure, Section, Target, at_most_value, within
from warehouse.sql_values import bind

if TYPE_CHECKING:
    from bench.change import FixedChange

COLUMNS = [
    "order_name", "created_at", "financial_status", "fulfillment_status", "customer_name",
    "total_price", "currency", "store_id",
]  # fmt: skip
POLL_SECONDS = 0.1
JOB_TIMEOUT_SECONDS = 1800
MEMORY_LIMIT_MB = 1024
SMALL_ROWS = 100
ROUNDS = 5  # samples of each export and floor but the XLSX one (see run_section)
# Changes of ~1% each, one after the other, for the changed-rows figure's median.
CHANGE_ROUNDS = 3
CONFIG_NAMES = {"csv": "Bench: orders (CSV)", "xlsx": "Bench: orders (XLSX)",
                "small": "Bench: 100 orders (CSV)", "parquet": "Bench: orders (Parquet)",
                "changes": "Bench: changed orders (CSV)"}  # fmt: skip
# The changed-rows figure: about 1% of the orders changed by bench.change, then synced.
CHANGED_SHARE = 0.01


class ExportFailed(RuntimeError):
    pass


def run_section(ctx: BenchContext, section: Section, dagster: DagsterServices) -> None:
    """Measure with Dagster's services running (the caller starts them: see bench.__main__)."""
    configs = apply_configs(ctx)
    samples = 1 if ctx.quick else ROUNDS
    memory = MemorySampler(group=dagster.runs_group)
    trivial: list[float] = []
    csv_runs: list[tuple[float, dict[str, Any]]] = []
    copies: list[tuple[float, int]] = []
    small: list[float] = []
    parquet_runs: list[float] = []
    parquet_copies: list[tuple[float, int]] = []
    with memory:
        # Floors and exports alternate, round after round, so a slow spell of the machine
        # (or of the daemon, whose dequeue loop alone moves a run by up to a second) falls
        # on both alike; each figure is the median of its samples.
        for _ in range(samples):
            trivial.append(_trivial_run(dagster))
            memory.wait_idle()
            csv_runs.append(_export(ctx, configs["csv"]))
            memory.wait_idle()
            copies.append(duckdb_copy(ctx, ctx.dataset.home / "bench-floor" / "orders.csv"))
            small.append(_export(ctx, configs["small"])[0])
            memory.wait_idle()
            parquet_runs.append(_export(ctx, configs["parquet"])[0])
            memory.wait_idle()
            parquet_copies.append(
                duckdb_copy(ctx, ctx.dataset.home / "bench-floor" / "orders.parquet", "parquet")
            )
        if ctx.xlsx:
            xlsx_s, xlsx_job = _export(ctx, configs["xlsx"])
    floor_run = sorted(trivial)[len(trivial) // 2]
    section.add(
        Figure(
            "exports.trivial_run_seconds",
            "Orchestration floor: a no-op Dagster run, submit to success (s)",
            "s",
            floor_run,
            detail={"samples_s": [round(t, 3) for t in trivial]},
        )
    )
    csv_s, csv_job = sorted(csv_runs, key=lambda run: run[0])[len(csv_runs) // 2]
    copy_s, copy_rows = sorted(copies)[len(copies) // 2]
    csv_job = {
        **csv_job,
        "samples_s": [round(run[0], 3) for run in csv_runs],
        "copy_samples_s": [round(copy[0], 3) for copy in copies],
    }
    csv_bound = 2 * copy_s + floor_run
    section.add(
        Figure(
            "exports.csv_all_orders_seconds",
            "CSV of all orders, POST to completed, vs DuckDB COPY (s)",
            "s",
            csv_s,
            floor=copy_s,
            target=Target(
                f"<= 2x COPY + trivial run ({csv_bound:.2f} s)", lambda ours, _f: ours <= csv_bound
            ),
            note=f"{copy_rows:,} rows",
            detail=csv_job,
        )
    )
    if ctx.xlsx:
        plain_s, plain_rows = plain_xlsx(ctx, ctx.dataset.home / "bench-floor" / "orders.xlsx")
        section.add(
            Figure(
                "exports.xlsx_all_orders_seconds",
                "XLSX of all orders, POST to completed, vs plain streaming writer (s)",
                "s",
                xlsx_s,
                floor=plain_s,
                target=within(1.3, 0, "s"),
                note=f"{plain_rows:,} rows; ours includes the orchestration floor "
                f"({floor_run:.2f} s), the plain loop does not",
                detail=xlsx_job,
            )
        )
    else:
        section.missing["exports.xlsx_all_orders_seconds"] = "not measured (--no-xlsx)"
    if memory.processes:
        section.add(
            Figure(
                "exports.peak_memory_mb",
                "Export run worker peak memory (RSS, MB)",
                "MB",
                memory.peak_mb,
                target=at_most_value(MEMORY_LIMIT_MB, "MB"),
                note=f"highest VmHWM of {memory.processes} run workers, sampled every 50 ms",
            )
        )
    else:
        section.missing["exports.peak_memory_mb"] = "no Dagster run worker process was seen"
    small_s = sorted(small)[len(small) // 2]
    section.add(
        Figure(
            "exports.small_100_rows_seconds",
            f"{SMALL_ROWS}-row CSV export, POST to completed, vs the orchestration floor (s)",
            "s",
            small_s,
            floor=floor_run,
            target=within(1, 2, "s"),
            detail={"samples_s": [round(s, 3) for s in small]},
        )
    )
    parquet_s = sorted(parquet_runs)[len(parquet_runs) // 2]
    parquet_copy_s, parquet_rows = sorted(parquet_copies)[len(parquet_copies) // 2]
    parquet_bound = 1.2 * parquet_copy_s + floor_run
    section.add(
        Figure(
            "exports.parquet_all_orders_seconds",
            "Parquet of all orders, POST to completed, vs DuckDB COPY (FORMAT parquet) (s)",
            "s",
            parquet_s,
            floor=parquet_copy_s,
            target=Target(
                f"<= 1.2x COPY + trivial run ({parquet_bound:.2f} s)",
                lambda ours, _f: ours <= parquet_bound,
            ),
            note=f"{parquet_rows:,} rows",
            detail={
                "samples_s": [round(t, 3) for t in parquet_runs],
                "copy_samples_s": [round(c[0], 3) for c in parquet_copies],
            },
        )
    )
    # Last: it syncs a change into the dataset, which the figures above must not see.
    changed_rows(ctx, section, configs["changes"], csv_s, floor_run)


def changed_rows(
    ctx: BenchContext, section: Section, config_id: str, full_s: float, floor_run: float
) -> None:
    """A changed-rows CSV export of all orders after about 1% of them changed and synced,
    against the full CSV export of the same dataset, both beyond the orchestration floor
    (a run costs that whatever it does: 0.1x of it is out of reach). The configuration
    starts over first (its priming run delivers everything and is not measured); then
    CHANGE_ROUNDS changes follow each other, each synced and exported (a change of its
    own, bench.change), and the figure is their median: a single run moves by the
    daemon's dequeue cadence (up to a second) more than by the change. Each timed run's
    delivery is checked against both ends of its range. The demo files are put back
    afterwards, as the sync section does."""
    from bench.dataset import demo_files_restored
    from bench.sync import sync_change
    from exports.configs.saved import reset_changes

    dataset = ctx.dataset
    with dataset.registry.session() as session:
        reset_changes(session, config_id)
    _export(ctx, config_id)  # priming: every row, and the start of the next run
    total = max(1, int(dataset.orders * CHANGED_SHARE))
    runs: list[tuple[float, dict[str, Any], FixedChange, int, dict[str, int]]] = []
    with demo_files_restored(dataset):
        for round_ in range(1 if ctx.quick else CHANGE_ROUNDS):
            change, _, written = sync_change(dataset, total, round_)
            if written == 0:
                # A figure of a run that had nothing to read would pass for the real one.
                raise ExportFailed(
                    "the bench's change of the orders was not synced: no rows written"
                )
            changed_s, job = _export(ctx, config_id)
            with ctx.client() as client:
                manifest = client.get(f"/v1/export-jobs/{job['job_id']}/manifest").json()
            delivered = {k: int(v) for k, v in manifest["parts"][0]["changes"].items()}
            expected = _changes_by_time_travel(ctx, manifest)
            if delivered != expected:
                # A figure of a run that delivered the wrong rows would pass for a real one.
                raise ExportFailed(
                    f"the changed-rows run delivered {delivered}, comparing both ends of its "
                    f"range gives {expected}"
                )
            runs.append((changed_s, job, change, written, delivered))
    changed_s, job, change, written, delivered = sorted(runs, key=lambda run: run[0])[
        len(runs) // 2
    ]
    bound = floor_run + 0.1 * max(full_s - floor_run, 0.0)
    section.add(
        Figure(
            "exports.changed_rows_1pct_seconds",
            "Changed-rows CSV of all orders after ~1% changed, POST to completed, vs the full "
            "CSV export (s)",
            "s",
            changed_s,
            floor=full_s,
            target=Target(
                f"<= trivial run + 0.1x the full export's time beyond it ({bound:.2f} s)",
                lambda o, _f: o <= bound,
            ),
            note=f"median of {len(runs)} changes, each {change.updated:,} updated, "
            f"{change.deleted:,} deleted, {change.added:,} added; held across dataset sizes "
            "in docs/benchmark.md (10M at most 1.2x 1M)",
            detail={
                "job": job,
                "samples_s": [round(run[0], 3) for run in runs],
                "orders_changed": change.orders,
                "order_rows_synced": written,
                "changes": delivered,
            },
        )
    )


def _changes_by_time_travel(ctx: BenchContext, manifest: dict[str, Any]) -> dict[str, int]:
    """What the job should have delivered, computed the slow and obvious way: every order
    of each store at both ends of its range (the manifest's), joined by id, compared on the
    exported columns. The bench's check that its changed-rows figure times a right
    answer (docs/benchmark.md)."""
    from warehouse.catalog import dataset
    from warehouse.lake import LAKE

    orders = dataset("orders")
    assert orders is not None
    fields = [orders.field(c) for c in COLUMNS]
    columns = ["id"] + [f'"{f.source}"' for f in fields if f is not None]
    compared = " OR ".join(f"s.{c} IS DISTINCT FROM e.{c}" for c in columns[1:])
    counts = dict.fromkeys(("insert", "update", "delete"), 0)
    with ctx.reader.connect(ctx.snapshot) as cursor:
        for store in manifest["stores"]:
            if store["since"] is None:
                raise ExportFailed(f"store {store['store_id']}: the timed run read everything")

            def side(version: int, store_id: str = store["store_id"]) -> str:
                return bind(
                    f"SELECT {', '.join(columns)} FROM {LAKE}.orders AT (VERSION => "
                    f"{int(version)}) WHERE store_id = ?",
                    [store_id],
                )

            rows = cursor.execute(
                f"SELECT CASE WHEN s.id IS NULL THEN 'insert' WHEN e.id IS NULL THEN 'delete' "
                f"ELSE 'update' END, count(*) FROM ({side(store['since'])}) s "
                f"FULL JOIN ({side(store['snapshot'])}) e ON s.id = e.id "
                f"WHERE s.id IS NULL OR e.id IS NULL OR {compared} GROUP BY 1"
            ).fetchall()
            for kind, count in rows:
                counts[str(kind)] += int(count)
    return counts


def apply_configs(ctx: BenchContext) -> dict[str, str]:
    """The benchmark's export configurations (created or updated by name): name -> id."""
    from exports.configs.document import validate_document
    from exports.configs.saved import account_context, apply_definitions

    since = _small_since(ctx)
    entries = [
        {"name": CONFIG_NAMES["csv"], "format": "csv"},
        {"name": CONFIG_NAMES["xlsx"], "format": "xlsx"},
        {"name": CONFIG_NAMES["small"], "format": "csv", "filters": {"created_at_min": since}},
        {"name": CONFIG_NAMES["parquet"], "format": "parquet"},
        {"name": CONFIG_NAMES["changes"], "format": "csv", "rows": "changed"},
    ]
    document = {
        "exports": [
            {**entry, "entity_type": "orders", "columns": COLUMNS, "destination": {"kind": "local"}}
            for entry in entries
        ]
    }
    settings, registry = ctx.dataset.settings, ctx.dataset.registry
    with registry.session() as session:
        context = account_context(session, settings, ctx.dataset.account_id)
        definitions = validate_document(yaml.safe_load(yaml.safe_dump(document)), context)
        applied = apply_definitions(session, settings, ctx.dataset.account_id, definitions)
    ids = {a.name: a.id for a in applied}
    return {key: ids[name] for key, name in CONFIG_NAMES.items()}


def _small_since(ctx: BenchContext) -> str:
    """The created_at of the 100th newest order: filtering from it gives about 100 rows."""
    with ctx.reader.connect(ctx.snapshot) as cursor:
        row = cursor.execute(
            "SELECT created_at FROM orders ORDER BY created_at DESC LIMIT 1 "
            f"OFFSET {SMALL_ROWS - 1}",
        ).fetchone()
    return row[0].astimezone(UTC).isoformat()


def _export(ctx: BenchContext, config_id: str) -> tuple[float, dict[str, Any]]:
    """Seconds from POST .../run to `completed`, and the job's final view."""
    with ctx.client() as client:
        started = time.perf_counter()
        response = client.post(f"/v1/exports/{config_id}/run")
        if response.status_code != 202:
            raise ExportFailed(f"POST /v1/exports/{config_id}/run: {response.status_code} "
                               f"{response.text[:300]}")  # fmt: skip
        job_id = response.json()["job_id"]
        deadline = started + JOB_TIMEOUT_SECONDS
        while time.perf_counter() < deadline:
            job = client.get(f"/v1/export-jobs/{job_id}").json()
            if job.get("status") == "completed":
                return time.perf_counter() - started, job
            if job.get("status") == "failed":
                raise ExportFailed(f"export job {job_id} failed: {job.get('error')}")
            time.sleep(POLL_SECONDS)
    raise ExportFailed(f"export job {job_id} did not complete in {JOB_TIMEOUT_SECONDS} s")


def _trivial_run(dagster: DagsterServices) -> float:
    """Seconds from submitting the no-op job through GraphQL to its run's success."""
    from dagster_graphql import DagsterGraphQLClient

    client = DagsterGraphQLClient("127.0.0.1", port_number=dagster.port, timeout=30)
    started = time.perf_counter()
    run_id = client.submit_job_execution(
        FLOOR_JOB, repository_location_name="bench", repository_name="__repository__"
    )
    while time.perf_counter() - started < JOB_TIMEOUT_SECONDS:
        status = client.get_run_status(run_id).value
        if status == "SUCCESS":
            return time.perf_counter() - started
        if status in ("FAILURE", "CANCELED"):
            raise ExportFailed(f"the trivial Dagster run {run_id} ended {status}")
        time.sleep(POLL_SECONDS)
    raise ExportFailed(f"the trivial Dagster run {run_id} did not finish")


def _select(ctx: BenchContext, naive_timestamps: bool = False) -> tuple[str, list[str]]:
    stores = ctx.dataset.store_ids
    # xlsxwriter takes naive datetimes only: the plain loop gets UTC wall-clock times.
    naive = 'timezone(\'UTC\', "{c}") AS "{c}"'
    columns = [
        naive.format(c=c) if naive_timestamps and c == "created_at" else f'"{c}"' for c in COLUMNS
    ]
    sql = (
        f"SELECT {', '.join(columns)} FROM orders WHERE store_id IN "
        f"({', '.join('?' * len(stores))}) ORDER BY created_at, id"
    )
    return sql, stores


def duckdb_copy(ctx: BenchContext, target: Path, file_format: str = "csv") -> tuple[float, int]:
    """DuckDB COPY of the export's columns and order to CSV (or Parquet): seconds, rows."""
    target.parent.mkdir(parents=True, exist_ok=True)
    sql, params = _select(ctx)
    options = "FORMAT parquet" if file_format == "parquet" else "HEADER, DELIMITER ','"
    with ctx.reader.connect(ctx.snapshot) as cursor:
        started = time.perf_counter()
        cursor.execute(bind(f"COPY ({sql}) TO '{target}' ({options})", params))
        seconds = time.perf_counter() - started
        rows = int(cursor.execute(bind(f"SELECT count(*) FROM ({sql})", params)).fetchone()[0])
    target.unlink(missing_ok=True)
    return seconds, rows


def plain_xlsx(ctx: BenchContext, target: Path) -> tuple[float, int]:
    """A plain streaming XLSX writer loop over the same rows: seconds, rows."""
    import xlsxwriter

    target.parent.mkdir(parents=True, exist_ok=True)
    sql, params = _select(ctx, naive_timestamps=True)
    with ctx.reader.connect(ctx.snapshot) as cursor:
        started = time.perf_counter()
        workbook = xlsxwriter.Workbook(
            str(target),
            {"constant_memory": True, "default_date_format": "yyyy-mm-dd hh:mm:ss"},
        )
        sheet = workbook.add_worksheet("orders")
        sheet.write_row(0, 0, COLUMNS)
        row_number = 0
        for batch in cursor.execute(bind(sql, params)).to_arrow_reader(10_000):
            for row in zip(*(column.to_pylist() for column in batch.columns), strict=True):
                row_number += 1
                sheet.write_row(row_number, 0, row)
        workbook.close()
        seconds = time.perf_counter() - started
    target.unlink(missing_ok=True)
    return seconds, row_number


FORKSERVER = b"multiprocessing.forkserver"


@dataclass
class MemorySampler:
    """Polls /proc for Dagster run workers and keeps the highest peak RSS (VmHWM) any of
    them reached. A run worker is a child of the forkserver of the project's code server
    (pipelines.code_server), in that server's process group.

    Listing every process is done every `scan_every` seconds only, reading the peak of
    the workers found every `interval`: scanning /proc every 50 ms took CPU from the
    exports it measured, which their floors, measured without it, did not pay. VmHWM is a
    high-water mark, so a late read loses nothing of a worker still running."""

    group: int
    interval: float = 0.05
    scan_every: float = 0.5
    peak_kb: int = 0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._seen: set[int] = set()  # every worker found
        self._live: set[int] = set()  # those not seen to end yet
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def peak_mb(self) -> float:
        return self.peak_kb / 1024.0

    @property
    def processes(self) -> int:
        return len(self._seen)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Return once every run worker found has ended. A job reads `completed` before
        its run's process ends (its last events, freeing its memory): the next sample
        must not start inside that tail, which belongs to the run before it."""
        deadline = time.monotonic() + timeout
        while self._live and time.monotonic() < deadline:
            time.sleep(self.interval)

    def _run(self) -> None:
        next_scan = 0.0
        while not self._stop.is_set():
            if time.monotonic() >= next_scan:
                next_scan = time.monotonic() + self.scan_every
                for proc in Path("/proc").iterdir():
                    if proc.name.isdigit() and int(proc.name) not in self._live:
                        self._sample(proc)
            for pid in list(self._live):
                if not self._read_peak(Path(f"/proc/{pid}")):
                    self._live.discard(pid)  # ended: its pid may be reused
            self._stop.wait(self.interval)

    def _read_peak(self, proc: Path) -> bool:
        """Fold the process's VmHWM into the peak; False when it is gone."""
        try:
            for line in (proc / "status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    self.peak_kb = max(self.peak_kb, int(line.split()[1]))
                    return True
        except (OSError, ValueError, IndexError):
            pass
        return False

    def _sample(self, proc: Path) -> None:
        try:
            # Fields after the command name: state, ppid, pgrp, ...
            _state, parent, group, *_ = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            if int(group) != self.group:
                return
            # A fork keeps its parent's command line: a run's and its forkserver's are
            # alike, and only a run's parent is the forkserver.
            if FORKSERVER not in Path(f"/proc/{parent}/cmdline").read_bytes():
                return
            if self._read_peak(proc):
                self._seen.add(int(proc.name))
                self._live.add(int(proc.name))
        except (OSError, ValueError, IndexError):
            return  # the process ended between listing and reading


def unavailable_reason(error: BaseException) -> str:
    """One line (plus a log tail for services) saying why exports could not be measured."""
    if isinstance(error, ServiceFailed | ExportFailed):
        return str(error)
    return f"{type(error).__name__}: {error}"
