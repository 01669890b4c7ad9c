"""`quarry stores`: list, add and remove stores (`add` is platform-specific: cli/shopify.py)."""

from __future__ import annotations

import click

from cli.context import AppContext, echo_json, echo_table, pass_app
from registry.accounts import get_store, list_stores


def store_json(store: object) -> dict[str, object]:
    synced = store.last_synced_at  # type: ignore[attr-defined]
    return {
        "id": store.id,  # type: ignore[attr-defined]
        "account_id": store.account_id,  # type: ignore[attr-defined]
        "name": store.name,  # type: ignore[attr-defined]
        "myplatform_domain": store.domain,  # type: ignore[attr-defined]
        "platform": store.platform,  # type: ignore[attr-defined]
        "currency": store.currency,  # type: ignore[attr-defined]
        "timezone": store.timezone,  # type: ignore[attr-defined]
        "status": store.status,  # type: ignore[attr-defined]
        "last_synced_at": synced.isoformat() if synced else None,
    }


@click.group()
def stores() -> None:
    """List, add (`stores add --platform shopify`) and remove stores."""


@stores.command("list")
@click.option("--account", "account_id", default=None)
@click.option("--json", "as_json", is_flag=True)
@pass_app
def list_(app: AppContext, account_id: str | None, as_json: bool) -> None:
    """List stores of every account, or of one."""
    with app.registry.session() as session:
        rows = [store_json(s) for s in list_stores(session, account_id)]
    if as_json:
        echo_json(rows)
        return
    echo_table(
        ("ID", "ACCOUNT", "CURRENCY", "TIMEZONE", "STATUS", "NAME"),
        (
            (r["id"], r["account_id"], r["currency"], r["timezone"], r["status"], r["name"])
            for r in rows
        ),
    )


@stores.command("remove")
@click.argument("store_id")
@click.option("--json", "as_json", is_flag=True, help='Print {"id", "removed", ...}.')
@pass_app
def remove(app: AppContext, store_id: str, as_json: bool) -> None:
    """Remove a store with its warehouse data, platform files and sync state."""
    with app.registry.session() as session:
        store = get_store(session, store_id)
        platform = store.platform
    # Imported once the store is known to exist: an unknown id is answered without loading
    # the warehouse's DuckDB and Arrow stack.
    from exports.files.cleanup import remove_files_for_store
    from platforms.connectors import forget_store
    from warehouse.lake import Lake
    from warehouse.writer import delete_store

    # Data first, registry row last: an interrupted removal can be run again.
    lake = Lake(app.settings)
    try:
        delete_store(lake, store_id)
    finally:
        lake.close()
    files = remove_files_for_store(app.settings, app.registry, store_id, "store_removed")
    forget_store(app.settings, platform, store_id)
    with app.registry.session() as session:
        session.delete(get_store(session, store_id))
    if as_json:
        echo_json({"id": store_id, "removed": True, "export_files_removed": len(files)})
        return
    click.echo(f"{store_id} removed")
