"""The web console under /console (docs/console.md): pages rendered here from Jinja2
templates, htmx vendored in static/, served by the API process on the API's own origin.
Quarry's addition to the contract (docs/api.md)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import RedirectResponse, Response

from api.console.pages import PREFIX, STATIC, ConsolePageError, SignInRequired, error_page
from api.console.routes import exports, query, signin
from api.problems import http_error as api_http_error


def install_console(app: FastAPI) -> None:
    """The console's routes, its static files and the two exceptions its pages raise."""

    async def sign_in_required(request: Request, _: Exception) -> Response:
        if request.headers.get("HX-Request"):
            # htmx swaps fragments: tell it to load the sign-in page instead.
            return Response(status_code=204, headers={"HX-Redirect": f"{PREFIX}/sign-in"})
        return RedirectResponse(f"{PREFIX}/sign-in", status_code=303)

    async def page_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, ConsolePageError)
        return error_page(request, error)

    # An address under /console that nothing serves: a person in a browser gets the
    # console's page, anything else (a script, curl) the API's problem+json, unchanged.
    async def http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, StarletteHTTPException)
        path = request.url.path
        if (
            error.status_code == 404
            and (path == PREFIX or path.startswith(f"{PREFIX}/"))
            and "text/html" in request.headers.get("accept", "")
        ):
            missing = ConsolePageError(404, "Not found", "The console has no page at this address.")
            return error_page(request, missing)
        return await api_http_error(request, error)

    app.add_exception_handler(SignInRequired, sign_in_required)
    app.add_exception_handler(ConsolePageError, page_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.mount(f"{PREFIX}/static", StaticFiles(directory=STATIC), name="console-static")
    for router in (signin.router, exports.router, query.router):
        app.include_router(router)
