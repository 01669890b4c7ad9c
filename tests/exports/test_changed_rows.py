"""Changed-rows exports (`rows: changed`) over a store of their own in the known warehouse:
each sync replaces the store's orders (Quarry's writers delete and re-insert, so the change
feed names every key), and each run delivers exactly what changed since the last completed
one, decided by comparing both ends; failures, resets, maintenance and the retention."""

from __future__ import annotations

import csv
import io
import json
import threading
import time
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from exports.configs.change_starts import WAIT_SECONDS
from exports.configs.saved import reset_changes
from exports.jobs import execute
from exports.jobs.execute import ExportFailed
from exports.jobs.lifecycle import finish
from pipelines.exports.runs import changed_rows_config, run_tags
from pipelines.instance import CHANGED_ROWS_TAG, instance_config
from registry.accounts import create_account, create_store
from registry.models import ExportChangeStart, ExportJob, SnapshotPin, utcnow
from tests.api.world import World
from tests.destinations.servers import AlertChannels
from tests.exports.conftest import new_job, run_config, stored
from warehouse.maintenance import maintain
from warehouse.pages import ChangePage
from warehouse.schemas import TABLES
from warehouse.snapshots import record_snapshot
from warehouse.writer import StoreWriter

STORE = "st_cr1"
T0 = datetime(2024, 6, 1, 10, 0, tzinfo=UTC)
COLUMNS = ["order_name", "financial_status", "total_price"]


def order(n: int, status: str = "paid", total: str = "10.00", store: str = STORE) -> dict[str, Any]:
    return {
        "id": f"ord_cr_{n:02d}", "store_id": store, "platform_id": str(n),
        "order_name": f"#{n}", "created_at": T0 + timedelta(hours=n),
        "updated_at": T0 + timedelta(hours=n), "currency": "USD",
        "financial_status": status, "total_price": Decimal(total),
    }  # fmt: skip


class Store:
    """A store of its own, synced in full each time (delete and re-insert)."""

    def __init__(self, world: World, store_id: str = STORE) -> None:
        self.world = world
        self.store_id = store_id
        self.orders: dict[int, dict[str, Any]] = {}

    def sync(self, publish: bool = True) -> int:
        """Write the orders; publish the snapshot unless told not to (a sync cut short)."""
        rows = [self.orders[n] for n in sorted(self.orders)]
        table = pa.Table.from_pylist(rows, schema=TABLES["orders"].schema)
        StoreWriter(self.world.lake, self.store_id).apply(
            ChangePage({"orders": table}), full=True, first=True
        )
        version = self.world.lake.version()
        if publish:
            record_snapshot(self.world.registry, self.store_id, version)
        return version


@pytest.fixture(scope="module")
def world_cr(export_world: World) -> Iterator[tuple[World, str]]:
    with export_world.registry.session() as session:
        account = create_account(session, name="Changes", currency="USD", timezone="UTC")
        create_store(session, account_id=account.id, name="Changes store", domain="cr.example.com",
                     currency="USD", timezone="UTC", platform="demo", store_id=STORE)  # fmt: skip
        account_id = account.id
    export_world.accounts["cr"] = account_id
    yield export_world, account_id


def apply(world: World, entries: list[dict[str, Any]]) -> dict[str, str]:
    from tests.exports.conftest import apply_yaml

    return apply_yaml(world, "cr", {"exports": entries})


def run(world: World, config_id: str) -> tuple[str, list[dict[str, Any]]]:
    job_id, failure = run_config(world, config_id)
    assert failure is None, failure
    text = stored(world.settings, world, job_id).read_text(encoding="utf-8")
    return job_id, [json.loads(line) for line in text.splitlines()]


def add_stores(world: World, account_id: str, *store_ids: str) -> None:
    """More USD stores of the account, in UTC."""
    with world.registry.session() as session:
        for store_id in store_ids:
            create_store(session, account_id=account_id, name=f"Store {store_id}",
                         domain=f"{store_id}.example.com", currency="USD", timezone="UTC",
                         platform="demo", store_id=store_id)  # fmt: skip


def kinds(records: list[dict[str, Any]]) -> dict[str, str]:
    return {r["id"]: r["_change"] for r in records}


