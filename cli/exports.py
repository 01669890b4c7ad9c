"""`quarry exports`: apply configurations from YAML, list them, clean up old files."""

from __future__ import annotations

from pathlib import Path

import click

from cli.context import AppContext, echo_json, echo_table, pass_app


@click.group()
def exports() -> None:
    """Export configurations (docs/exports.md) and their files."""


@exports.command("apply")
@click.option(
    "-f",
    "--file",
    "path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="YAML file of configurations.",
)
@click.option("--account", "account_id", required=True, help="Account id.")
@pass_app
def apply(app: AppContext, path: Path, account_id: str) -> None:
    """Create or update configurations by name; nothing is written unless all are valid."""
    from exports.configs.saved import apply_file

    with app.registry.session() as session:
        applied = apply_file(session, app.settings, account_id, path)
    for item in applied:
        click.echo(f"{'created' if item.created else 'updated'} {item.id}  {item.name}")


@exports.command("list")
@click.option("--account", "account_id", required=True, help="Account id.")
@click.option("--json", "as_json", is_flag=True, help="The objects of GET /v1/exports.")
@pass_app
def list_(app: AppContext, account_id: str, as_json: bool) -> None:
    """List an account's configurations with their last run."""
    from exports.jobs.listing import config_views
    from pipelines.exports.runs import RunLookup
    from registry.accounts import get_account
    from warehouse.records import utc_instant

    runs = RunLookup(app.settings)
    try:
        with app.registry.session() as session:
            get_account(session, account_id)
            views = config_views(session, account_id, runs.latest)
    finally:
        runs.close()
    if as_json:
        # The same timestamps as GET /v1/exports.
        echo_json([{**v, "last_run_at": v["last_run_at"] and utc_instant(v["last_run_at"])}
                   for v in views])  # fmt: skip
        return
    echo_table(
        ("ID", "ENTITY", "FORMAT", "RUNS VIA", "LAST RUN", "RUNS", "NAME"),
        (
            (
                v["id"],
                v["entity_type"],
                v["format"],
                "api" if v["runnable_via_api"] else "schedule-only",
                v["last_run_status"] or "never run",
                v["total_runs"],
                v["name"],
            )
            for v in views
        ),
    )


@exports.command("cleanup")
@click.option("--older-than-days", "days", required=True, type=click.IntRange(min=0))
@pass_app
def cleanup(app: AppContext, days: int) -> None:
    """Remove export files of jobs created more than N days ago (downloads answer 404)."""
    from exports.files.cleanup import remove_expired_files

    removed = remove_expired_files(app.settings, app.registry, days)
    click.echo(f"removed {len(removed)} export files")
