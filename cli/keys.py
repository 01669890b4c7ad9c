"""`quarry keys`: issue, list and revoke API keys. A key's secret is printed once."""

from __future__ import annotations

from typing import Any

import click

from cli.context import AppContext, echo_json, echo_table, pass_app
from registry.keys import create_key, list_keys, revoke_key


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


@click.group()
def keys() -> None:
    """Issue, list and revoke API keys."""


@keys.command("create")
@click.option("--account", "account_id", required=True)
@click.option("--scopes", default="read_data", show_default=True, help="read_data,exports")
@click.option("--stores", "store_ids", default=None, help="Comma-separated store ids.")
@click.option("--json", "as_json", is_flag=True, help='Print {"id", "key"}.')
@pass_app
def create(
    app: AppContext, account_id: str, scopes: str, store_ids: str | None, as_json: bool
) -> None:
    """Issue a key; it is shown now and never again."""
    with app.registry.session() as session:
        issued = create_key(
            session,
            account_id=account_id,
            scopes=_split(scopes) or [],
            store_ids=_split(store_ids),
        )
        key_id = issued.row.id
    if as_json:
        echo_json({"id": key_id, "key": issued.secret})
    else:
        click.echo(f"key {key_id} (shown once, store it now):")
        click.echo(issued.secret)


@keys.command("list")
@click.option("--account", "account_id", default=None)
@click.option("--json", "as_json", is_flag=True)
@pass_app
def list_(app: AppContext, account_id: str | None, as_json: bool) -> None:
    """List keys (prefix, scopes, stores, state); never their secrets."""
    with app.registry.session() as session:
        rows: list[dict[str, Any]] = [
            {
                "id": k.id,
                "account_id": k.account_id,
                "prefix": k.prefix,
                "scopes": k.scopes,
                "store_ids": k.store_ids,
                "created_at": k.created_at.isoformat(),
                "revoked": k.revoked_at is not None,
            }
            for k in list_keys(session, account_id)
        ]
    if as_json:
        echo_json(rows)
        return
    echo_table(
        ("ID", "PREFIX", "STATE", "SCOPES", "STORES"),
        (
            (
                row["id"],
                f"{row['prefix']}...",
                "revoked" if row["revoked"] else "active",
                ",".join(row["scopes"]),
                ",".join(row["store_ids"]) if row["store_ids"] else "all stores",
            )
            for row in rows
        ),
    )


@keys.command("revoke")
@click.argument("key_id")
@click.option("--json", "as_json", is_flag=True, help='Print {"id", "revoked"}.')
@pass_app
def revoke(app: AppContext, key_id: str, as_json: bool) -> None:
    """Revoke a key; the next request made with it gets 401."""
    with app.registry.session() as session:
        revoke_key(session, key_id)
    if as_json:
        echo_json({"id": key_id, "revoked": True})
        return
    click.echo(f"{key_id} revoked")
