"""Configuration files: every problem is named by file, key and problem; valid files are
applied by name; credentials are sealed; the schedule-only type is decided here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from exports.configs.definition import StoredConfig
from exports.configs.document import load_file
from exports.configs.dump import config_entry
from exports.configs.saved import account_context, apply_file
from quarry.crypto import SecretBox
from quarry.errors import InvalidRequest
from registry.models import ExportConfig
from tests.api.world import World


def entry(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": "Orders", "entity_type": "orders", "format": "csv"}
    base.update(overrides)
    return {key: value for key, value in base.items() if value is not None}


def problems(world: World, tmp_path: Path, *entries: Any) -> list[dict[str, str]]:
    path = tmp_path / "exports.yaml"
    path.write_text(yaml.safe_dump({"exports": list(entries)}, allow_unicode=True))
    with world.registry.session() as session:
        context = account_context(session, world.settings, world.accounts["a"])
    with pytest.raises(InvalidRequest) as raised:
        load_file(path, context)
    assert raised.value.detail.startswith(f"{path}: ")
    return raised.value.errors


@pytest.mark.parametrize(
    ("bad", "key", "fragment"),
    [
        ({"entity_type": "invoices"}, "exports[0].entity_type", "must be one of"),
        ({"format": "pdf"}, "exports[0].format", "csv, xlsx, zip, parquet, jsonl"),
        ({"colums": ["id"]}, "exports[0].colums", "unknown key"),
        ({"columns": ["id", "nope"]}, "exports[0].columns[1]", "'nope' is not a field"),
        ({"columns": ["order_count"]}, "exports[0].columns[0]", "aggregate-only"),
        ({"columns": ["id", "id"]}, "exports[0].columns[1]", "twice"),
        ({"filters": {"colour": "red"}}, "exports[0].filters.colour", "no field 'colour'"),
        ({"filters": {"total_price": "cheap"}}, "exports[0].filters.total_price", "not a number"),
        ({"filters": {"page": 2}}, "exports[0].filters.page", "is not a filter"),
        ({"filters": {"financial_status": ["paid", "partialy_refunded"]}},
         "exports[0].filters.financial_status",
         "'partialy_refunded' is not a value of financial_status; allowed: pending, authorized, "
         "partially_paid, paid, partially_refunded, refunded, voided, expired"),
        ({"format": "parquet", "filters": {"fulfillment_status": "shipped"}},
         "exports[0].filters.fulfillment_status", "allowed: fulfilled, partial, restocked"),
        ({"filters": {"created_at_min": "soon"}}, "exports[0].filters.created_at_min", "ISO"),
        ({"stores": ["st_b1"]}, "exports[0].stores[0]", "not a store of the account"),
        ({"format_options": {"delimiter": "x"}}, "exports[0].format_options.delimiter", "one of"),
        ({"format_options": {"time_zone": "Mars/Base"}}, "exports[0].format_options.time_zone",
         "IANA"),
        # Longer than a file name may be: ZoneInfo would raise OSError reading it.
        ({"format_options": {"time_zone": "a" * 300}}, "exports[0].format_options.time_zone",
         "IANA"),
        # An option the format's writer does not read is refused, not ignored.
        ({"format": "jsonl", "format_options": {"delimiter": ";"}},
         "exports[0].format_options.delimiter",
         "does not apply to a jsonl file (it reads: time_zone)"),
        ({"format": "parquet", "format_options": {"time_zone": "UTC"}},
         "exports[0].format_options.time_zone",
         "does not apply to a parquet file (it reads: none)"),
        ({"format": "xlsx", "format_options": {"bom": True}}, "exports[0].format_options.bom",
         "it reads: date_format, time_zone"),
        ({"format_options": {"member_format": "xlsx"}}, "exports[0].format_options.member_format",
         "does not apply to a csv file"),
        ({"entity_type": "bundle", "format": "zip", "parts": [{"entity_type": "orders"}],
          "format_options": {"member_format": "parquet", "date_format": "%d.%m.%Y"}},
         "exports[0].format_options.date_format",
         "does not apply to a zip file of parquet members (it reads: member_format)"),
        ({"schedule": {"cron": "0 6 * * *", "timezone": "Europe/../Europe/Berlin"}},
         "exports[0].schedule.timezone", "IANA"),
        ({"file_name": "{nam}"}, "exports[0].file_name", "unknown token {nam}"),
        ({"destination": {"kind": "fax"}}, "exports[0].destination.kind", "must be one of"),
        ({"destination": {"kind": "local", "settings": {"folder": "../x"}}},
         "exports[0].destination.settings.folder", "'..'"),
        ({"schedule": {"cron": "every day"}}, "exports[0].schedule.cron", "cron expression"),
        ({"entity_type": "query", "query": "FROM nowhere SHOW x"}, "exports[0].query", "line 1"),
        ({"entity_type": "query"}, "exports[0].query", "is required"),
        ({"entity_type": "bundle", "format": "zip"}, "exports[0].parts", "is required"),
        ({"entity_type": "bundle", "parts": [{"entity_type": "orders"}]}, "exports[0].format",
         "must be zip"),
        ({"destination": {"kind": "google_sheets", "settings": {"spreadsheet_id": "x" * 20},
                          "credentials": {"service_account": {"env": "SA"}}}},
         "exports[0].schedule", "runs only on it"),
    ],
)  # fmt: skip
def test_errors_name_the_key_and_the_problem(
    export_world: World, tmp_path: Path, bad: dict[str, Any], key: str, fragment: str
) -> None:
    found = problems(export_world, tmp_path, entry(**bad))
    assert any(e["field"] == key and fragment in e["message"] for e in found), found


def test_a_zip_takes_the_options_of_its_members(export_world: World, tmp_path: Path) -> None:
    path = tmp_path / "exports.yaml"
    bundle = entry(
        entity_type="bundle",
        format="zip",
        parts=[{"entity_type": "orders"}],
        format_options={"member_format": "csv", "delimiter": ";", "bom": True},
    )
    path.write_text(yaml.safe_dump({"exports": [bundle]}))
    with export_world.registry.session() as session:
        context = account_context(session, export_world.settings, export_world.accounts["a"])
    [definition] = load_file(path, context)
    assert (definition.options.delimiter, definition.options.bom) == (";", True)


def test_every_problem_is_reported_at_once(export_world: World, tmp_path: Path) -> None:
    found = problems(
        export_world, tmp_path, entry(format="pdf"), entry(name="Orders", columns=["nope"])
    )
    assert {e["field"] for e in found} >= {
        "exports[0].format", "exports[1].columns[0]", "exports[1].name",
    }  # fmt: skip


def test_not_yaml_names_the_line(export_world: World, tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("exports:\n  - name: [unclosed\n")
    with export_world.registry.session() as session:
        context = account_context(session, export_world.settings, export_world.accounts["a"])
    with pytest.raises(InvalidRequest, match=r"broken.yaml: line \d+ column \d+: not valid YAML"):
        load_file(path, context)


def test_apply_creates_then_updates_by_name(export_world: World, tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    document = {
        "exports": [
            entry(name="Apply test", columns=["order_name", {"field": "total_price", "title": "T"}],
                  filters={"financial_status": ["paid", "refunded"],
                           "created_at_min": "2024-01-01"},
                  destination={"kind": "local", "settings": {"folder": "out"},
                               "credentials": {}}),
            entry(name="Apply sheet", destination={
                "kind": "google_sheets", "settings": {"spreadsheet_id": "s" * 20},
                "credentials": {"service_account": {"env": "GOOGLE_SA"}}},
                  schedule={"cron": "0 6 * * *"}),
        ]
    }  # fmt: skip
    path.write_text(yaml.safe_dump(document))
    account = export_world.accounts["a"]
    with export_world.registry.session() as session:
        first = apply_file(session, export_world.settings, account, path)
    assert [a.created for a in first] == [True, True]
    document["exports"][0]["format"] = "xlsx"
    path.write_text(yaml.safe_dump(document))
    with export_world.registry.session() as session:
        second = apply_file(session, export_world.settings, account, path)
        row = session.get(ExportConfig, first[0].id)
        sheet = session.get(ExportConfig, first[1].id)
        assert row is not None and sheet is not None
        stored = StoredConfig.of(row)
        assert [a.id for a in second] == [a.id for a in first]
        assert [a.created for a in second] == [False, False]
        assert row.format == "xlsx" and row.runnable_via_api
        assert [(c.field, c.title) for c in stored.parts[0].columns] == [
            ("order_name", "Order"), ("total_price", "T"),
        ]  # fmt: skip
        assert stored.parts[0].filters["created_at_min"] == ["2024-01-01"]
        assert not sheet.runnable_via_api
        assert sheet.schedule_timezone == "America/New_York"  # the account's zone
        assert sheet.credentials_secret and "GOOGLE_SA" not in sheet.credentials_secret
        box = SecretBox(export_world.settings.fernet_keys)
        assert box.open(sheet.credentials_secret) == {"service_account": {"env": "GOOGLE_SA"}}


def test_nothing_is_written_when_one_entry_is_bad(export_world: World, tmp_path: Path) -> None:
    path = tmp_path / "half.yaml"
    path.write_text(yaml.safe_dump({"exports": [entry(name="Good one"), entry(format="pdf")]}))
    with export_world.registry.session() as session, pytest.raises(InvalidRequest):
        apply_file(session, export_world.settings, export_world.accounts["a"], path)
    with export_world.registry.session() as session:
        names = [c.name for c in session.query(ExportConfig).all()]
    assert "Good one" not in names


def test_dump_leaves_out_options_the_format_does_not_read(export_world: World) -> None:
    """A configuration stored before unread options were refused may hold some: its dump
    must apply again, so it carries only what the format reads."""
    row = ExportConfig(
        id="exp_old", account_id=export_world.accounts["a"], name="Old parquet",
        entity_type="orders", format="parquet", destination_kind="local",
        definition={"parts": [], "options": {"time_zone": "Europe/Berlin", "bom": True}},
    )  # fmt: skip
    box = SecretBox(export_world.settings.fernet_keys)
    assert "format_options" not in config_entry(row, box)
    row.format = "csv"
    assert config_entry(row, box)["format_options"] == {"bom": True, "time_zone": "Europe/Berlin"}
