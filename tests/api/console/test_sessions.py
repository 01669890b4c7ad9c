"""Signing in and out of the console: the cookie's flags, CSRF on every form, sign-out and
key revocation ending a session server-side, scopes, the key's rate limit, and ended
sessions deleted without their key signing in again."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from secrets import token_hex

import pytest
from anyio.from_thread import BlockingPortal
from sqlalchemy import select

from api.main import create_app
from registry.console_sessions import delete_ended_sessions
from registry.keys import revoke_key
from registry.models import ConsoleFormSecret, ConsoleSession
from tests.api.console.conftest import Browser, ConsoleAccount, csrf_of
from tests.api.world import World


def test_sign_in_sets_an_httponly_samesite_cookie_that_expires(
    browser: Browser, console_account: ConsoleAccount, api_settings: object
) -> None:
    key = console_account.keys["all"]
    response = browser.sign_in(key)
    assert response.status_code == 303
    assert response.headers["location"] == "/console/exports"
    cookies = [c for c in response.headers.get_list("set-cookie") if "quarry_console=" in c]
    assert len(cookies) == 1
    cookie = cookies[0].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie and "path=/console" in cookie
    assert "expires=" in cookie
    # Over plain HTTP on a non-HTTPS public URL the cookie cannot be Secure; the key never
    # travels back.
    assert "secure" not in cookie
    assert key not in response.text and all(key not in c for c in cookies)
    page = browser.get("/console/exports")
    assert page.status_code == 200
    assert "Console Co" in page.text


def test_an_unknown_key_or_a_missing_form_token_signs_nobody_in(
    browser: Browser, console_account: ConsoleAccount
) -> None:
    refused = browser.sign_in("qk_" + "0" * 49)
    assert refused.status_code == 401
    assert "malformed, unknown or revoked" in refused.text
    assert browser.get("/console/exports").status_code == 303
    no_token = browser.request(
        "POST", "/console/sign-in", data={"api_key": console_account.keys["all"]}
    )
    assert no_token.status_code == 403
    assert browser.get("/console/exports").headers["location"] == "/console/sign-in"


def test_pages_without_a_session_send_the_browser_to_sign_in(browser: Browser) -> None:
    for path in ("/console/exports", "/console/query", "/console/exports/new"):
        response = browser.get(path)
        assert response.status_code == 303, path
        assert response.headers["location"] == "/console/sign-in"
    htmx = browser.get("/console/exports/x/jobs", headers={"HX-Request": "true"})
    assert htmx.headers["HX-Redirect"] == "/console/sign-in"


def test_an_address_the_console_does_not_serve_is_its_own_not_found_page(
    browser: Browser,
) -> None:
    # A browser asks for HTML and gets a page with the way back; a script gets the API's
    # problem+json, as for any unknown path.
    for path in ("/console/nope", "/console/exports/x/y/z"):
        page = browser.get(path, headers={"Accept": "text/html,application/xhtml+xml"})
        assert page.status_code == 404, path
        assert page.headers["content-type"].startswith("text/html")
        assert "The console has no page at this address." in page.text
        assert 'href="/console"' in page.text
        problem = browser.get(path)
        assert problem.status_code == 404
        assert problem.headers["content-type"] == "application/problem+json"
    # Outside the console nothing changes, whatever the Accept header says.
    other = browser.get("/nope", headers={"Accept": "text/html"})
    assert other.headers["content-type"] == "application/problem+json"


def test_a_post_without_the_sessions_csrf_token_is_refused(
    browser: Browser, console_account: ConsoleAccount
) -> None:
    browser.sign_in(console_account.keys["all"])
    form = {"name": "CSRF probe", "entity_type": "orders", "col": "id", "format": "csv"}
    for data in (form, {**form, "csrf_token": "forged"}):
        response = browser.request("POST", "/console/exports/new", data={**data, "action": "save"})
        assert response.status_code == 403
        assert "security token" in response.text
    names = [
        e["name"]
        for e in browser.get("/v1/exports", key=console_account.keys["all"]).json()["data"]
    ]
    assert "CSRF probe" not in names
    # The same token in the htmx header passes.
    token = csrf_of(browser.get("/console/exports/new"))
    ok = browser.request(
        "POST", "/console/exports/new", data={**form, "action": "refresh"},
        headers={"X-CSRF-Token": token},
    )  # fmt: skip
    assert ok.status_code == 200


def test_signing_out_revokes_the_session_server_side(
    make_browser: Callable[[], Browser], console_account: ConsoleAccount
) -> None:
    person = make_browser()
    person.sign_in(console_account.keys["all"])
    stolen = person._client.cookies.get("quarry_console")
    assert stolen
    token = csrf_of(person.get("/console/exports"))
    out = person.request("POST", "/console/sign-out", data={"csrf_token": token})
    assert out.status_code == 303 and out.headers["location"] == "/console/sign-in"
    thief = make_browser()
    thief._client.cookies.set("quarry_console", stolen, domain="quarry.test", path="/console")
    response = thief.get("/console/exports")
    assert response.status_code == 303 and response.headers["location"] == "/console/sign-in"


def test_a_forged_cookie_or_a_revoked_key_has_no_session(
    make_browser: Callable[[], Browser], console_account: ConsoleAccount, world: World
) -> None:
    forger = make_browser()
    forger._client.cookies.set("quarry_console", "abc.def", domain="quarry.test", path="/console")
    assert forger.get("/console/exports").status_code == 303
    person = make_browser()
    person.sign_in(console_account.keys["to_revoke"])
    assert person.get("/console/exports").status_code == 200
    with world.registry.session() as session:
        revoke_key(session, console_account.key_ids["to_revoke"])
    assert person.get("/console/exports").status_code == 303


def test_each_page_needs_its_scope(
    make_browser: Callable[[], Browser], console_account: ConsoleAccount
) -> None:
    exporter = make_browser()
    assert exporter.sign_in(console_account.keys["exports"]).headers["location"] == (
        "/console/exports"
    )
    refused = exporter.get("/console/query")
    assert refused.status_code == 403 and "read_data" in refused.text
    reader = make_browser()
    assert reader.sign_in(console_account.keys["read"]).headers["location"] == "/console/query"
    assert reader.get("/console/exports").status_code == 403


def test_console_requests_count_against_the_keys_rate_limit(
    world: World, portal: BlockingPortal, console_account: ConsoleAccount
) -> None:
    app = create_app(world.settings.model_copy(update={"rate_limit": "4/3600"}))
    person = Browser(app, portal)
    try:
        person.sign_in(console_account.keys["all"])  # one request of the key
        assert person.get("/console/exports").status_code == 200  # two
        assert person.get("/v1/exports", key=console_account.keys["all"]).status_code == 200
        assert person.get("/console/exports").status_code == 200  # four
        spent = person.get("/console/exports")
        assert spent.status_code == 429
        assert "rate limit" in spent.text
        assert person.get("/v1/exports", key=console_account.keys["all"]).status_code == 429
    finally:
        person.close()
        app.state.reader.close()
        app.state.registry.dispose()


def test_sessions_store_no_key_and_expire(
    browser: Browser, console_account: ConsoleAccount, world: World
) -> None:
    browser.sign_in(console_account.keys["all"])
    with world.registry.session() as session:
        rows = session.scalars(select(ConsoleSession)).all()
    assert rows
    secrets = set(console_account.keys.values())
    for row in rows:
        assert row.id not in secrets and row.csrf_token not in secrets
        assert row.expires_at > row.created_at
        # QUARRY_CONSOLE_SESSION_HOURS, 12 by default.
        assert row.expires_at - row.created_at == timedelta(hours=12)
        assert row.expires_at > datetime.now(UTC)


def test_the_key_is_in_no_log_line_and_no_url(
    browser: Browser, console_account: ConsoleAccount, caplog: pytest.LogCaptureFixture
) -> None:
    key = console_account.keys["all"]
    caplog.set_level(logging.DEBUG)
    signed = browser.sign_in(key)
    visited = [signed.headers["location"]]
    for path in ("/console/exports", "/console/exports/new", "/console/query"):
        page = browser.get(path)
        visited += re.findall(r'(?:href|action)="([^"]+)"', page.text)
        assert key not in page.text
    assert visited and all(key not in url for url in visited)
    assert key not in caplog.text
    # A key in the query string is not a way in either.
    assert browser.get(f"/console/exports?api_key={key}").status_code in (200, 303)
    fresh = Browser(browser.app, browser._portal)
    try:
        assert fresh.get(f"/console/exports?api_key={key}").status_code == 303
    finally:
        fresh.close()


def test_every_asset_is_served_by_quarry_itself(
    browser: Browser, console_account: ConsoleAccount
) -> None:
    """Offline: no page names another origin; the vendored htmx and the stylesheet are
    served here."""
    browser.sign_in(console_account.keys["all"])
    sources: set[str] = set()
    for path in ("/console/sign-in", "/console/exports", "/console/exports/new", "/console/query"):
        page = browser.get(path)
        assert page.status_code == 200, path
        sources |= set(re.findall(r'(?:src|href)="([^"]+)"', page.text))
    assert sources and all(s.startswith(("/console", "#")) for s in sources), sources
    htmx = browser.get("/console/static/htmx-2.0.11.min.js")
    assert htmx.status_code == 200 and "htmx" in htmx.text[:2000]
    assert "javascript" in htmx.headers["content-type"]
    assert browser.get("/console/static/console.css").status_code == 200


def _session_rows(world: World, key_id: str) -> dict[str, str]:
    """Rows of ended and live sessions of key `key_id` (one expired with a form secret it
    kept, one revoked, one live), by what they are: name -> id."""
    now = datetime.now(UTC)
    rows = {
        "expired": ConsoleSession(expires_at=now - timedelta(minutes=1)),
        "revoked": ConsoleSession(expires_at=now + timedelta(hours=1), revoked_at=now),
        "live": ConsoleSession(expires_at=now + timedelta(hours=1)),
    }
    with world.registry.session() as session:
        for row in rows.values():
            row.id = token_hex(32)
            row.api_key_id, row.csrf_token, row.created_at = key_id, "t", now
            session.add(row)
        session.flush()
        session.add(
            ConsoleFormSecret(
                id=token_hex(32),
                session_id=rows["expired"].id,
                sealed="x",
                expires_at=now + timedelta(minutes=5),
            )
        )
    return {name: row.id for name, row in rows.items()}


def _left(world: World, ids: dict[str, str]) -> tuple[set[str], int]:
    """Which of `ids` still have a session row, and how many form secrets they keep."""
    with world.registry.session() as session:
        kept = set(
            session.scalars(select(ConsoleSession.id).where(ConsoleSession.id.in_(ids.values())))
        )
        secrets_left = len(
            session.scalars(
                select(ConsoleFormSecret).where(ConsoleFormSecret.session_id.in_(ids.values()))
            ).all()
        )
    return {name for name, id_ in ids.items() if id_ in kept}, secrets_left


def test_ended_sessions_of_a_key_go_when_another_key_signs_in(
    browser: Browser, console_account: ConsoleAccount, world: World
) -> None:
    ids = _session_rows(world, console_account.key_ids["exports"])
    assert _left(world, ids) == ({"expired", "revoked", "live"}, 1)
    assert browser.sign_in(console_account.keys["read"]).status_code == 303
    assert _left(world, ids) == ({"live"}, 0)


def test_the_housekeeping_deletion_of_ended_sessions(
    console_account: ConsoleAccount, world: World
) -> None:
    """What the housekeeper's pass runs (pipelines/housekeeping.py; the pass itself:
    tests/pipelines/test_housekeeping.py)."""
    ids = _session_rows(world, console_account.key_ids["exports"])
    with world.registry.session() as session:
        assert delete_ended_sessions(session) >= 2
    assert _left(world, ids) == ({"live"}, 0)
