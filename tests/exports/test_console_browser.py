"""The web console as a person uses it, in a real browser: headless Chromium from Debian's
`chromium` package, driven by Playwright's Python package (never `playwright install`),
against the end-to-end stack (tests/exports/conftest.py: the API under uvicorn, Dagster,
a synced demo account), which is why this module lives beside the other end-to-end tests.

One slow path, in order: sign in with the key; make an export from scratch; see a
problem beside its field and fix it; preview; save; run it; watch the job complete while
the page polls; download the file and check its rows against /v1/orders; ask a query
with VISUALIZE and count the drawn marks; then another account's key sees none of it and
a store-limited key only its store.

`make screenshots` runs this test with QUARRY_CONSOLE_SCREENSHOTS=docs/console: each step
saves the picture docs/console.md shows.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from registry.accounts import create_account
from registry.keys import create_key
from tests.exports.conftest import Stack

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("exports-end-to-end")]
CHROMIUM = Path("/usr/bin/chromium")
NAME = "Paid orders (browser)"
SHOTS = os.environ.get("QUARRY_CONSOLE_SCREENSHOTS")


@pytest.fixture
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        # Never skipped: `make test` installs it (scripts/services.sh); CI must have it.
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's `chromium` package "
            "(`apt-get install chromium`, or `make services`)",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            yield launched
        finally:
            launched.close()


def _shot(page: Any, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


def _sign_in(page: Any, base: str, key: str) -> None:
    page.goto(f"{base}/console")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()


def _paid_order_ids(stack: Stack) -> list[str]:
    ids: list[str] = []
    page = 1
    while True:
        body = stack.request(
            "GET",
            "/v1/orders",
            params={"financial_status": "paid", "fields": "id", "page": page, "page_size": 250},
        ).json()
        ids += [r["id"] for r in body["data"]]
        if not body["has_more"]:
            return ids
        page += 1


def test_a_person_makes_previews_runs_and_downloads_an_export(
    stack: Stack, browser: Any, tmp_path: Path
) -> None:
    stack.start_dagster()
    base = f"http://127.0.0.1:{stack.api_port}"
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(30_000)

    page.goto(f"{base}/console")
    _shot(page, "sign-in")
    # By keyboard: the key field has the focus, Enter signs in.
    page.keyboard.type(stack.key)
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="Export configurations").wait_for()
    cookie = next(c for c in context.cookies() if c["name"] == "quarry_console")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax" and cookie["expires"] > 0
    assert stack.key not in page.url

    # From scratch: a name, four columns, paid orders only, and a mistyped schedule.
    page.get_by_role("link", name="New export").click()
    # htmx (a deferred script) listens once the page has loaded: a change made before that
    # redraws nothing, which a machine under load showed (CI, session 22).
    page.wait_for_load_state("load")
    page.get_by_label("Name", exact=True).fill(NAME)
    # Another destination kind brings its own fields (htmx redraws the form, keeping what
    # was typed); back to a folder on this machine.
    page.get_by_label("Deliver to").select_option("s3")
    page.get_by_label("bucket", exact=True).wait_for()
    assert page.get_by_label("Name", exact=True).input_value() == NAME
    page.get_by_label("Deliver to").select_option("local")
    page.get_by_label("folder", exact=True).wait_for()
    for box in page.locator("input[name=col]").all():
        box.uncheck()
    for field in ("id", "order_name", "total_price", "financial_status"):
        page.locator(f"#col-{field}").check()
    page.locator("input[name='fv.financial_status'][value=paid]").check()
    page.get_by_label("Cron (empty: runs only when asked)").fill("every monday")
    page.get_by_role("button", name="Save").click()
    problem = page.locator("#f-schedule-cron-error")
    problem.wait_for()
    assert "must be a cron expression" in problem.inner_text()
    _shot(page, "validation-error")

    page.get_by_label("Cron (empty: runs only when asked)").fill("")
    page.get_by_role("button", name="Preview").click()
    preview = page.locator("#preview-section")
    preview.wait_for()
    expected = _paid_order_ids(stack)
    assert f"{len(expected):,} rows" in preview.inner_text()
    assert preview.locator("tbody tr").count() == min(10, len(expected))
    _shot(page, "preview")

    page.get_by_role("button", name="Save").click()
    page.get_by_role("heading", name=NAME).wait_for()
    page.get_by_role("button", name="Run now").click()
    # The job table polls (htmx) without reloading the page: the row turns completed.
    job = page.locator("tr.job").first
    job.wait_for()
    page.evaluate("window.stillThisPage = true")
    assert job.get_attribute("data-status") in ("queued", "running", "completed")
    _shot(page, "job-running")
    page.locator("tr.job[data-status=completed]").wait_for(timeout=240_000)
    assert page.evaluate("window.stillThisPage === true")  # updated in place, no reload
    assert page.locator("#total-runs").inner_text() == "1"
    _shot(page, "job-completed")

    with page.expect_download() as waiting:
        page.locator("a.download").first.click()
    saved = tmp_path / "export.csv"
    waiting.value.save_as(saved)
    rows = list(csv.reader(io.StringIO(saved.read_text(encoding="utf-8"), newline="")))
    # The catalog's order, as the form lists the columns.
    assert rows[0] == ["ID", "Order", "Financial status", "Total price"]
    assert sorted(r[0] for r in rows[1:]) == sorted(expected)
    assert {r[2] for r in rows[1:]} == {"paid"}

    page.get_by_role("link", name="Exports").click()
    listed = page.locator("#exports tr", has_text=NAME)
    assert "completed" in listed.inner_text() and re.search(r"\b1\s*$", listed.inner_text())
    _shot(page, "exports")

    # A query with VISUALIZE is drawn: one mark per row of the answer.
    page.get_by_role("link", name="Query").click()
    page.wait_for_load_state("load")
    page.get_by_label("ShopifyQL").fill(
        "FROM sales SHOW total_sales TIMESERIES month SINCE 2024-01-01 UNTIL 2024-06-01 "
        "VISUALIZE total_sales TYPE bar"
    )
    page.get_by_role("button", name="Run", exact=True).click()
    page.locator("#chart svg").wait_for()
    answer_rows = page.locator("#result tbody tr").count()
    assert answer_rows > 0
    assert page.locator("#chart svg .mark").count() == answer_rows
    _shot(page, "query")
    config_url = page.url.replace("/console/query", "")
    context.close()
    if SHOTS:  # the same pages on a phone's screen
        phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
        page = phone.new_page()
        _sign_in(page, base, stack.key)
        page.get_by_role("heading", name="Export configurations").wait_for()
        _shot(page, "phone-exports")
        page.get_by_role("link", name=NAME).click()
        page.get_by_role("heading", name=NAME).wait_for()
        _shot(page, "phone-export")
        phone.close()

    # Another account's key sees none of it; a key limited to one store sees only that one.
    with stack.registry.session() as session:
        other = create_account(session, name="Elsewhere", currency="USD", timezone="UTC")
        other_key = create_key(session, account_id=other.id, scopes=["exports"]).secret
        limited_key = create_key(
            session,
            account_id=stack.account,
            scopes=["read_data", "exports"],
            store_ids=[stack.store_ids[0]],
        ).secret
        config_id = stack.config_id(NAME)
    for key in (other_key, limited_key):
        context = browser.new_context()
        page = context.new_page()
        _sign_in(page, base, key)
        page.get_by_role("heading", name="Export configurations").wait_for()
        assert NAME not in page.content()
        response = page.goto(f"{config_url}/console/exports/{config_id}")
        assert response is not None and response.status == 404
        if key == limited_key:
            page.goto(f"{base}/console/exports/new")
            assert page.locator("input[name=stores]").count() == 1
        context.close()
