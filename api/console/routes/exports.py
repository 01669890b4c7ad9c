"""Console pages of export configurations: the list, the form (new and edit: refresh,
preview, save), one configuration with its jobs, run now, pause and resume.

Visibility is the API's: a configuration appears only through get_visible_config and
config_views with the signed-in key's Principal, so another account's id, or one reading a
store the key cannot, is the same "not found" as an unknown id.
"""

from __future__ import annotations

from collections.abc import Collection
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, BackgroundTasks, Depends, Request
from starlette.responses import RedirectResponse, Response

from api.console import kept_secrets
from api.console.access import ExportsUser
from api.console.export_service import Checked, check_entry, entry_for_edit, preview_rows, save
from api.console.forms import (
    BUNDLE,
    ENTITY_CHOICES,
    change_parts,
    entry_of,
    missing_kept,
    typed_secrets,
    view_of,
)
from api.console.pages import PREFIX, ConsolePageError, as_page, render
from exports.configs.definition import schedule_only_reason
from exports.configs.saved import get_visible_config, reset_changes, set_schedule_paused
from exports.configs.schedules import next_tick
from exports.files.produce import PartPreview
from exports.jobs.lifecycle import QUEUED, create_job
from exports.jobs.listing import config_view, config_views, job_history
from pipelines.exports.launcher import launch
from quarry.crypto import SecretBox
from registry.models import ExportConfig, utcnow

router = APIRouter(prefix=PREFIX, include_in_schema=False)
UNFINISHED = (QUEUED, "running")
JOBS_SHOWN = 20


async def form_items(request: Request) -> list[tuple[str, Any]]:
    return list((await request.form()).multi_items())


FormItems = Annotated[list[tuple[str, Any]], Depends(form_items)]


@router.get("/exports")
def export_list(request: Request, user: ExportsUser) -> Response:
    registry, runs = request.app.state.registry, request.app.state.export_runs
    with registry.session() as session:
        views = config_views(session, user.principal.account_id, runs.latest, user.principal)
    return render(request, "exports.html", {"exports": views})


def _form_page(
    request: Request,
    entry: dict[str, Any],
    *,
    config: dict[str, Any] | None = None,
    errors: list[dict[str, str]] | None = None,
    previews: list[PartPreview] | None = None,
    status: int = 200,
    kept: tuple[str | None, Collection[str]] = (None, ()),
) -> Response:
    """The form for `entry`; `kept`: the handle of the secrets kept server-side for it and
    the credentials it keeps (api.console.kept_secrets)."""
    settings = request.app.state.settings
    user = request.state.console_user
    context = {
        "form": view_of(entry, settings, kept[1]),
        "kept_handle": kept[0],
        "kept_minutes": kept_secrets.KEEP_MINUTES,
        "config": config,
        "errors": errors or [],
        "previews": previews,
        "stores": user.principal.stores,
        "account_timezone": user.principal.timezone,
    }
    return render(request, "export_form.html", context, status_code=status)


@router.get("/exports/new")
def new_export(request: Request, user: ExportsUser, entity_type: str = "orders") -> Response:
    entity_type = entity_type if entity_type in ENTITY_CHOICES else "orders"
    if entity_type == BUNDLE:
        # A new bundle starts with one part; the form adds and removes others.
        entry = {"entity_type": BUNDLE, "format": "zip", "parts": [{"entity_type": "orders"}]}
        return _form_page(request, entry)
    return _form_page(request, {"entity_type": entity_type, "format": "csv"})


def _submit(
    request: Request, user: ExportsUser, items: list[tuple[str, Any]], row: ExportConfig | None
) -> Response:
    settings, registry = request.app.state.settings, request.app.state.registry
    box, session_id = SecretBox(settings.fernet_keys), user.session.id
    handle = dict(items).get(kept_secrets.FIELD) or None
    with registry.session() as session:
        kept = kept_secrets.load(session, box, session_id, handle)
    entry = entry_of(items, user.principal, settings, kept)
    if row is not None:
        entry["name"] = row.name
    # Adding or removing a part brings the form back, like a refresh.
    action = "refresh" if change_parts(entry, items) else dict(items).get("action", "refresh")
    config = {"id": row.id, "name": row.name} if row is not None else None
    checked: Checked | None = None
    if action in ("preview", "save"):
        with registry.session() as session:
            editing = session.get(ExportConfig, row.id) if row is not None else None
            checked = check_entry(session, settings, user.principal, entry, editing)
            gone = missing_kept(items, kept)
            if gone:
                checked = Checked(None, gone + checked.errors)
            if checked.definition is not None and action == "save":
                config_id = save(session, settings, user.principal, checked.definition)
                kept_secrets.forget(session, session_id, handle)
                return RedirectResponse(f"{PREFIX}/exports/{config_id}", status_code=303)
    # The form comes back: secrets typed into it stay on the server, never in the page.
    typed = typed_secrets(entry)
    with registry.session() as session:
        if typed:
            handle = kept_secrets.keep(session, box, session_id, handle, typed)
        else:
            kept_secrets.forget(session, session_id, handle)
            handle = None
    page = partial(_form_page, request, entry, config=config, kept=(handle, tuple(typed)))
    if checked is None:
        # A changed dataset or destination kind: the form again, for its new fields.
        return page()
    if checked.definition is None:
        return page(errors=checked.errors, status=422)
    with as_page():
        previews = preview_rows(
            request.app.state.reader, user.principal, settings, checked.definition
        )
    return page(previews=previews)


