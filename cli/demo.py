"""`quarry demo`: seed and advance the built-in demo commerce platform. Other modules add
commands to this group (cli.run)."""

from __future__ import annotations

from datetime import date, datetime

import click

from cli.context import AppContext, echo_json, pass_app


@click.group()
def demo() -> None:
    """The built-in demo platform: seed an account, move its clock on."""


def _anchor(_ctx: click.Context, _param: click.Parameter, value: datetime | None) -> date | None:
    return value.date() if value else None


@demo.command("seed")
@click.option(
    "--orders",
    type=click.IntRange(min=1),
    default=50_000,
    show_default=True,
    help="Orders in all, split over the stores.",
)
@click.option("--stores", type=click.IntRange(1, 50), default=3, show_default=True)
@click.option("--seed", type=int, default=42, show_default=True, help="Same seed, same data.")
@click.option(
    "--anchor",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    default=None,
    callback=_anchor,
    help="Data covers the two years before this UTC date (default: today).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the account and stores as JSON.")
@pass_app
def seed(
    app: AppContext, orders: int, stores: int, seed: int, anchor: date | None, as_json: bool
) -> None:
    """Create a demo account with generated stores and two years of data."""
    from cli.demo_account import seed_demo
    from platforms.demo.seed import demo_stores

    if orders < stores:
        raise click.BadParameter("need at least one order per store", param_hint="--orders")
    account_id = seed_demo(
        app.settings, app.registry, orders=orders, stores=stores, seed=seed, anchor=anchor
    )
    shops = demo_stores(app.settings, account_id)
    if as_json:
        echo_json(
            {"account_id": account_id, "stores": [{"id": s.id, "name": s.name} for s in shops]}
        )
        return
    click.echo(f"seeded {account_id}: {orders:,} orders in {len(shops)} stores (seed {seed})")
    for shop in shops:
        click.echo(f"  {shop.id}  {shop.currency}  {shop.timezone}  {shop.name}")


@demo.command("advance")
@click.option("--account", "account_id", required=True, help="Account id.")
@click.option("--days", type=click.IntRange(1, 3650), default=1, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the changes as JSON.")
@pass_app
def advance(app: AppContext, account_id: str, days: int, as_json: bool) -> None:
    """Move the demo clock on: new orders, updates and deletions."""
    from cli.demo_account import advance_demo

    summary = advance_demo(app.settings, app.registry, account_id, days)
    if as_json:
        echo_json(summary.to_json())
        return
    click.echo(
        f"{account_id}: clock {summary.clock_before:%Y-%m-%d} -> {summary.clock_after:%Y-%m-%d}"
    )
    for dataset, counts in summary.counts.items():
        click.echo(
            f"  {dataset}: {counts.added} added, {counts.updated} updated, {counts.deleted} deleted"
        )
