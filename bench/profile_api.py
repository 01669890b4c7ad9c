"""`python -m bench.profile_api`: the API's fixed cost, where an uncached request's time goes
outside the data work.

Two requests on a bench home that `python -m bench` seeded and synced: one order by id
(GET /v1/orders/{id}) and a small query (a month of one store's days, from a rollup). For
each, in this process and in its one thread, each step the route takes is timed apart,
`--repeats` times, medians reported: the key check (registry), the published snapshot
(registry), a cursor on the snapshot's views, planning (parse and check), the data work
(the DuckDB statements that read rows: the by-id SELECT, the engine's aggregate
statements), the rest of the engine (exchange rates, registered relations, Python), and
the JSON. The same request through HTTP (uvicorn, as `quarry serve` runs it, the query
cache off) gives the whole, one HTTP request after each in-process one; the fixed cost is
the median of (HTTP time - that round's data work). `python -m bench --sections query`
reports it too (run_section). With `--pyinstrument`, a profile of the in-process path is
written beside `--out`.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import click
import duckdb

from bench.stats import Figure, Section, Timings, at_most_value

# The query profiled: small (a month of one store's days), answered from a rollup, so its
# data work is a few milliseconds and its time is mostly the fixed cost.
QUERY_NAME = "store_month_days"
# Rounds of each request in the bench's section at least: the machine is shared, and a
# difference of two medians needs many samples.
MIN_ROUNDS = 100


@dataclass
class Steps:
    """Seconds per named step, summed within a run (a query sends several statements),
    over many runs."""

    runs: list[dict[str, float]] = field(default_factory=list)

    def new_run(self) -> Steps:
        self.runs.append({})
        return self

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - started)

    def add(self, name: str, seconds: float) -> None:
        if not self.runs:
            self.runs.append({})
        run = self.runs[-1]
        run[name] = run.get(name, 0.0) + seconds

    def in_run(self, names: tuple[str, ...]) -> float:
        return sum(self.runs[-1].get(n, 0.0) for n in names) if self.runs else 0.0

    def medians(self) -> dict[str, float]:
        names = {name for run in self.runs for name in run}
        return {
            name: Timings.of_seconds([run.get(name, 0.0) for run in self.runs]).p50
            for name in sorted(names)
        }


class DataCursor:
    """A DuckDB cursor that books the time of the statements that read the warehouse's rows
    (`data`) apart from the others (catalog and view look-ups: `other`)."""

    def __init__(self, cursor: duckdb.DuckDBPyConnection, steps: Steps) -> None:
        self._cursor = cursor
        self._steps = steps

    def execute(self, sql: str, params: Any = None) -> duckdb.DuckDBPyConnection:
        started = time.perf_counter()
        result = self._cursor.execute(sql, params)
        seconds = time.perf_counter() - started
        bookkeeping = "duckdb_views()" in sql
        self._steps.add("engine: catalog look-ups" if bookkeeping else "data work", seconds)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


def _by_id_request(app: Any, key: str, record_id: str, steps: Steps) -> bytes:
    """What GET /v1/orders/{id} does after FastAPI routed it, step by step."""
    from api.json import raw_json_response
    from registry.principals import load_principal
    from warehouse.records import get_record, parse_record_params, record_dataset

    ds = record_dataset("orders")
    with steps.step("key check"), app.state.registry.engine.connect() as connection:
        principal = load_principal(connection, key)
    assert principal is not None, "the bench's key is live"
    fields = parse_record_params(ds, [])
    stores = principal.store_ids
    reader = app.state.reader
    with steps.step("snapshot"):
        snapshot = reader.snapshot(stores)
    opened = time.perf_counter()
    with reader.connect(snapshot) as cursor:
        steps.add("cursor", time.perf_counter() - opened)
        with steps.step("data work"):
            text = get_record(cursor, ds, record_id, fields, stores)
        closing = time.perf_counter()
    steps.add("cursor", time.perf_counter() - closing)
    with steps.step("json"):
        return bytes(raw_json_response(text).body)


def _query_request(app: Any, key: str, text: str, steps: Steps) -> bytes:
    """What POST /v1/query does after FastAPI routed it, step by step."""
    from api.routes.query import _render
    from registry.principals import load_principal
    from warehouse.query import Limits, QueryContext, StoreInfo
    from warehouse.query.executor import execute, source

    with steps.step("key check"), app.state.registry.engine.connect() as connection:
        principal = load_principal(connection, key)
    assert principal is not None, "the bench's key is live"
    store_ids = principal.reads(None)
    stores = {s.id: StoreInfo(s.name, s.currency, s.timezone) for s in principal.stores}
    context = QueryContext(
        stores, principal.currency, principal.timezone, None, store_ids, datetime.now(UTC)
    )
    limits = Limits()
    with steps.step("planning"):
        plan = context.check(text, limits)
        choice = source(plan, limits)
    reader = app.state.reader
    with steps.step("snapshot"):
        snapshot = reader.snapshot(list(store_ids))
    opened = time.perf_counter()
    # As warehouse.query.service.answer: the rollup read from the reader's memory.
    with reader.connect(snapshot, resident=[choice.source]) as cursor:
        steps.add("cursor", time.perf_counter() - opened)
        statements = ("data work", "engine: catalog look-ups")
        before = steps.in_run(statements)
        started = time.perf_counter()
        cursor_ = cast(duckdb.DuckDBPyConnection, DataCursor(cursor, steps))
        result = execute(cursor_, plan, limits, choice)
        elapsed = time.perf_counter() - started
        inside = steps.in_run(statements) - before
        steps.add("engine: rest (rates, relations, Python)", elapsed - inside)
        closing = time.perf_counter()
    steps.add("cursor", time.perf_counter() - closing)
    with steps.step("json"):
        return bytes(_render(result, "application/json").body)


def measure_requests(
    app: Any, client: Any, key: str, ids: list[str], text: str, repeats: int
) -> dict[str, Any]:
    """Both requests, `repeats` times each: in this process step by step (`app`, built on
    the same home as the server) and through HTTP (`client`, holding `key`), one after
    the other in each round so that the machine's load weighs on both alike. The fixed
    cost is the median over rounds of (HTTP time - that round's data work)."""
    requests: dict[str, tuple[Callable[[Steps, int], Any], Callable[[int], Any]]] = {
        "order_by_id": (
            lambda steps, i: _by_id_request(app, key, ids[i % len(ids)], steps),
            lambda i: client.get(f"/v1/orders/{ids[i % len(ids)]}"),
        ),
        "query_store_month_days": (
            lambda steps, _i: _query_request(app, key, text, steps),
            lambda _i: client.post("/v1/query", json={"query": text}),
        ),
    }
    out: dict[str, Any] = {}
    for name, (in_process, over_http) in requests.items():
        for i in range(3):
            in_process(Steps(), i)
            over_http(i).raise_for_status()
        steps = Steps()
        http: list[float] = []
        for i in range(repeats):
            in_process(steps.new_run(), i)
            started = time.perf_counter()
            over_http(i).raise_for_status()
            http.append(time.perf_counter() - started)
        medians = steps.medians()
        fixed = [h - run.get("data work", 0.0) for h, run in zip(http, steps.runs, strict=True)]
        out[name] = {
            "http": Timings.of_seconds(http).to_json(),
            "steps_p50_ms": {k: round(v, 3) for k, v in medians.items()},
            "in_process_p50_ms": round(sum(medians.values()), 3),
            "fixed_cost_p50_ms": round(Timings.of_seconds(fixed).p50, 3),
        }
    return out


def _profile(request: Callable[[Steps], Any], repeats: int, html: Path) -> None:
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0005)
    profiler.start()
    for _ in range(repeats):
        request(Steps())
    profiler.stop()
    html.write_text(profiler.output_html())


