"""Export configurations through the console, in process: problems beside their fields, a
configuration saved here reading back identically through the API and `quarry exports
dump`, one applied from YAML saved unchanged from its form, and the key's store scope."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from exports.configs.dump import dump_configs
from quarry.crypto import SecretBox
from registry.models import ExportConfig
from tests.api.console.conftest import Browser, ConsoleAccount, csrf_of, form_fields
from tests.api.world import World
from tests.exports.conftest import apply_yaml


def _dump(world: World, account_id: str, name: str) -> str:
    with world.registry.session() as session:
        row = session.scalar(
            select(ExportConfig).where(
                ExportConfig.account_id == account_id, ExportConfig.name == name
            )
        )
        assert row is not None
        return dump_configs([row], SecretBox(world.settings.fernet_keys))


def _replace(fields: list[tuple[str, str]], **values: str) -> list[tuple[str, str]]:
    """The form with some single-valued fields changed (dots as `__` in names)."""
    wanted = {k.replace("__", "."): v for k, v in values.items()}
    kept = [(k, v) for k, v in fields if k not in wanted]
    return kept + list(wanted.items())


@pytest.fixture
def signed_in(browser: Browser, console_account: ConsoleAccount) -> Browser:
    assert browser.sign_in(console_account.keys["all"]).status_code == 303
    return browser


def test_a_problem_shows_beside_its_field_and_saves_nothing(
    signed_in: Browser, console_account: ConsoleAccount
) -> None:
    page = signed_in.get("/console/exports/new?entity_type=orders")
    fields = _replace(
        form_fields(page, "export-form"),
        name="Console bad cron",
        cron="every monday",
        **{"fv__financial_status": "paid"},
    )
    response = signed_in.submit("/console/exports/new", [*fields, ("action", "save")])
    assert response.status_code == 422
    text = response.text
    # The message of exports.configs.sections, in the list beside the cron field.
    beside = text.split('id="f-cron"')[1].split("</div>")[0]
    assert "must be a cron expression" in beside
    assert 'aria-invalid="true" aria-describedby="f-schedule-cron-error"' in text
    listed = signed_in.get("/v1/exports", key=console_account.keys["all"]).json()["data"]
    assert "Console bad cron" not in [e["name"] for e in listed]


def test_a_configuration_saved_here_reads_back_identically(
    signed_in: Browser, console_account: ConsoleAccount, world: World
) -> None:
    page = signed_in.get("/console/exports/new?entity_type=orders")
    fields = [(k, v) for k, v in form_fields(page, "export-form") if k not in ("col",)]
    fields += [("col", "order_name"), ("col", "total_price"), ("col", "financial_status")]
    fields = _replace(
        fields,
        name="Console orders",
        format="xlsx",
        cron="0 6 * * 1",
        timezone="Europe/Berlin",
        rows="changed",
        created_at_min="2024-01-01",
        **{"title__total_price": "Total (USD)", "fv__financial_status": "paid"},
    )
    fields.append(("fv.financial_status", "refunded"))
    fields.append(("stores", "st_k2"))
    saved = signed_in.submit("/console/exports/new", [*fields, ("action", "save")])
    assert saved.status_code == 303, saved.text[:3000]
    config_id = saved.headers["location"].rsplit("/", 1)[1]
    key = console_account.keys["all"]
    detail = signed_in.get(f"/v1/exports/{config_id}", key=key).json()
    assert detail["name"] == "Console orders" and detail["format"] == "xlsx"
    assert detail["stores"] == ["st_k2"] and detail["rows"] == "changed"
    assert detail["schedule"] == {"cron": "0 6 * * 1", "timezone": "Europe/Berlin", "paused": False}
    (part,) = detail["parts"]
    # rows: changed puts the id first, as `apply` does.
    fields_written = [c["field"] for c in part["columns"]]
    assert fields_written == ["id", "order_name", "total_price", "financial_status"]
    assert part["columns"][2]["title"] == "Total (USD)"
    assert part["filters"] == {
        "financial_status": ["paid", "refunded"],
        "created_at_min": ["2024-01-01"],
    }
    listed = {e["id"]: e for e in signed_in.get("/v1/exports", key=key).json()["data"]}
    assert listed[config_id]["total_runs"] == 0 and listed[config_id]["last_run_at"] is None
    dumped = _dump(world, console_account.account_id, "Console orders")
    assert "Total (USD)" in dumped and "cron: 0 6 * * 1" in dumped and "rows: changed" in dumped

    # Opened again and saved unchanged: nothing moves.
    edit = signed_in.get(f"/console/exports/{config_id}/edit")
    assert edit.status_code == 200
    again = signed_in.submit(
        f"/console/exports/{config_id}/edit",
        [*form_fields(edit, "export-form"), ("action", "save")],
    )
    assert again.status_code == 303, again.text[:3000]
    assert _dump(world, console_account.account_id, "Console orders") == dumped
    after = signed_in.get(f"/v1/exports/{config_id}", key=key).json()
    assert {k: v for k, v in after.items() if k != "updated_at"} == {
        k: v for k, v in detail.items() if k != "updated_at"
    }
    # A changed-rows export can start over, as `quarry exports reset`.
    page = signed_in.get(f"/console/exports/{config_id}")
    assert "Start over" in page.text
    reset = signed_in.request(
        "POST", f"/console/exports/{config_id}/reset", data={"csrf_token": csrf_of(page)}
    )
    assert reset.status_code == 303


YAML_CONFIG: dict[str, Any] = {
    "name": "Console from YAML",
    "entity_type": "orders",
    "columns": ["id", {"field": "email", "title": "Mail"}, "created_at"],
    "filters": {"financial_status": "paid,refunded", "fulfillment_status": ["fulfilled"]},
    "format": "csv",
    "format_options": {"delimiter": ";", "bom": True, "time_zone": "Europe/Berlin"},
    "file_name": "orders-{date:%Y%m%d}",
    "destination": {
        "kind": "s3",
        "settings": {"bucket": "quarry-drop", "prefix": "orders/", "region": "eu-central-1"},
        "credentials": {"access_key_id": {"env": "DROP_KEY_ID"}, "secret_access_key": "s3cret"},
    },
    "schedule": {"cron": "30 5 * * *", "timezone": "America/New_York"},
}


def test_a_configuration_applied_from_yaml_edits_here_unchanged(
    signed_in: Browser, console_account: ConsoleAccount, world: World
) -> None:
    ids = _apply(world, console_account, dict(YAML_CONFIG))
    config_id = ids["Console from YAML"]
    before = _dump(world, console_account.account_id, "Console from YAML")
    edit = signed_in.get(f"/console/exports/{config_id}/edit")
    assert edit.status_code == 200
    assert "s3cret" not in edit.text  # a stored secret is never sent to the browser
    fields = form_fields(edit, "export-form")
    assert ("dc.secret_access_key.mode", "stored") in fields
    assert ("dc.access_key_id.mode", "env") in fields
    assert ("dc.access_key_id.value", "DROP_KEY_ID") in fields
    saved = signed_in.submit(f"/console/exports/{config_id}/edit", [*fields, ("action", "save")])
    assert saved.status_code == 303, saved.text[:3000]
    assert _dump(world, console_account.account_id, "Console from YAML") == before
    with world.registry.session() as session:
        row = session.get(ExportConfig, config_id)
        assert row is not None and row.credentials_secret is not None
        stored = SecretBox(world.settings.fernet_keys).open(row.credentials_secret)
    assert stored == {"access_key_id": {"env": "DROP_KEY_ID"}, "secret_access_key": "s3cret"}


def _apply(world: World, account: ConsoleAccount, entry: dict[str, Any]) -> dict[str, str]:
    # apply_yaml takes the world's account names; this account is the console's own.
    world.accounts.setdefault("console", account.account_id)
    return apply_yaml(world, "console", {"exports": [entry]})


def test_a_store_limited_key_sees_and_makes_only_its_stores(
    make_browser: Any, console_account: ConsoleAccount, world: World
) -> None:
    ids = _apply(
        world,
        console_account,
        {"name": "Console Köln only", "entity_type": "customers", "format": "csv",
         "stores": ["st_k2"]},
    )  # fmt: skip
    limited: Browser = make_browser()
    limited.sign_in(console_account.keys["one"])
    listing = limited.get("/console/exports")
    assert "Console Köln only" not in listing.text
    hidden = limited.get(f"/console/exports/{ids['Console Köln only']}")
    assert hidden.status_code == 404
    form = limited.get("/console/exports/new?entity_type=customers")
    assert 'value="st_k1"' in form.text and 'value="st_k2"' not in form.text
    fields = _replace(form_fields(form, "export-form"), name="Console limited")
    saved = limited.submit("/console/exports/new", [*fields, ("action", "save")])
    assert saved.status_code == 303, saved.text[:3000]
    config_id = saved.headers["location"].rsplit("/", 1)[1]
    detail = limited.get(f"/v1/exports/{config_id}", key=console_account.keys["one"]).json()
    assert detail["stores"] == ["st_k1"]
    # A store outside the key is refused as one that does not exist.
    sneaky = [*_replace(fields, name="Console sneaky"), ("stores", "st_k2")]
    refused = limited.submit("/console/exports/new", [*sneaky, ("action", "save")])
    assert refused.status_code == 422
    assert "&#39;st_k2&#39; is not a store of the account" in refused.text


def test_another_accounts_key_sees_none_of_it(
    make_browser: Any, console_account: ConsoleAccount, world: World
) -> None:
    ids = _apply(
        world,
        console_account,
        {"name": "Console private", "entity_type": "orders", "format": "csv"},
    )
    other: Browser = make_browser()
    other.sign_in(world.keys["b_all"])
    assert "Console private" not in other.get("/console/exports").text
    for path in (
        f"/console/exports/{ids['Console private']}",
        f"/console/exports/{ids['Console private']}/edit",
        f"/console/exports/{ids['Console private']}/jobs",
    ):
        assert other.get(path).status_code == 404, path
    token = csrf_of(other.get("/console/exports"))
    run = other.request(
        "POST", f"/console/exports/{ids['Console private']}/run", data={"csrf_token": token}
    )
    assert run.status_code == 404


def test_preview_shows_the_rows_a_run_would_read(make_browser: Any, world: World) -> None:
    person: Browser = make_browser()
    person.sign_in(world.keys["a_all"])
    page = person.get("/console/exports/new?entity_type=orders")
    fields = _replace(form_fields(page, "export-form"), name="Console preview probe")
    fields.append(("stores", "st_a1"))
    shown = person.submit("/console/exports/new", [*fields, ("action", "preview")])
    assert shown.status_code == 200, shown.text[:3000]
    expected = len(world.records("orders", "st_a1"))
    assert f"orders: {expected:,} rows" in shown.text
    assert "ord_st_a1_01" in shown.text
    # Nothing saved by a preview.
    names = [e["name"] for e in person.get("/v1/exports", key=world.keys["a_all"]).json()["data"]]
    assert "Console preview probe" not in names


def test_a_query_export_shows_the_querys_problem_at_its_line_and_column(
    signed_in: Browser, console_account: ConsoleAccount
) -> None:
    page = signed_in.get("/console/exports/new?entity_type=query")
    assert 'name="query"' in page.text and 'name="col"' not in page.text
    fields = _replace(
        form_fields(page, "export-form"),
        name="Console monthly sales",
        query="FROM sales\nSHOW total_salez\nTIMESERIES month",
    )
    refused = signed_in.submit("/console/exports/new", [*fields, ("action", "save")])
    assert refused.status_code == 422
    beside = refused.text.split('id="f-query"')[1].split("</fieldset>")[0]
    assert "line 2 column 6" in beside
    fixed = _replace(fields, query="FROM sales\nSHOW total_sales\nTIMESERIES month")
    saved = signed_in.submit("/console/exports/new", [*fixed, ("action", "save")])
    assert saved.status_code == 303, saved.text[:3000]
    config_id = saved.headers["location"].rsplit("/", 1)[1]
    detail = signed_in.get(f"/v1/exports/{config_id}", key=console_account.keys["all"]).json()
    assert detail["parts"][0]["query"] == "FROM sales\nSHOW total_sales\nTIMESERIES month"


BUNDLE_CONFIG: dict[str, Any] = {
    "name": "Console bundle",
    "entity_type": "bundle",
    "format": "zip",
    "parts": [
        {
            "name": "paid orders",
            "entity_type": "orders",
            "columns": ["id", {"field": "email", "title": "Mail"}, "total_price"],
            "filters": {"financial_status": "paid", "created_at_min": "2024-01-01"},
        },
        {"entity_type": "customers"},
        {"name": "monthly", "entity_type": "query",
         "query": "FROM sales\nSHOW total_sales\nTIMESERIES month"},
    ],
    "stores": ["st_k1"],
    "format_options": {"member_format": "parquet", "time_zone": "Europe/Berlin"},
    "file_name": "bundle-{date:%Y%m%d}",
    "destination": {
        "kind": "s3",
        "settings": {"bucket": "quarry-drop", "prefix": "bundles/", "region": "eu-central-1"},
        "credentials": {"access_key_id": {"env": "DROP_KEY_ID"}, "secret_access_key": "s3cret"},
    },
    "schedule": {"cron": "30 5 * * *", "timezone": "America/New_York"},
}  # fmt: skip


def test_a_bundle_applied_from_yaml_edits_here_with_its_parts_kept(
    signed_in: Browser, console_account: ConsoleAccount, world: World
) -> None:
    """Saved unchanged from its form, a bundle dumps identically; its schedule changed
    in the form, the dump shows only that; the form cannot change its parts."""
    config_id = _apply(world, console_account, dict(BUNDLE_CONFIG))["Console bundle"]
    key = console_account.keys["all"]
    before = _dump(world, console_account.account_id, "Console bundle")
    detail = signed_in.get(f"/v1/exports/{config_id}", key=key).json()

    def edit_and_save(**changes: str) -> str:
        edit = signed_in.get(f"/console/exports/{config_id}/edit")
        assert edit.status_code == 200
        assert "Parts (edited in YAML)" in edit.text and "s3cret" not in edit.text
        assert 'name="col"' not in edit.text  # the parts' columns are not form fields
        fields = _replace(form_fields(edit, "export-form"), **changes)
        saved = signed_in.submit(
            f"/console/exports/{config_id}/edit", [*fields, ("action", "save")]
        )
        assert saved.status_code == 303, saved.text[:3000]
        return _dump(world, console_account.account_id, "Console bundle")

    assert edit_and_save() == before
    after = signed_in.get(f"/v1/exports/{config_id}", key=key).json()
    assert {k: v for k, v in after.items() if k != "updated_at"} == {
        k: v for k, v in detail.items() if k != "updated_at"
    }
    changed = edit_and_save(cron="0 7 * * 1")
    assert changed == before.replace("cron: 30 5 * * *", "cron: 0 7 * * 1") != before
    # A form posting other data (columns, another entity_type) leaves the bundle as it was.
    forced = edit_and_save(entity_type="orders", col="email", query="FROM sales SHOW x")
    assert forced == changed
    with world.registry.session() as session:
        row = session.get(ExportConfig, config_id)
        assert row is not None and row.credentials_secret is not None
        stored = SecretBox(world.settings.fernet_keys).open(row.credentials_secret)
    assert stored["secret_access_key"] == "s3cret"
