"""`python -m bench.profile_query`: where one of the bench's queries spends its time, the
engine's statements beside the hand-written floor, from DuckDB's own profiler
(docs/benchmark.md quotes its output).

Runs on a bench home that `python -m bench` seeded and synced with this code, on the
snapshot the query section reads. The floor's SQL and the engine (run_query, in this
process, no HTTP) each run once untimed and then `--repeats` times; the last run of each is
profiled: for every statement the engine sent, its time and DuckDB's costliest
operators, and the engine's time outside DuckDB (Python: planning, decimals, totals). The
statements' full SQL and profiles are written as JSON to `--out`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import click
import duckdb

from bench.context import timed
from bench.stats import Timings
from warehouse.sql_values import bind


@dataclass
class Statement:
    """One statement a run sent to DuckDB, with DuckDB's profile of it."""

    sql: str
    seconds: float  # execute() alone: DuckDB runs the statement to its end in it
    profile: dict[str, Any]

    def operators(self, count: int) -> list[tuple[str, float, int]]:
        """The `count` costliest operators: (type and what it reads, seconds, rows out)."""
        found = [
            (_operator_label(node), float(node.get("operator_timing", 0.0)),
             int(node.get("operator_cardinality", 0)))
            for node in _nodes(self.profile)
        ]  # fmt: skip
        return sorted(found, key=lambda o: o[1], reverse=True)[:count]


class ProfilingCursor:
    """A DuckDB cursor that keeps DuckDB's profile of every statement executed through it.

    DuckDB profiles the last statement of a connection and the engine's results are
    materialised by execute(), so each profile is read as soon as its statement returns
    (registering a relation, which the engine does between statements, replaces it)."""

    def __init__(self, cursor: duckdb.DuckDBPyConnection) -> None:
        self._cursor = cursor
        self.statements: list[Statement] = []
        cursor.execute("PRAGMA enable_profiling = 'no_output'")

    def execute(self, sql: str, params: Any = None) -> duckdb.DuckDBPyConnection:
        started = time.perf_counter()
        result = self._cursor.execute(sql, params)
        seconds = time.perf_counter() - started
        profile = json.loads(self._cursor.get_profiling_information(format="json"))
        self.statements.append(Statement(sql, seconds, profile))
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for child in node.get("children", []):
        yield child
        yield from _nodes(child)


def _operator_label(node: dict[str, Any]) -> str:
    info = node.get("extra_info") or {}
    what = info.get("Table") or info.get("Function") or info.get("Aggregates") or ""
    what = " ".join(str(what).split())
    return f"{node.get('operator_type', '?')} {what[:60]}".strip()


def _report(title: str, wall: Timings, statements: list[Statement], top: int) -> None:
    click.echo(
        f"{title}: p50 {wall.p50:,.0f} ms over {len(wall.samples)} runs; "
        f"profiled run: {len(statements)} statement(s), "
        f"{sum(s.seconds for s in statements) * 1000:,.0f} ms in DuckDB"
    )
    for number, statement in enumerate(statements, 1):
        head = " ".join(statement.sql.split())[:110]
        click.echo(f"  [{number}] {statement.seconds * 1000:8,.0f} ms  {head}")
        for label, seconds, rows in statement.operators(top):
            click.echo(f"        {seconds * 1000:8,.0f} ms  {rows:>12,} rows  {label}")


@click.command()
@click.option("--home", type=click.Path(path_type=Path), required=True, help="A bench home.")
@click.option("--query", "name", default="store_breakdown", show_default=True,
              help="A query of the bench's query section, by name.")  # fmt: skip
@click.option("--repeats", default=5, show_default=True, help="Timed runs of each side.")
@click.option("--operators", default=5, show_default=True, help="Operators shown a statement.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("query-profile.json"))
def main(home: Path, name: str, repeats: int, operators: int, out: Path) -> None:
    """Profile one bench query: the engine's statements against the hand-written floor."""
    from bench.dataset import open_synced
    from bench.queries import bench_queries, run_engine
    from warehouse.reader import WarehouseReader

    try:
        dataset = open_synced(home.expanduser().resolve())
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    queries, _notes = bench_queries(dataset)
    by_name = {q.name: q for q in queries}
    if name not in by_name:
        raise click.BadParameter(f"unknown query {name!r}; choose from {sorted(by_name)}")
    query = by_name[name]
    # The API's reader: rollups held in memory as the API holds them.
    reader = WarehouseReader.serving(dataset.settings, dataset.registry)
    snapshot = reader.snapshot(dataset.store_ids)
    try:
        with reader.connect(snapshot) as cursor:
            source = run_engine(cursor, dataset, query.text).source_table or "facts"
        with reader.connect(snapshot, resident=[source]) as cursor:
            floor_wall, _ = timed(
                lambda: cursor.execute(bind(query.sql, query.params)).fetchall(), repeats
            )
            engine_wall, _ = timed(lambda: run_engine(cursor, dataset, query.text), repeats)
            floor = ProfilingCursor(cursor)
            floor.execute(bind(query.sql, query.params)).fetchall()
            engine = ProfilingCursor(cursor)
            started = time.perf_counter()
            run_engine(cast(duckdb.DuckDBPyConnection, engine), dataset, query.text)
            engine_seconds = time.perf_counter() - started
            cursor.execute("PRAGMA disable_profiling")
    finally:
        reader.close()
    click.echo(f"{query.title} ({dataset.orders:,} orders): {query.text}")
    _report("floor (hand-written SQL)", floor_wall, floor.statements, operators)
    _report("engine (run_query, in process)", engine_wall, engine.statements, operators)
    in_duckdb = sum(s.seconds for s in engine.statements)
    click.echo(
        f"engine's profiled run: {engine_seconds * 1000:,.0f} ms, of which outside DuckDB "
        f"{(engine_seconds - in_duckdb) * 1000:,.0f} ms"
    )
    out.write_text(
        json.dumps(
            {
                "query": query.text,
                "orders": dataset.orders,
                "floor": {
                    "wall": floor_wall.to_json(),
                    "statements": [s.__dict__ for s in floor.statements],
                },
                "engine": {
                    "wall": engine_wall.to_json(),
                    "profiled_seconds": engine_seconds,
                    "statements": [s.__dict__ for s in engine.statements],
                },
            },
            indent=1,
            default=str,
        )
    )
    click.echo(f"profiles written to {out}")


if __name__ == "__main__":
    main()
