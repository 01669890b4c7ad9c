"""Record figures: GET /v1/orders (a filtered page of 250, a deep page, one order by id)
against the same reads run directly in DuckDB on the same snapshot, and throughput at 16
concurrent connections against DuckDB-direct throughput at the same concurrency.

The floors select every column of the same rows in the same order with the same LIMIT and
OFFSET, and fetch them into Python: what a hand-written read of the warehouse costs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.context import BenchContext, timed
from bench.load import http_throughput, thread_throughput
from bench.stats import Figure, Section, at_least_ratio, within
from warehouse.sql_values import bind

PAGE_SIZE = 250
DEEP_PAGE = 200
CONCURRENCY = 16
FILTER = ("financial_status", "paid")
SAMPLE_IDS = 64


@dataclass(frozen=True)
class RecordRead:
    name: str
    title: str
    path: Callable[[int], str]
    read: Callable[[Any, int], Any]


def _reads(ctx: BenchContext, ids: list[str]) -> list[RecordRead]:
    stores = ctx.dataset.store_ids
    marks = ", ".join("?" * len(stores))
    order = 'ORDER BY "created_at", "id"'
    field, value = FILTER

    def page(cursor: Any, _i: int) -> Any:
        return cursor.execute(
            bind(
                f'SELECT * FROM orders WHERE store_id IN ({marks}) AND "{field}" = ? {order} '
                "LIMIT ? OFFSET 0",
                [*stores, value, PAGE_SIZE + 1],
            )
        ).fetchall()

    def deep(cursor: Any, _i: int) -> Any:
        return cursor.execute(
            bind(
                f"SELECT * FROM orders WHERE store_id IN ({marks}) {order} LIMIT ? OFFSET ?",
                [*stores, PAGE_SIZE + 1, (DEEP_PAGE - 1) * PAGE_SIZE],
            )
        ).fetchall()

    def by_id(cursor: Any, i: int) -> Any:
        return cursor.execute(
            bind(
                f"SELECT * FROM orders WHERE id = ? AND store_id IN ({marks}) LIMIT 1",
                [ids[i % len(ids)], *stores],
            )
        ).fetchone()

    return [
        RecordRead(
            "page_filtered",
            f"GET /v1/orders page_size={PAGE_SIZE}, {field}={value}",
            lambda _i: f"/v1/orders?page_size={PAGE_SIZE}&{field}={value}",
            page,
        ),
        RecordRead(
            "deep_page",
            f"GET /v1/orders page={DEEP_PAGE}, page_size={PAGE_SIZE}",
            lambda _i: f"/v1/orders?page_size={PAGE_SIZE}&page={DEEP_PAGE}",
            deep,
        ),
        RecordRead(
            "by_id", "GET /v1/orders/{id}", lambda i: f"/v1/orders/{ids[i % len(ids)]}", by_id
        ),
    ]


def sample_ids(ctx: BenchContext) -> list[str]:
    """Order ids spread over the whole table, the same ones on every run of one dataset."""
    with ctx.reader.connect(ctx.snapshot) as cursor:
        rows = cursor.execute(
            f"SELECT id FROM orders ORDER BY hash(order_name), id LIMIT {SAMPLE_IDS}"
        ).fetchall()
    return [row[0] for row in rows]


def run_section(ctx: BenchContext, section: Section) -> None:
    ids = sample_ids(ctx)
    with ctx.client() as client:
        for read in _reads(ctx, ids):
            _latency(ctx, section, client, read)
    _throughput(ctx, section, _reads(ctx, ids)[0])


class _Counter:
    def __init__(self) -> None:
        self.i = 0

    def next(self) -> int:
        self.i += 1
        return self.i


def _latency(ctx: BenchContext, section: Section, client: Any, read: RecordRead) -> None:
    counter = _Counter()

    def http() -> int:
        response = client.get(read.path(counter.next()))
        response.raise_for_status()
        return len(response.content)

    ours, size = timed(http, ctx.repeats)
    floor_counter = _Counter()
    with ctx.reader.connect(ctx.snapshot) as cursor:
        floor, _ = timed(lambda: read.read(cursor, floor_counter.next()), ctx.repeats)
    detail = {"http": ours.to_json(), "floor": floor.to_json(), "response_bytes": size}
    name = f"records.{read.name}"
    section.add(
        Figure(
            f"{name}.p50",
            f"{read.title}: p50",
            "ms",
            ours.p50,
            floor=floor.p50,
            target=within(1, 15, "ms"),
            detail=detail,
        )
    )
    section.add(Figure(f"{name}.p95", f"{read.title}: p95", "ms", ours.p95, floor=floor.p95))


def _throughput(ctx: BenchContext, section: Section, read: RecordRead) -> None:
    http = http_throughput(ctx.api_url + read.path(0), ctx.key, CONCURRENCY, ctx.load_seconds)
    direct = thread_throughput(
        lambda: ctx.reader.connect(ctx.snapshot),
        lambda cursor: read.read(cursor, 0),
        CONCURRENCY,
        ctx.load_seconds,
    )
    note = f"HTTP load by {http.tool}"
    if http.failures:
        note += f"; {http.failures} responses were not 2xx"
    if http.note:
        note += f"; {http.note}"
    section.add(
        Figure(
            "records.throughput_16",
            f"{read.title}: requests/s at {CONCURRENCY} connections vs DuckDB direct",
            "req/s",
            http.per_second,
            floor=direct.per_second,
            target=at_least_ratio(0.7),
            note=note,
            detail={"seconds": ctx.load_seconds, "floor_tool": direct.tool},
        )
    )
