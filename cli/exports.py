"""`quarry exports`: apply configurations from YAML (or try them), list, show, dump and
delete them, pause and resume their schedules, clean up old files."""

from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click
import yaml

from cli.context import AppContext, echo_json, echo_table, pass_app
from quarry.errors import InvalidRequest

if TYPE_CHECKING:
    from exports.configs.definition import ExportDefinition
    from exports.configs.document import AccountContext


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
@click.option(
    "--dry-run",
    is_flag=True,
    help="Validate, count each configuration's rows and show the first few; write nothing.",
)
@click.option(
    "--rows", "first", default=5, show_default=True, type=click.IntRange(0, 100),
    help="With --dry-run: how many rows to show.",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@pass_app
def apply(
    app: AppContext, path: Path, account_id: str, dry_run: bool, first: int, as_json: bool
) -> None:
    """Create or update configurations by name; nothing is written unless all are valid.

    A credential read from an environment variable that is not set here is a warning:
    runs read it where they execute."""
    from exports.configs.saved import (
        account_context,
        apply_definitions,
        check_file,
        list_configs,
        unset_variables,
    )

    with app.registry.session() as session:
        try:
            definitions = check_file(session, app.settings, account_id, path)
        except InvalidRequest as invalid:
            _report_problems(invalid, path, as_json)
        for warning in unset_variables(definitions, os.environ):
            click.echo(f"warning: {warning}", err=True)
        if dry_run:
            context = account_context(session, app.settings, account_id)
            existing = {c.name for c in list_configs(session, account_id)}
        else:
            applied = apply_definitions(session, app.settings, account_id, definitions)
    if dry_run:
        _preview(app, definitions, context, existing, first, as_json)
        return
    if as_json:
        echo_json([{"id": a.id, "name": a.name, "created": a.created} for a in applied])
        return
    for item in applied:
        click.echo(f"{'created' if item.created else 'updated'} {item.id}  {item.name}")


def _report_problems(invalid: InvalidRequest, path: Path, as_json: bool) -> NoReturn:
    """Several problems of the file: one `error:` line each, for a person to read (with
    `--json`, and for a single problem, the usual one line)."""
    if len(invalid.errors) < 2 or as_json:
        raise invalid
    for problem in invalid.errors:
        click.echo(f"error: {path}: {problem.get('field')}: {problem.get('message')}", err=True)
    sys.exit(1)


# A preview cell longer than this is cut: the point is to recognise the rows.
PREVIEW_WIDTH = 40


def _preview(
    app: AppContext,
    definitions: list[ExportDefinition],
    context: AccountContext,
    existing: set[str],
    first: int,
    as_json: bool,
) -> None:
    from exports.files.produce import Account, preview
    from warehouse.reader import WarehouseReader

    def cut(value: object) -> str:
        text = "" if value is None else str(value)
        return text if len(text) <= PREVIEW_WIDTH else text[: PREVIEW_WIDTH - 3] + "..."

    reader = WarehouseReader(app.settings, app.registry)
    account = Account(context.currency, context.timezone, context.stores)
    if as_json:
        echo_json(
            [
                {
                    "name": d.name,
                    "created": d.name not in existing,
                    "parts": [
                        {"name": p.name, "rows": p.rows, "titles": p.titles, "first": p.first}
                        for p in preview(
                            reader, d.parts, account, list(d.stores or context.stores), first
                        )
                    ],
                }
                for d in definitions
            ]
        )
        return
    for definition in definitions:
        verb = "update" if definition.name in existing else "create"
        store_ids = list(definition.stores or context.stores)
        click.echo(
            f"would {verb} {definition.name!r}: {definition.entity_type} as "
            f"{definition.format}, to {definition.destination_kind}, "
            f"{len(store_ids)} store(s)"
        )
        for part in preview(reader, definition.parts, account, store_ids, first):
            shown = f"; the first {len(part.first)}:" if part.first else ""
            click.echo(f"  {part.name}: {part.rows:,} rows{shown}")
            if part.first:
                rows = ([cut(v) for v in row] for row in part.first)
                echo_table([cut(t) for t in part.titles], rows, indent="    ")
    click.echo("nothing written (--dry-run)")


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


def _instants(view: dict[str, Any]) -> dict[str, Any]:
    from warehouse.records import utc_instant

    # The same timestamps as the API's.
    return {k: utc_instant(v) if isinstance(v, datetime) else v for k, v in view.items()}


@exports.command("show")
@click.argument("config_id")
@click.option("--json", "as_json", is_flag=True, help="The object of GET /v1/exports/{id}.")
@pass_app
def show(app: AppContext, config_id: str, as_json: bool) -> None:
    """One configuration: what it reads, its format, destination (never credentials),
    schedule and last run."""
    from exports.configs.saved import account_store_ids, require_config
    from exports.jobs.listing import config_view
    from pipelines.exports.runs import RunLookup
    from registry.principals import config_store_ids

    runs = RunLookup(app.settings)
    try:
        with app.registry.session() as session:
            row = require_config(session, config_id)
            stores = config_store_ids(row, account_store_ids(session, row.account_id))
            view = _instants(config_view(session, row, runs.latest, stores))
    finally:
        runs.close()
    if as_json:
        echo_json(view)
        return
    click.echo(yaml.safe_dump(view, sort_keys=False, allow_unicode=True).rstrip())


@exports.command("dump")
@click.option("--account", "account_id", required=True, help="Account id.")
@click.option("--name", "names", multiple=True, help="Only this configuration (repeatable).")
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="Write to this file instead of stdout.",
)  # fmt: skip
@pass_app
def dump(app: AppContext, account_id: str, names: tuple[str, ...], output: Path | None) -> None:
    """The account's configurations as the YAML `apply` reads. Credentials are written as
    references: `{env: VARIABLE}` as given, a literal secret as `{stored: true}`, which
    `apply` reads as the value already stored."""
    from exports.configs.dump import dump_configs
    from exports.configs.saved import list_configs
    from quarry.crypto import SecretBox
    from quarry.errors import NotFound
    from registry.accounts import get_account

    with app.registry.session() as session:
        get_account(session, account_id)
        rows = list_configs(session, account_id)
        missing = sorted(set(names) - {row.name for row in rows})
        if missing:
            raise NotFound(f"account {account_id!r} has no export named {missing[0]!r}")
        chosen = [row for row in rows if not names or row.name in names]
        text = dump_configs(chosen, SecretBox(app.settings.fernet_keys))
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        click.echo(f"wrote {len(chosen)} configuration(s) to {output}", err=True)