def query_text(dataset: Any) -> str:
    from bench.queries import bench_queries

    queries, _ = bench_queries(dataset)
    return {q.name: q for q in queries}[QUERY_NAME].text


def run_section(ctx: Any, section: Section) -> None:
    """The fixed-cost figures of the bench's query section (bench.queries)."""
    from api.main import create_app
    from bench.records import sample_ids

    app = create_app(ctx.dataset.settings)
    try:
        with ctx.client() as client:
            figures = measure_requests(
                app, client, ctx.key, sample_ids(ctx), query_text(ctx.dataset),
                max(ctx.repeats, MIN_ROUNDS),
            )  # fmt: skip
    finally:
        app.state.reader.close()
    for name, title in (
        ("order_by_id", "GET /v1/orders/{id}"),
        ("query_store_month_days", "POST /v1/query, a month of one store's days (a rollup)"),
    ):
        found = figures[name]
        section.add(
            Figure(
                f"api.fixed_cost.{name}",
                f"{title}: the API's fixed cost, uncached (HTTP p50 - data work), p50",
                "ms",
                found["fixed_cost_p50_ms"],
                target=at_most_value(15, "ms"),
                detail=found,
            )
        )


def measure(home: Path, repeats: int, pyinstrument: Path | None) -> dict[str, Any]:
    """The figures of both requests on a bench home, with a server of its own."""
    from api.main import create_app
    from bench.context import BenchContext
    from bench.dataset import create_key, open_synced
    from bench.records import sample_ids
    from bench.server import ApiServer
    from warehouse.reader import WarehouseReader

    dataset = open_synced(home)
    key = create_key(dataset)
    text = query_text(dataset)
    reader = WarehouseReader(dataset.settings, dataset.registry)
    try:
        ctx = BenchContext(dataset, reader, reader.snapshot(dataset.store_ids), "", key, 1, 0, True)
        ids = sample_ids(ctx)
    finally:
        reader.close()
    app = create_app(dataset.settings)
    out: dict[str, Any] = {"load_at_start": os.getloadavg(), "orders": dataset.orders}
    try:
        with ApiServer(dict(os.environ), dataset.home / "logs") as api:
            ctx.api_url = api.url
            with ctx.client() as client:
                out.update(measure_requests(app, client, key, ids, text, repeats))
        if pyinstrument is not None:
            for name, request in (
                ("order_by_id", lambda s: _by_id_request(app, key, ids[0], s)),
                ("query_store_month_days", lambda s: _query_request(app, key, text, s)),
            ):
                _profile(
                    request, repeats, pyinstrument.with_name(f"{pyinstrument.stem}-{name}.html")
                )
    finally:
        app.state.reader.close()
    out["load_at_end"] = os.getloadavg()
    return out