@router.post("/exports/new")
def create_export(request: Request, user: ExportsUser, items: FormItems) -> Response:
    return _submit(request, user, items, None)


def _visible(request: Request, user: ExportsUser, config_id: str) -> ExportConfig:
    with request.app.state.registry.session() as session, as_page():
        row = get_visible_config(session, user.principal, config_id)
        session.expunge(row)
    return row


@router.get("/exports/{config_id}/edit")
def edit_export(request: Request, user: ExportsUser, config_id: str) -> Response:
    row = _visible(request, user, config_id)
    entry = entry_for_edit(row, request.app.state.settings)
    return _form_page(request, entry, config={"id": row.id, "name": row.name})


@router.post("/exports/{config_id}/edit")
def update_export(
    request: Request, user: ExportsUser, config_id: str, items: FormItems
) -> Response:
    row = _visible(request, user, config_id)
    return _submit(request, user, items, row)


def _jobs(request: Request, user: ExportsUser, config_id: str) -> list[dict[str, Any]]:
    runs = request.app.state.export_runs
    with request.app.state.registry.session() as session:
        history = job_history(
            session, user.principal, runs.latest, export_id=config_id, page=1, page_size=JOBS_SHOWN
        )
    return list(history.data)


def _live(request: Request, user: ExportsUser, config_id: str) -> dict[str, Any]:
    """The configuration as GET /v1/exports/{id} shows it, its newest jobs, and whether
    the page should keep asking (a job is unfinished)."""
    runs = request.app.state.export_runs
    with request.app.state.registry.session() as session, as_page():
        row = get_visible_config(session, user.principal, config_id)
        view = config_view(session, row, runs.latest, user.principal.config_store_ids(row))
        # The schedule's next tick (none while paused), shown in the account's zone.
        next_run = (
            next_tick(row.schedule_cron, row.schedule_timezone or "UTC", utcnow())
            if row.schedule_cron and not row.schedule_paused
            else None
        )
    jobs = _jobs(request, user, config_id)
    names = {store.id: store.name for store in user.principal.stores}
    return {
        "export": view,
        "store_names": [names.get(store_id, store_id) for store_id in view["store_ids"]],
        "jobs": jobs,
        "polling": any(j["status"] in UNFINISHED for j in jobs),
        "next_run": next_run,
    }


@router.get("/exports/{config_id}")
def export_detail(request: Request, user: ExportsUser, config_id: str) -> Response:
    return render(request, "export_detail.html", _live(request, user, config_id))


@router.get("/exports/{config_id}/jobs")
def export_jobs(request: Request, user: ExportsUser, config_id: str) -> Response:
    """The last run and the job table alone: what htmx polls while a job is unfinished."""
    return render(request, "jobs.html", _live(request, user, config_id))


@router.post("/exports/{config_id}/run")
def run_now(
    request: Request, user: ExportsUser, config_id: str, background: BackgroundTasks
) -> Response:
    """As POST /v1/exports/{id}/run: the job row first, the Dagster run after the answer."""
    settings, registry = request.app.state.settings, request.app.state.registry
    with registry.session() as session, as_page():
        row = get_visible_config(session, user.principal, config_id)
        reason = schedule_only_reason(row)
        if reason is not None:
            raise ConsolePageError(422, "Export cannot run now", reason)
        job, _ = create_job(session, row, idempotency_key=None, api_key_id=user.principal.key_id)
        job_id, name = job.id, row.name
    background.add_task(launch, settings, registry, job_id, name)
    return RedirectResponse(f"{PREFIX}/exports/{config_id}", status_code=303)


def _pause(request: Request, user: ExportsUser, config_id: str, paused: bool) -> Response:
    with request.app.state.registry.session() as session, as_page():
        row = get_visible_config(session, user.principal, config_id)
        set_schedule_paused(session, row.id, paused)
    return RedirectResponse(f"{PREFIX}/exports/{config_id}", status_code=303)


@router.post("/exports/{config_id}/pause")
def pause(request: Request, user: ExportsUser, config_id: str) -> Response:
    return _pause(request, user, config_id, True)


@router.post("/exports/{config_id}/resume")
def resume(request: Request, user: ExportsUser, config_id: str) -> Response:
    return _pause(request, user, config_id, False)


@router.post("/exports/{config_id}/reset")
def start_over(request: Request, user: ExportsUser, config_id: str) -> Response:
    """A changed-rows export's next run delivers every row again (`quarry exports reset`)."""
    with request.app.state.registry.session() as session, as_page():
        row = get_visible_config(session, user.principal, config_id)
        reset_changes(session, row.id)
    return RedirectResponse(f"{PREFIX}/exports/{config_id}", status_code=303)
