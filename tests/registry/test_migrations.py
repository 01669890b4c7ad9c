"""Migrations: empty to head on both databases, the result matches registry.models, and
running them again (or from several processes at once) changes nothing."""

from __future__ import annotations

import logging
import subprocess
import sys
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect, text

from quarry.errors import ConfigurationError
from registry.db import alembic_config, make_engine, migrate
from registry.models import Base


def head_revision(engine: Engine) -> str:
    head = ScriptDirectory.from_config(alembic_config(engine)).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def schema_snapshot(engine: Engine) -> dict[str, Any]:
    """Tables with their columns, indexes, keys and constraints, comparable by ==."""
    inspector = inspect(engine)
    snapshot: dict[str, Any] = {}
    for table in sorted(inspector.get_table_names()):
        snapshot[table] = {
            "columns": [
                (c["name"], str(c["type"]), c["nullable"]) for c in inspector.get_columns(table)
            ],
            "indexes": sorted(
                (i["name"] or "", tuple(i["column_names"])) for i in inspector.get_indexes(table)
            ),
            "foreign_keys": sorted(
                (tuple(f["constrained_columns"]), f["referred_table"])
                for f in inspector.get_foreign_keys(table)
            ),
            "unique": sorted(
                tuple(u["column_names"]) for u in inspector.get_unique_constraints(table)
            ),
        }
    return snapshot


def test_migrations_run_from_empty_to_head(empty_engine: Engine) -> None:
    assert current_revision(empty_engine) is None
    migrate(empty_engine)
    assert current_revision(empty_engine) == head_revision(empty_engine)
    tables = set(inspect(empty_engine).get_table_names())
    assert set(Base.metadata.tables) <= tables


def test_migrated_schema_matches_the_models(empty_engine: Engine) -> None:
    migrate(empty_engine)
    with empty_engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        differences = compare_metadata(context, Base.metadata)
    assert differences == [], "models and migrations differ: add an Alembic migration"


def test_migrating_twice_changes_nothing(empty_engine: Engine) -> None:
    migrate(empty_engine)
    before = schema_snapshot(empty_engine)
    migrate(empty_engine)
    assert schema_snapshot(empty_engine) == before
    assert current_revision(empty_engine) == head_revision(empty_engine)
    with empty_engine.connect() as connection:
        versions = connection.execute(text("SELECT version_num FROM alembic_version")).all()
    assert len(versions) == 1


def test_an_up_to_date_registry_is_left_alone_without_a_log_line(
    empty_engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="alembic"):
        migrate(empty_engine)
        assert any(r.name.startswith("alembic") for r in caplog.records)  # it did migrate
        caplog.clear()
        migrate(empty_engine)  # as every process opening the registry does
    assert [r.getMessage() for r in caplog.records if r.name.startswith("alembic")] == []
    # One revision behind is migrated again.
    with empty_engine.begin() as connection:
        config = alembic_config(empty_engine)
        config.attributes["connection"] = connection
        command.downgrade(config, "-1")
    migrate(empty_engine)
    assert current_revision(empty_engine) == head_revision(empty_engine)


def test_every_migration_downgrades_and_upgrades_again(empty_engine: Engine) -> None:
    migrate(empty_engine)
    with empty_engine.begin() as connection:
        config = alembic_config(empty_engine)
        config.attributes["connection"] = connection
        command.downgrade(config, "base")
    assert set(inspect(empty_engine).get_table_names()) <= {"alembic_version"}
    migrate(empty_engine)
    assert current_revision(empty_engine) == head_revision(empty_engine)


def test_concurrent_migrators_take_turns(database_url: str) -> None:
    """API workers and the Dagster daemon may all start on a fresh database at once."""
    script = (
        "import sys; from registry.db import make_engine, migrate; "
        "migrate(make_engine(sys.argv[1]))"
    )
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, database_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    results = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in processes]
    for status, stderr in results:
        assert status == 0, stderr
    engine = make_engine(database_url)
    try:
        assert current_revision(engine) == head_revision(engine)
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql+psycopg://postgres:hunter2@127.0.0.1:1/quarry", "cannot reach the registry"),
        ("sqlite:////proc/no-such-dir/registry.db", "cannot"),
        ("not a url", "QUARRY_DATABASE_URL is not a usable URL"),
    ],
)
def test_an_unusable_database_is_one_clear_error(url: str, expected: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        migrate(make_engine(url))
    assert expected in str(caught.value)
    assert "hunter2" not in str(caught.value), "the password must not be shown"
    assert "\n" not in str(caught.value)


def test_the_ducklake_migration_forgets_the_delta_warehouse(empty_engine: Engine) -> None:
    """A registry of the Delta warehouse (revision 0002) keeps its accounts and stores, and
    forgets the snapshots and sync cursors that described the old warehouse: the next
    sync of every store is a full one into the new, empty lake."""
    config = alembic_config(empty_engine)
    with empty_engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0002")
    now = "2026-01-01 00:00:00+00:00"
    with empty_engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO accounts (id, name, subscription_id, api_enabled, currency, "
                "timezone, created_at) VALUES ('acc_1', 'Acme', 'sub_1', true, 'USD', 'UTC', "
                ":now)"
            ),
            {"now": now},
        )
        store_columns = {c["name"] for c in inspect(connection).get_columns("stores")}
        values = {
            "id": "st_1", "account_id": "acc_1", "name": "Shop", "domain": "shop.example",
            "currency": "USD", "timezone": "UTC", "platform": "demo", "status": "active",
            "created_at": now,
        }  # fmt: skip
        values = {k: v for k, v in values.items() if k in store_columns}
        connection.execute(
            text(f"INSERT INTO stores ({', '.join(values)}) VALUES (:{', :'.join(values)})"),
            values,
        )
        connection.execute(
            text(
                "INSERT INTO sync_cursors (store_id, dataset, cursor, updated_at) "
                "VALUES ('st_1', 'orders', 'c1', :now)"
            ),
            {"now": now},
        )
        connection.execute(
            text(
                "INSERT INTO warehouse_snapshots (store_id, versions, created_at) "
                "VALUES ('st_1', '{\"orders\": 3}', :now)"
            ),
            {"now": now},
        )

    migrate(empty_engine)

    with empty_engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM stores")).scalar() == 1
        assert connection.execute(text("SELECT count(*) FROM sync_cursors")).scalar() == 0
        assert connection.execute(text("SELECT count(*) FROM warehouse_snapshots")).scalar() == 0
