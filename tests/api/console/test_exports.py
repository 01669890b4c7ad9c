"""Export configurations through the console, in process: problems beside their fields, a
configuration saved here reading back identically through the API and `quarry exports
dump`, one applied from YAML saved unchanged from its form, and the key's store scope."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
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
    "format_options": {"member_format": "jsonl", "time_zone": "Europe/Berlin"},
    "file_name": "bundle-{date:%Y%m%d}",
    "destination": {
        "kind": "s3",
        "settings": {"bucket": "quarry-drop", "prefix": "bundles/", "region": "eu-central-1"},
        "credentials": {"access_key_id": {"env": "DROP_KEY_ID"}, "secret_access_key": "s3cret"},
    },
    "schedule": {"cron": "30 5 * * *", "timezone": "America/New_York"},
}  # fmt: skip


def _config_id(response: Any) -> str:
    assert response.status_code == 303, response.text[:3000]
    return str(response.headers["location"].rsplit("/", 1)[1])


def _without(fields: list[tuple[str, str]], *pairs: tuple[str, str]) -> list[tuple[str, str]]:
    return [item for item in fields if item not in pairs]


def test_a_bundle_applied_from_yaml_edits_here_part_by_part(
    signed_in: Browser, console_account: ConsoleAccount, world: World
) -> None:
    """Saved unchanged from its form, a bundle dumps identically; a column of one part
    unticked, the dump loses that column's lines only; its schedule changed, only the
    `cron` line changes."""
    config_id = _apply(world, console_account, dict(BUNDLE_CONFIG))["Console bundle"]
    key = console_account.keys["all"]
    before = _dump(world, console_account.account_id, "Console bundle")
    detail = signed_in.get(f"/v1/exports/{config_id}", key=key).json()

    def edit_and_save(change: Any = lambda fields: fields) -> str:
        edit = signed_in.get(f"/console/exports/{config_id}/edit")
        assert edit.status_code == 200
        assert "s3cret" not in edit.text
        saved = signed_in.submit(
            f"/console/exports/{config_id}/edit",
            [*change(form_fields(edit, "export-form")), ("action", "save")],
        )
        _config_id(saved)
        return _dump(world, console_account.account_id, "Console bundle")

    edit = signed_in.get(f"/console/exports/{config_id}/edit")
    fields = form_fields(edit, "export-form")
    # Each part's own fields: its file name in the zip, data, columns, filters or query.
    assert ("entity_type", "bundle") in fields and ("format", "zip") in fields
    assert ("p0.name", "paid orders") in fields and ("p0.entity_type", "orders") in fields
    assert [v for k, v in fields if k == "p0.col"][:3] == ["id", "email", "total_price"]
    assert ("p0.title.email", "Mail") in fields and ("p0.fv.financial_status", "paid") in fields
    assert ("p0.created_at_min", "2024-01-01") in fields
    assert ("p1.name", "customers") in fields and ("p1.entity_type", "customers") in fields
    assert ("p2.query", "FROM sales\nSHOW total_sales\nTIMESERIES month") in fields

    assert edit_and_save() == before
    after = signed_in.get(f"/v1/exports/{config_id}", key=key).json()
    assert {k: v for k, v in after.items() if k != "updated_at"} == {
        k: v for k, v in detail.items() if k != "updated_at"
    }
    unticked = edit_and_save(lambda fields: _without(fields, ("p0.col", "email")))
    removed = [line for line in before.splitlines() if line not in unticked.splitlines()]
    assert [line.strip() for line in removed] == ["- field: email", "title: Mail"]
    assert len(unticked.splitlines()) == len(before.splitlines()) - 2
    changed = edit_and_save(lambda fields: _replace(fields, cron="0 7 * * 1"))
    assert changed == unticked.replace("cron: 30 5 * * *", "cron: 0 7 * * 1") != unticked
    with world.registry.session() as session:
        row = session.get(ExportConfig, config_id)
        assert row is not None and row.credentials_secret is not None
        stored = SecretBox(world.settings.fernet_keys).open(row.credentials_secret)
    assert stored["secret_access_key"] == "s3cret"


def test_a_bundle_made_here_reads_back_identically(
    signed_in: Browser, console_account: ConsoleAccount, world: World
) -> None:
    page = signed_in.get("/console/exports/new?entity_type=bundle")
    fields = form_fields(page, "export-form")
    assert ("entity_type", "bundle") in fields and ("p0.entity_type", "orders") in fields
    assert 'name="p1.entity_type"' not in page.text  # one part to start with
    # Add a customers part, then a query part: the form comes back with each added.
    fields = _replace(fields, name="Console made bundle", new_part="customers")
    added = signed_in.submit("/console/exports/new", [*fields, ("action", "add_part")])
    assert added.status_code == 200
    fields = _replace(form_fields(added, "export-form"), new_part="query")
    added = signed_in.submit("/console/exports/new", [*fields, ("action", "add_part")])
    fields = form_fields(added, "export-form")
    assert ("p1.entity_type", "customers") in fields and ("p2.entity_type", "query") in fields
    assert ("name", "Console made bundle") in fields
    fields = [(k, v) for k, v in fields if k not in ("p0.col", "p1.col")]
    fields += [("p0.col", "order_name"), ("p0.col", "total_price")]
    fields += [("p1.col", "email"), ("p1.col", "id")]
    fields = _replace(
        fields,
        p0__name="paid",
        p0__title__total_price="Total",
        p0__fv__financial_status="paid",
        p2__name="monthly sales",
        p2__query="FROM sales SHOW total_sales TIMESERIES month",
        opt__member_format="jsonl",
        cron="0 6 * * *",
    )
    config_id = _config_id(signed_in.submit("/console/exports/new", [*fields, ("action", "save")]))
    key = console_account.keys["all"]
    detail = signed_in.get(f"/v1/exports/{config_id}", key=key).json()
    assert detail["entity_type"] == "bundle" and detail["format"] == "zip"
    assert detail["format_options"]["member_format"] == "jsonl"
    orders, customers, query = detail["parts"]
    assert orders["entity_type"] == "orders" and orders["filters"] == {"financial_status": ["paid"]}
    assert orders["columns"] == [
        {"field": "order_name", "title": "Order"},
        {"field": "total_price", "title": "Total"},
    ]
    assert [c["field"] for c in customers["columns"]] == ["email", "id"]
    assert query["query"] == "FROM sales SHOW total_sales TIMESERIES month"
    dumped = _dump(world, console_account.account_id, "Console made bundle")
    (entry,) = yaml.safe_load(dumped)["exports"]
    assert entry["parts"] == [
        {"name": "paid", "entity_type": "orders",
         "columns": ["order_name", {"field": "total_price", "title": "Total"}],
         "filters": {"financial_status": "paid"}},
        {"name": "customers", "entity_type": "customers", "columns": ["email", "id"]},
        {"name": "monthly sales", "entity_type": "query",
         "query": "FROM sales SHOW total_sales TIMESERIES month"},
    ]  # fmt: skip
    # Opened again and saved unchanged: nothing moves.
    edit = signed_in.get(f"/console/exports/{config_id}/edit")
    again = signed_in.submit(
        f"/console/exports/{config_id}/edit",
        [*form_fields(edit, "export-form"), ("action", "save")],
    )
    assert _config_id(again) == config_id
    assert _dump(world, console_account.account_id, "Console made bundle") == dumped
    after = signed_in.get(f"/v1/exports/{config_id}", key=key).json()
    assert {k: v for k, v in after.items() if k != "updated_at"} == {
        k: v for k, v in detail.items() if k != "updated_at"
    }
    # A part removed here is gone from the saved bundle, the others as they were.
    edit = signed_in.get(f"/console/exports/{config_id}/edit")
    fields = [*form_fields(edit, "export-form"), ("action", "remove_part.1")]
    shown = signed_in.submit(f"/console/exports/{config_id}/edit", fields)
    assert shown.status_code == 200 and 'name="p2.entity_type"' not in shown.text
    _config_id(
        signed_in.submit(
            f"/console/exports/{config_id}/edit",
            [*form_fields(shown, "export-form"), ("action", "save")],
        )
    )
    parts = signed_in.get(f"/v1/exports/{config_id}", key=key).json()["parts"]
    assert [p["entity_type"] for p in parts] == ["orders", "query"]
    assert parts[0] == orders and parts[1] == query


def test_a_single_export_turned_into_a_bundle_keeps_its_data_as_the_first_part(
    signed_in: Browser,
) -> None:
    page = signed_in.get("/console/exports/new?entity_type=customers")
    fields = [(k, v) for k, v in form_fields(page, "export-form") if k != "col"]
    fields = _replace([*fields, ("col", "email"), ("col", "id")], entity_type="bundle")
    shown = signed_in.submit("/console/exports/new", [*fields, ("action", "refresh")])
    assert shown.status_code == 200
    fields = form_fields(shown, "export-form")
    assert ("p0.entity_type", "customers") in fields and ("format", "zip") in fields
    assert [v for k, v in fields if k == "p0.col"] == ["email", "id"]
    assert 'name="col"' not in shown.text


def test_a_problem_in_a_part_shows_beside_that_part(signed_in: Browser) -> None:
    page = signed_in.get("/console/exports/new?entity_type=bundle")
    fields = _replace(form_fields(page, "export-form"), name="Console bad bundle")
    added = signed_in.submit("/console/exports/new", [*fields, ("action", "add_part")])
    fields = [*form_fields(added, "export-form"), ("p1.col", "totl")]
    fields = _replace(fields, p0__created_at_min="yesterday")
    refused = signed_in.submit("/console/exports/new", [*fields, ("action", "save")])
    assert refused.status_code == 422
    text = refused.text
    summary = text.split('id="problems"')[1].split("</div>")[0]
    assert "Part 2 · Columns: &#39;totl&#39; is not a field of orders" in summary
    assert "Part 1 · Filters · created_at_min: " in summary
    second = text.split('id="part-2"')[1].split('id="f-new_part"')[0]
    assert "&#39;totl&#39; is not a field of orders" in second
    first = text.split('id="part-1"')[1].split('id="part-2"')[0]
    assert 'id="p0-f-created_at_min"' in first and 'aria-invalid="true"' in first
    assert "totl" not in first

    # Every part removed: the model's own rule, beside the parts.
    fields = [*form_fields(refused, "export-form"), ("action", "remove_part.1")]
    fields = form_fields(signed_in.submit("/console/exports/new", fields), "export-form")
    fields = form_fields(
        signed_in.submit("/console/exports/new", [*fields, ("action", "remove_part.0")]),
        "export-form",
    )
    assert not any(k.startswith("p0.") for k, _ in fields)
    empty = signed_in.submit("/console/exports/new", [*fields, ("action", "save")])
    assert empty.status_code == 422
    beside = empty.text.split('id="bundle-parts"')[1].split("</fieldset>")[0]
    assert "is required for a bundle: a non-empty list of parts" in beside


def test_preview_of_a_bundle_shows_each_parts_rows(make_browser: Any, world: World) -> None:
    person: Browser = make_browser()
    person.sign_in(world.keys["a_all"])
    page = person.get("/console/exports/new?entity_type=bundle")
    fields = _replace(
        form_fields(page, "export-form"), name="Console bundle preview", new_part="customers"
    )
    added = person.submit("/console/exports/new", [*fields, ("action", "add_part")])
    fields = [*form_fields(added, "export-form"), ("stores", "st_a1")]
    shown = person.submit("/console/exports/new", [*fields, ("action", "preview")])
    assert shown.status_code == 200, shown.text[:3000]
    preview = shown.text.split('id="preview-section"')[1]
    assert f"orders: {len(world.records('orders', 'st_a1')):,} rows" in preview
    assert f"customers: {len(world.records('customers', 'st_a1')):,} rows" in preview
    assert "ord_st_a1_01" in preview
    names = [e["name"] for e in person.get("/v1/exports", key=world.keys["a_all"]).json()["data"]]
    assert "Console bundle preview" not in names


def test_a_store_limited_key_makes_bundles_of_its_stores_only(
    make_browser: Any, console_account: ConsoleAccount
) -> None:
    limited: Browser = make_browser()
    limited.sign_in(console_account.keys["one"])
    form = limited.get("/console/exports/new?entity_type=bundle")
    assert 'value="st_k1"' in form.text and 'value="st_k2"' not in form.text
    fields = _replace(form_fields(form, "export-form"), name="Console limited bundle")
    config_id = _config_id(limited.submit("/console/exports/new", [*fields, ("action", "save")]))
    detail = limited.get(f"/v1/exports/{config_id}", key=console_account.keys["one"]).json()
    assert detail["entity_type"] == "bundle" and detail["stores"] == ["st_k1"]
    sneaky = [*_replace(fields, name="Console sneaky bundle"), ("stores", "st_k2")]
    refused = limited.submit("/console/exports/new", [*sneaky, ("action", "save")])
    assert refused.status_code == 422
    assert "&#39;st_k2&#39; is not a store of the account" in refused.text


def test_a_parts_data_changed_starts_its_columns_over(signed_in: Browser) -> None:
    page = signed_in.get("/console/exports/new?entity_type=bundle")
    # Enter in a text field presses the first submit button: the hidden Preview, not a
    # part's Remove button.
    buttons = re.findall(r'<button type="submit" name="action" value="([^"]+)"', page.text)
    assert buttons[0] == "preview" and buttons[1] == "remove_part.0"
    fields = [(k, v) for k, v in form_fields(page, "export-form") if k != "p0.col"]
    fields = _replace([*fields, ("p0.col", "email")], p0__entity_type="customers")
    shown = signed_in.submit("/console/exports/new", [*fields, ("action", "refresh")])
    assert shown.status_code == 200
    fields = form_fields(shown, "export-form")
    assert ("p0.entity_type", "customers") in fields and ("p0.shown", "customers") in fields
    ticked = [v for k, v in fields if k == "p0.col"]
    assert "email" in ticked and len(ticked) > 1  # every column of customers, not one
    assert "p0.fv.financial_status" not in shown.text
