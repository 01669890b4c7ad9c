"""/docs (Swagger UI) and /redoc (ReDoc), served from an installed package (fastapi-offline's
assets), so the pages work on a machine without internet access: FastAPI's default pages
load their scripts (and ReDoc Google's fonts) from a CDN and stay blank offline."""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.staticfiles import StaticFiles
from starlette.responses import HTMLResponse

ASSETS = Path(fastapi_offline.__file__).parent / "static"
ASSETS_PATH = "/docs/assets"


def install_docs(app: FastAPI) -> None:
    """Mount the assets and the pages (the app is built with `docs_url=None` and
    `redoc_url=None`)."""
    app.mount(ASSETS_PATH, StaticFiles(directory=ASSETS), name="docs-assets")

    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} API",
            swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_PATH}/favicon.png",
        )

    app.add_api_route("/docs", docs, include_in_schema=False, response_class=HTMLResponse)

    async def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} API",
            redoc_js_url=f"{ASSETS_PATH}/redoc.standalone.js",
            redoc_favicon_url=f"{ASSETS_PATH}/favicon.png",
            with_google_fonts=False,
        )

    app.add_api_route("/redoc", redoc, include_in_schema=False, response_class=HTMLResponse)
