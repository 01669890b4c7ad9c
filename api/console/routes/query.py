"""The console's query page and the download of a job's file.

A query goes through api.routes.query.query_result, the one path behind POST /v1/query
(the same checks, limits and result cache), for the key's stores; its diagnostics are the
InvalidQuery errors of /v1/query, shown at their line and column. The chart is drawn by
api.console.charts from VISUALIZE's TYPE (read by the query parser) or the type picked.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import Response

from api.console.access import ExportsUser, QueryUser
from api.console.charts import DRAWN, draw
from api.console.pages import PREFIX, as_page, render
from api.job_files import content_disposition, job_file_response
from api.query_cache import app_query_cache
from api.routes.query import CSV_MEDIA_TYPE, query_result
from exports.configs.saved import require_config
from exports.files.csv_writer import csv_text
from exports.jobs.lifecycle import get_visible_job
from exports.jobs.listing import state_of
from quarry.errors import InvalidQuery
from warehouse.query import Limits
from warehouse.query.parser import parse

router = APIRouter(prefix=PREFIX, include_in_schema=False)
EXAMPLE = (
    "FROM sales\nSHOW total_sales\nTIMESERIES month\nSINCE -12m\nVISUALIZE total_sales TYPE line"
)


def _limits(request: Request) -> Limits:
    settings = request.app.state.settings
    return Limits(
        max_groups=settings.query_max_groups,
        timeout_seconds=settings.query_timeout_seconds,
        rollups=settings.rollups,
    )


@router.get("/query")
def query_page(request: Request, user: QueryUser) -> Response:
    return render(request, "query.html", {"query": EXAMPLE, "chart_types": DRAWN})


@router.post("/query")
def run_query(
    request: Request,
    user: QueryUser,
    query: Annotated[str, Form()] = "",
    chart: Annotated[str, Form()] = "",
    download: Annotated[str, Form()] = "",
) -> Response:
    principal = user.principal
    context: dict[str, object] = {"query": query, "chart_types": DRAWN, "picked": chart}
    try:
        result = query_result(
            query,
            None,
            principal,
            principal.store_ids,
            request.app.state.reader,
            _limits(request),
            app_query_cache(request.app),
        )
    except InvalidQuery as invalid:
        context["diagnostics"] = invalid.errors or [
            {"line": 1, "column": 1, "message": invalid.detail, "severity": "error"}
        ]
        return render(request, "query.html", context, status_code=422)
    with as_page():
        if download:
            titles, rows = result.table()
            return Response(
                csv_text(titles, rows).encode(),
                media_type=CSV_MEDIA_TYPE,
                headers={"Content-Disposition": content_disposition("query.csv")},
            )
    parsed, _ = parse(query)
    chart_type = chart if chart in DRAWN else parsed.chart_type if parsed.visualize else None
    drawn = draw(result, chart_type) if (chart or parsed.visualize) else None
    titles, rows = result.table()
    context.update(result=result, titles=titles, rows=rows, chart=drawn)
    return render(request, "query.html", context)


@router.get("/jobs/{job_id}/download")
def download(request: Request, user: ExportsUser, job_id: str) -> Response:
    """The job's file, as GET /v1/export-jobs/{id}/download serves it."""
    settings, registry = request.app.state.settings, request.app.state.registry
    with registry.session() as session, as_page():
        job = get_visible_job(session, user.principal, job_id)
        file_format = require_config(session, job.config_id).format
        session.expunge(job)
    with as_page():
        return job_file_response(
            settings, job, state_of(job, request.app.state.export_runs.latest), file_format
        )