@click.command()
@click.option("--home", type=click.Path(path_type=Path), required=True, help="A bench home.")
@click.option("--repeats", default=200, show_default=True, help="Runs of each request.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("api-profile.json"))
@click.option(
    "--pyinstrument",
    type=click.Path(path_type=Path),
    default=None,
    help="Also write pyinstrument's HTML profile of each in-process request (NAME-*.html).",
)
def main(home: Path, repeats: int, out: Path, pyinstrument: Path | None) -> None:
    """Where an uncached request's time goes outside the data work."""
    try:
        figures = measure(home.expanduser().resolve(), repeats, pyinstrument)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    for name in ("order_by_id", "query_store_month_days"):
        f = figures[name]
        click.echo(
            f"{name}: HTTP p50 {f['http']['p50_ms']:.1f} ms, in process "
            f"{f['in_process_p50_ms']:.1f} ms, fixed cost (HTTP - data work) "
            f"{f['fixed_cost_p50_ms']:.1f} ms"
        )
        for step, ms in sorted(f["steps_p50_ms"].items(), key=lambda kv: -kv[1]):
            click.echo(f"    {ms:8.2f} ms  {step}")
    click.echo(f"load average: {figures['load_at_start']} -> {figures['load_at_end']}")
    out.write_text(json.dumps(figures, indent=1, default=str))


if __name__ == "__main__":
    main()