def test_each_run_delivers_what_changed_since_the_last_completed_one(
    world_cr: tuple[World, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    world, _ = world_cr
    store = Store(world)
    store.orders = {n: order(n) for n in range(1, 6)}
    store.orders[3] = order(3, "refunded")
    first_version = store.sync()
    ids = apply(world, [{
        "name": "Paid changes", "entity_type": "orders", "format": "jsonl", "rows": "changed",
        "stores": [STORE], "columns": COLUMNS,
        "filters": {"financial_status": ["paid", "partially_refunded"]},
    }])  # fmt: skip
    config_id = ids["Paid changes"]

    # First run: everything that passes the filters, as inserts, with id added.
    job_id, records = run(world, config_id)
    assert kinds(records) == {"ord_cr_01": "insert", "ord_cr_02": "insert",
                              "ord_cr_04": "insert", "ord_cr_05": "insert"}  # fmt: skip
    assert all(r["_snapshot"] == first_version for r in records)
    assert list(records[0]) == ["id", *COLUMNS, "_change", "_snapshot"]
    assert records[0]["total_price"] == "10.00"

    # A sync: o1 changes, o2 goes, o6 comes, o4 leaves the filters, o3 enters them, o5 is
    # rewritten unchanged. The feed names all of them; only real changes are delivered.
    store.orders[1] = order(1, total="11.50")
    del store.orders[2]
    store.orders[6] = order(6)
    store.orders[4] = order(4, "refunded")
    store.orders[3] = order(3, "paid")
    second_version = store.sync()
    job_id, records = run(world, config_id)
    assert kinds(records) == {"ord_cr_01": "update", "ord_cr_02": "delete",
                              "ord_cr_03": "insert", "ord_cr_04": "delete",
                              "ord_cr_06": "insert"}  # fmt: skip
    assert {r["id"]: r["total_price"] for r in records}["ord_cr_01"] == "11.50"
    # A deleted row carries its values at the start.
    assert next(r for r in records if r["id"] == "ord_cr_02")["order_name"] == "#2"
    assert all(r["_snapshot"] == second_version for r in records)
    manifest = world_manifest(world, job_id)
    assert manifest["rows"] == "changed" and manifest["row_count"] == 5
    assert manifest["parts"][0]["changes"] == {"insert": 2, "update": 1, "delete": 2}
    assert manifest["stores"] == [{"store_id": STORE, "snapshot": second_version,
                                   "since": first_version, "reason": None}]  # fmt: skip
    # Delivered beside the file, to a destination that is a folder (here: local).
    with world.registry.session() as session:
        delivered = session.get(ExportJob, job_id).file_name  # type: ignore[union-attr]
    folder = world.settings.home / "deliveries"
    assert json.loads((folder / f"{delivered}.manifest.json").read_text()) == manifest
    assert manifest["file"]["name"] == delivered

    # Nothing changed: an empty file (no rows).
    store.sync()
    job_id, records = run(world, config_id)
    assert records == [] and stored(world.settings, world, job_id).read_bytes() == b""

    # A run that fails changes nothing: the next one covers both syncs.
    store.orders[5] = order(5, total="5.55")
    store.sync()

    def undeliverable(*args: Any, **kwargs: Any) -> str:
        raise ExportFailed("the destination is down")

    monkeypatch.setattr(execute, "_deliver", undeliverable)
    _, failure = run_config(world, config_id)
    assert failure == "the destination is down"
    monkeypatch.undo()
    store.orders[6] = order(6, total="6.66")
    # Maintenance may expire snapshots in between, never the start.
    maintain(world.lake, world.registry, retention=timedelta(0))
    store.sync()
    _, records = run(world, config_id)
    assert kinds(records) == {"ord_cr_05": "update", "ord_cr_06": "update"}

    # Reset: the next run delivers everything again.
    with world.registry.session() as session:
        assert reset_changes(session, config_id) == 1
    _, records = run(world, config_id)
    assert kinds(records) == dict.fromkeys(
        ["ord_cr_01", "ord_cr_03", "ord_cr_05", "ord_cr_06"], "insert"
    )


def test_each_store_reads_its_own_range(world_cr: tuple[World, str]) -> None:
    """Stores of one configuration start and end at different snapshots: each delivers the
    changes of its own range, not another store's, nor a commit its snapshot does not cover
    yet (a sync not published)."""
    world, account_id = world_cr
    add_stores(world, account_id, "st_cr2", "st_cr3")
    a, b = Store(world, "st_cr2"), Store(world, "st_cr3")
    a.orders = {n: order(n, store=a.store_id) for n in range(1, 4)}
    b.orders = {n: order(n, store=b.store_id) for n in range(1, 4)}
    a.sync()
    b_first = b.sync()
    ids = apply(world, [{"name": "Two stores", "entity_type": "orders", "format": "jsonl",
                         "rows": "changed", "stores": ["st_cr2", "st_cr3"],
                         "columns": COLUMNS}])  # fmt: skip
    config_id = ids["Two stores"]
    _, records = run(world, config_id)
    assert len(records) == 6

    # Only a changes: b's range is empty.
    a.orders[1] = order(1, total="1.11", store=a.store_id)
    a_second = a.sync()
    _, records = run(world, config_id)
    assert [(r["id"], r["_change"], r["_snapshot"]) for r in records] == [
        ("ord_cr_01", "update", a_second)
    ]
    # b changes and is published; b changes again without publishing; then a changes: the
    # feed read spans all of it, each store keeps its own published range.
    b.orders[2] = order(2, total="2.22", store=b.store_id)
    b_second = b.sync()
    b.orders[3] = order(3, total="3.33", store=b.store_id)
    b.sync(publish=False)
    del a.orders[2]
    a_third = a.sync()
    _, records = run(world, config_id)
    assert sorted((r["id"], r["_change"], r["_snapshot"]) for r in records) == [
        ("ord_cr_02", "delete", a_third), ("ord_cr_02", "update", b_second)
    ]  # fmt: skip
    assert b_first < b_second < a_third
    # b's unpublished commit is delivered once it is published.
    record_snapshot(world.registry, b.store_id, world.lake.version())
    _, records = run(world, config_id)
    assert [(r["id"], r["_change"], r["total_price"]) for r in records] == [
        ("ord_cr_03", "update", "3.33")
    ]


def test_stores_sharing_a_range_keep_their_keys_apart(world_cr: tuple[World, str]) -> None:
    """Stores published at the same snapshots are read together (one feed, one time travel
    per end): an order id that two stores both hold is matched within its own store, so an
    update in one and a deletion in the other stay what they are."""
    world, account_id = world_cr
    add_stores(world, account_id, "st_cr4", "st_cr5")
    a, b = Store(world, "st_cr4"), Store(world, "st_cr5")

    def sync_both() -> int:
        a.sync(publish=False)
        version = b.sync()
        record_snapshot(world.registry, a.store_id, version)
        return version

    a.orders = {n: order(n, store=a.store_id) for n in range(1, 4)}
    b.orders = {n: order(n, store=b.store_id) for n in range(1, 4)}
    sync_both()
    ids = apply(world, [{"name": "Shared range", "entity_type": "orders", "format": "jsonl",
                         "rows": "changed", "stores": ["st_cr4", "st_cr5"],
                         "columns": [*COLUMNS, "store_id"]}])  # fmt: skip
    config_id = ids["Shared range"]
    _, records = run(world, config_id)
    assert len(records) == 6 and {r["_change"] for r in records} == {"insert"}

    a.orders[1] = order(1, total="1.11", store=a.store_id)
    del b.orders[1]
    b.orders[3] = order(3, store=b.store_id)  # written again, unchanged: not delivered
    second = sync_both()
    _, records = run(world, config_id)
    assert sorted((r["store_id"], r["id"], r["_change"], r["_snapshot"]) for r in records) == [
        ("st_cr4", "ord_cr_01", "update", second), ("st_cr5", "ord_cr_01", "delete", second)
    ]  # fmt: skip


def test_deletes_kept_in_the_catalog_for_an_older_file_are_read(
    world_cr: tuple[World, str],
) -> None:
    """A few rows deleted from a Parquet file that already has a delete file: DuckLake keeps
    those deletes in its catalog (data inlining), and a filter on the change feed's
    snapshot_id drops them (a DuckLake 1.5.5 bug, duckdb/ducklake pull request 1369), which
    made their updates read as inserts and their deletes vanish. The feed is read on its
    own bounds: every change is delivered."""
    world, account_id = world_cr
    add_stores(world, account_id, "st_cr6", "st_cr7")
    store, other = Store(world, "st_cr6"), Store(world, "st_cr7")

    def change(numbers: range, total: str, deleted: tuple[int, ...] = ()) -> int:
        """An incremental sync: the orders `numbers` written again at `total`, the orders
        `deleted` deleted."""
        for n in numbers:
            store.orders[n] = order(n, total=total, store=store.store_id)
        for n in deleted:
            del store.orders[n]
        table = pa.Table.from_pylist(
            [store.orders[n] for n in numbers], schema=TABLES["orders"].schema
        )
        page = ChangePage({"orders": table}, [f"ord_cr_{n:02d}" for n in deleted])
        StoreWriter(world.lake, store.store_id).apply(page, full=False, first=True)
        version = world.lake.version()
        record_snapshot(world.registry, store.store_id, version)
        return version

    # Beyond DuckLake's data inlining: the rows go to a Parquet file, and the deletes of
    # many of them to a delete file.
    store.orders = {n: order(n, store=store.store_id) for n in range(1, 201)}
    store.sync()
    change(range(1, 51), "2.00")
    # The store's snapshot moves past that delete file's (another store's write): the
    # next run's start.
    other.orders = {1: order(1, store=other.store_id)}
    record_snapshot(world.registry, store.store_id, other.sync())
    ids = apply(world, [{"name": "Inlined deletes", "entity_type": "orders", "format": "jsonl",
                         "rows": "changed", "stores": [store.store_id],
                         "columns": COLUMNS}])  # fmt: skip
    _, records = run(world, ids["Inlined deletes"])
    assert len(records) == 200

    # A few more rows of the same file: their deletes stay in the catalog.
    version = change(range(101, 104), "3.00", deleted=(150,))
    _, records = run(world, ids["Inlined deletes"])
    assert kinds(records) == {
        "ord_cr_101": "update", "ord_cr_102": "update", "ord_cr_103": "update",
        "ord_cr_150": "delete",
    }  # fmt: skip
    assert {r["_snapshot"] for r in records} == {version}


def world_manifest(world: World, job_id: str) -> dict[str, Any]:
    with world.registry.session() as session:
        job = session.get(ExportJob, job_id)
        assert job is not None and job.manifest is not None
        beside = stored(world.settings, world, job_id).with_name("manifest.json")
        assert json.loads(beside.read_text()) == job.manifest
        return dict(job.manifest)


def test_a_start_past_its_retention_starts_over_loudly(
    world_cr: tuple[World, str], alert_channels: AlertChannels
) -> None:
    world, _ = world_cr
    store = Store(world)
    store.orders = {n: order(n) for n in range(1, 4)}
    store.sync()
    ids = apply(world, [{"name": "Old start", "entity_type": "orders", "format": "csv",
                         "rows": "changed", "stores": [STORE], "columns": COLUMNS}])  # fmt: skip
    config_id = ids["Old start"]
    run_config(world, config_id)
    with world.registry.session() as session:
        start = session.get(ExportChangeStart, (config_id, STORE))
        assert start is not None
        pins = session.query(SnapshotPin).filter_by(holder=f"changes:{config_id}").all()
        assert [p.version for p in pins] == [start.version]  # maintenance keeps it
        start.recorded_at = datetime.now(UTC) - timedelta(days=31)
    store.sync()
    alerting = world.settings.model_copy(update={"alert_webhook_url": alert_channels.webhook.url})
    job_id = new_job(world, config_id)
    execute.execute_job(alerting, world.registry, job_id, f"run-{job_id}")
    # Loudly: the operators hear that it delivers every row again, and why.
    [post] = alert_channels.webhook.posts
    lines = post["text"].splitlines()
    assert lines[0] == f"Quarry: export Old start job {job_id} delivers every row again."
    assert any("QUARRY_CHANGED_ROWS_RETENTION_DAYS" in line for line in lines)
    rows = list(csv.reader(io.StringIO(stored(world.settings, world, job_id).read_text())))
    assert rows[0] == ["ID", "Order", "Financial status", "Total price", "_change", "_snapshot"]
    assert [r[4] for r in rows[1:]] == ["insert"] * 3
    [read] = world_manifest(world, job_id)["stores"]
    assert read["since"] is None and "QUARRY_CHANGED_ROWS_RETENTION_DAYS" in read["reason"]
    # Nothing changed since: a header-only CSV.
    job_id, failure = run_config(world, config_id)
    rows = list(csv.reader(io.StringIO(stored(world.settings, world, job_id).read_text())))
    assert failure is None and len(rows) == 1


def test_parquet_and_zip_of_changed_rows(world_cr: tuple[World, str]) -> None:
    world, _ = world_cr
    store = Store(world)
    store.orders = {1: order(1)}
    store.sync()
    ids = apply(world, [
        {"name": "Changes parquet", "entity_type": "orders", "format": "parquet",
         "rows": "changed", "stores": [STORE], "columns": COLUMNS},
        {"name": "Changes zip", "entity_type": "bundle", "format": "zip", "rows": "changed",
         "stores": [STORE], "parts": [{"entity_type": "orders", "columns": COLUMNS}]},
    ])  # fmt: skip
    for name in ids:
        run_config(world, ids[name])
    store.sync()  # unchanged
    job_id, failure = run_config(world, ids["Changes parquet"])
    table = pq.read_table(stored(world.settings, world, job_id))
    assert failure is None and table.num_rows == 0
    assert table.schema.names == ["id", *COLUMNS, "_change", "_snapshot"]
    assert table.schema.field("total_price").type == pa.decimal128(18, 2)
    job_id, failure = run_config(world, ids["Changes zip"])
    assert failure is None
    with zipfile.ZipFile(stored(world.settings, world, job_id)) as archive:
        assert archive.namelist() == ["orders.csv", "manifest.json"]
        inside = json.loads(archive.read("manifest.json"))
    assert inside["parts"][0]["changes"] == {"insert": 0, "update": 0, "delete": 0}
    assert inside["file"]["members"] == ["orders.csv"] and "sha256" not in inside["file"]
    assert "sha256" in world_manifest(world, job_id)["file"]


@pytest.mark.parametrize(
    ("entry", "key", "problem"),
    [
        ({"entity_type": "query", "query": "FROM sales SHOW total_sales"}, "rows", "query"),
        ({"rows": "some"}, "rows", "must be all or changed"),
        ({"entity_type": "bundle", "format": "zip", "parts": [
            {"entity_type": "orders"}, {"name": "s", "entity_type": "query",
                                        "query": "FROM sales SHOW total_sales"}]},
         "rows", "part 's' is a query"),
    ],
)  # fmt: skip
def test_changed_rows_needs_record_data(
    world_cr: tuple[World, str], entry: dict[str, Any], key: str, problem: str
) -> None:
    from quarry.errors import InvalidRequest

    world, _ = world_cr
    base = {"name": "Bad", "entity_type": "orders", "format": "csv", "rows": "changed"}
    with pytest.raises(InvalidRequest) as error:
        apply(world, [{**base, **entry}])
    assert f"exports[0].{key}" in error.value.detail and problem in error.value.detail


def test_runs_of_one_configuration_go_one_at_a_time(world_cr: tuple[World, str]) -> None:
    world, _ = world_cr
    store = Store(world)
    store.orders = {1: order(1)}
    store.sync()
    ids = apply(world, [{"name": "One at a time", "entity_type": "orders", "format": "jsonl",
                         "rows": "changed", "stores": [STORE], "columns": COLUMNS}])  # fmt: skip
    config_id = ids["One at a time"]
    # An earlier job of the configuration is running (its run has claimed it).
    earlier = new_job(world, config_id, status="running", started_at=utcnow(),
                      heartbeat_at=utcnow(), worker="elsewhere:1")  # fmt: skip
    later = new_job(world, config_id)
    outcome: list[BaseException | None] = []

    def second() -> None:
        try:
            execute.execute_job(world.settings, world.registry, later, f"run-{later}")
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=second)
    thread.start()
    time.sleep(3 * WAIT_SECONDS)
    assert thread.is_alive() and not outcome  # waiting behind the earlier job
    with world.registry.session() as session:
        finish(session, earlier, "failed", error="test: ended")
    thread.join(timeout=60)
    assert outcome == [None]
    with world.registry.session() as session:
        job = session.get(ExportJob, later)
        assert job is not None and job.status == "completed"


def test_changed_rows_runs_carry_the_tag_dagster_queues_one_at_a_time(
    world_cr: tuple[World, str],
) -> None:
    world, _ = world_cr
    ids = apply(world, [
        {"name": "Tagged", "entity_type": "orders", "format": "csv", "rows": "changed",
         "stores": [STORE]},
        {"name": "Untagged", "entity_type": "orders", "format": "csv", "stores": [STORE]},
    ])  # fmt: skip
    tagged, untagged = new_job(world, ids["Tagged"]), new_job(world, ids["Untagged"])
    assert changed_rows_config(world.registry, tagged) == ids["Tagged"]
    assert changed_rows_config(world.registry, untagged) is None
    assert run_tags(tagged, "Tagged", ids["Tagged"])[CHANGED_ROWS_TAG] == ids["Tagged"]
    limits = instance_config(world.settings)["concurrency"]["runs"]["tag_concurrency_limits"]
    assert {"key": CHANGED_ROWS_TAG, "value": {"applyLimitPerUniqueValue": True},
            "limit": 1} in limits  # fmt: skip
