"""The demo platform on several hosts: an account seeded and advanced from one QUARRY_HOME is
synced from another, the two sharing only the registry, the lake's catalog and an S3 store
(moto's server) that holds the demo files under <QUARRY_DATA_URL>/demo. Neither home holds
a demo file, and the warehouse follows the platform exactly."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pytest

from cli.demo_account import advance_demo, seed_demo
from pipelines.runner import sync_stores
from platforms.demo.seed import demo_stores
from platforms.demo.storage import demo_accounts, load_table
from quarry.files import TEMPORARY_MARK, s3_filesystem
from quarry.settings import Settings, load_settings
from registry.db import Registry
from tests.destinations.servers import S3Server
from tests.pipelines.helpers import sort_rows, warehouse_rows
from warehouse.schemas import SOURCE_DATASETS

pytestmark = pytest.mark.slow

SYNCED_TABLES = [table for tables in SOURCE_DATASETS.values() for table in tables]


@dataclass(frozen=True)
class Hosts:
    seeder: Settings  # where `quarry demo seed` and `advance` run
    worker: Settings  # where syncs run: the environment's QUARRY_HOME
    bucket: str
    s3: S3Server

    def bucket_keys(self) -> list[str]:
        client = self.s3.admin_client()
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket)  # type: ignore[attr-defined]
        return [item["Key"] for page in pages for item in page.get("Contents", [])]


@pytest.fixture
def hosts(
    quarry_env: Settings,
    dagster_home: Path,
    s3_server: S3Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Hosts]:
    bucket = f"demo-{uuid.uuid4().hex[:10]}"
    s3_server.admin_client().create_bucket(Bucket=bucket)  # type: ignore[attr-defined]
    shared = tmp_path / "shared"
    shared.mkdir()
    for name, value in {
        "AWS_ACCESS_KEY_ID": s3_server.admin["access_key_id"],
        "AWS_SECRET_ACCESS_KEY": s3_server.admin["secret_access_key"],
        "QUARRY_DATA_URL": f"s3://{bucket}/quarry",
        "QUARRY_S3_ENDPOINT_URL": s3_server.endpoint_url,
        "QUARRY_S3_REGION": "us-east-1",
        "QUARRY_DATABASE_URL": f"sqlite:///{shared / 'registry.db'}",
        "QUARRY_CATALOG_URL": f"sqlite:///{shared / 'catalog.sqlite'}",
    }.items():
        monkeypatch.setenv(name, value)
    # The S3 client is kept per endpoint with the credentials it was made with.
    s3_filesystem.cache_clear()
    try:
        yield Hosts(
            seeder=load_settings(home=tmp_path / "seeder-home"),
            worker=load_settings(),
            bucket=bucket,
            s3=s3_server,
        )
    finally:
        s3_filesystem.cache_clear()


def _assert_matches_platform(hosts: Hosts, account_id: str, store_ids: list[str]) -> None:
    for store_id in store_ids:
        for table in SYNCED_TABLES:
            truth = sort_rows(table, load_table(hosts.seeder, account_id, store_id, table))
            synced = warehouse_rows(hosts.worker, table, store_id)
            assert synced.equals(truth), (store_id, table)


def test_a_worker_syncs_a_demo_account_seeded_on_another_host(hosts: Hosts) -> None:
    seeder = Registry(hosts.seeder)
    worker = Registry(hosts.worker)
    try:
        account_id = seed_demo(
            hosts.seeder, seeder, orders=400, stores=2, seed=13, anchor=date(2025, 5, 1)
        )
        store_ids = [s.id for s in demo_stores(hosts.worker, account_id)]
        assert demo_accounts(hosts.worker) == [account_id]
        keys = hosts.bucket_keys()
        assert f"quarry/demo/{account_id}/state.json" in keys
        assert f"quarry/demo/{account_id}/{store_ids[0]}/orders.parquet" in keys

        first = sync_stores(hosts.worker, worker)
        assert all(o.success for o in first), [(o.failed_step, o.error) for o in first]
        _assert_matches_platform(hosts, account_id, store_ids)

        advance_demo(hosts.seeder, seeder, account_id, days=2)
        changed = sync_stores(hosts.worker, worker)
        assert all(o.success for o in changed), [(o.failed_step, o.error) for o in changed]
        assert all(o.rows["orders"] > 0 for o in changed if o.label in store_ids)
        _assert_matches_platform(hosts, account_id, store_ids)
    finally:
        seeder.dispose()
        worker.dispose()

    for home in (hosts.seeder.home, hosts.worker.home):
        assert not (home / "demo").exists(), home
    keys = hosts.bucket_keys()
    assert not [k for k in keys if TEMPORARY_MARK in k or "/.seeding-" in k]
    # Keys ending in "/" are folder markers: pyarrow keeps a folder when it deletes or
    # moves the folder's last file.
    demo = [k for k in keys if k.startswith("quarry/demo/") and not k.endswith("/")]
    assert {k.split("/")[2] for k in demo} == {account_id}