@exports.command("delete")
@click.argument("config_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help='Print {"id", "name", "jobs_removed"}.')
@pass_app
def delete(app: AppContext, config_id: str, yes: bool, as_json: bool) -> None:
    """Delete a configuration, its past jobs and their files (refused while a job of it is
    queued or running)."""
    from exports.configs.saved import delete_config, require_config
    from quarry.files import export_files

    with app.registry.session() as session:
        name = require_config(session, config_id).name
    if not yes:
        click.confirm(
            f"delete export {name!r} ({config_id}) with its jobs and their files?", abort=True
        )
    with app.registry.session() as session:
        removed = delete_config(session, config_id)
    # Removed once the rows are gone: a download racing this answers 404, not half a file.
    files = export_files(app.settings)
    for job_id in removed:
        files.remove(job_id)
    if as_json:
        echo_json({"id": config_id, "name": name, "jobs_removed": removed})
        return
    click.echo(f"deleted {config_id}  {name} ({len(removed)} jobs)")


def _set_paused(app: AppContext, config_id: str, paused: bool, as_json: bool) -> None:
    from exports.configs.saved import set_schedule_paused

    with app.registry.session() as session:
        row = set_schedule_paused(session, config_id, paused)
        name, cron, zone = row.name, row.schedule_cron, row.schedule_timezone
    if as_json:
        echo_json({"id": config_id, "name": name, "paused": paused})
        return
    if paused:
        click.echo(f"paused {config_id}  {name} (schedule {cron} {zone}; runs by hand still work)")
    else:
        click.echo(f"resumed {config_id}  {name} (schedule {cron} {zone}; from its next tick)")


@exports.command("pause")
@click.argument("config_id")
@click.option("--json", "as_json", is_flag=True, help='Print {"id", "name", "paused"}.')
@pass_app
def pause(app: AppContext, config_id: str, as_json: bool) -> None:
    """Pause one configuration's schedule: the scheduled_exports sensor skips it (its
    tick log names it) until `resume`. Running it by hand still works."""
    _set_paused(app, config_id, True, as_json)


@exports.command("resume")
@click.argument("config_id")
@click.option("--json", "as_json", is_flag=True, help='Print {"id", "name", "paused"}.')
@pass_app
def resume(app: AppContext, config_id: str, as_json: bool) -> None:
    """Resume a paused schedule from its next tick (ticks missed while paused are not
    caught up)."""
    _set_paused(app, config_id, False, as_json)


@exports.command("reset")
@click.argument("config_id")
@click.option("--json", "as_json", is_flag=True, help='Print {"id", "name", "stores_reset"}.')
@pass_app
def reset(app: AppContext, config_id: str, as_json: bool) -> None:
    """Start a changed-rows export over: its next run delivers every row (refused while a
    job of it is queued or running)."""
    from exports.configs.saved import require_config, reset_changes

    with app.registry.session() as session:
        name = require_config(session, config_id).name
        count = reset_changes(session, config_id)
    if as_json:
        echo_json({"id": config_id, "name": name, "stores_reset": count})
        return
    click.echo(f"reset {config_id}  {name}: its next run delivers every row ({count} stores)")


@exports.command("cleanup")
@click.option("--older-than-days", "days", required=True, type=click.IntRange(min=0, max=36_500))
@click.option("--json", "as_json", is_flag=True, help='Print {"jobs": [ids of the jobs]}.')
@pass_app
def cleanup(app: AppContext, days: int, as_json: bool) -> None:
    """Remove export files of jobs created more than N days ago (downloads answer 404)."""
    from exports.files.cleanup import remove_expired_files

    removed = remove_expired_files(app.settings, app.registry, days)
    if as_json:
        echo_json({"jobs": removed})
        return
    click.echo(f"removed {len(removed)} export files")
