"""Google Sheets against a local server speaking the Sheets v4 API."""

from __future__ import annotations

import csv
import uuid
from pathlib import Path
from typing import Any

import pytest

from destinations import gsheets
from destinations.base import Delivery, DeliveryError
from destinations.gsheets import GoogleSheetsDestination
from quarry.errors import InvalidRequest
from quarry.settings import Settings
from tests.destinations.conftest import GoogleServer, build_destination, free_port

SPREADSHEET = "1AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


def sheet_settings(google: GoogleServer, **extra: Any) -> dict[str, Any]:
    return {
        "spreadsheet_id": SPREADSHEET,
        "sheet": "Orders",
        "api_base_url": google.base_url,
        "token_uri": google.token_uri,
        "timeout_seconds": 5,
        **extra,
    }


def build(google: GoogleServer, app_settings: Settings, **extra: Any) -> GoogleSheetsDestination:
    credentials = {"service_account": google.service_account}
    return build_destination(
        GoogleSheetsDestination, sheet_settings(google, **extra), credentials, app_settings
    )


def csv_delivery(folder: Path, rows: list[list[str]], job_id: str = "job-1") -> Delivery:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{uuid.uuid4().hex}.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return Delivery(path=path, file_name="orders.csv", job_id=job_id, content_type="text/csv")


def sample_rows(count: int) -> list[list[str]]:
    rows = [["id", "name", "total", "zip", "note"]]
    for i in range(count):
        rows.append([str(i + 1), f"Customer {i}, Ltd", f"{i}.50", "01234", '=HYPERLINK("x")'])
    return rows


@pytest.fixture
def spreadsheet(google: GoogleServer) -> Any:
    google.state.new_spreadsheet(  # type: ignore[attr-defined]
        SPREADSHEET, {"Summary": [["keep me"]], "Orders": [["old", "data"], ["1", "2"]]}
    )
    return google.state.spreadsheets[SPREADSHEET]  # type: ignore[attr-defined]


def test_writes_rows_and_swaps_sheet(
    google: GoogleServer, app_settings: Settings, tmp_path: Path, spreadsheet: Any
) -> None:
    rows = sample_rows(25)
    receipt = build(google, app_settings).deliver(csv_delivery(tmp_path, rows))
    titles = [s.properties["title"] for s in spreadsheet["sheets"]]
    assert titles == ["Summary", "Orders"]  # the old Orders replaced in place, no leftovers
    orders = google.state.sheet(SPREADSHEET, "Orders")  # type: ignore[attr-defined]
    assert not orders.properties.get("hidden")
    values = orders.values()
    assert values[0] == rows[0]
    # Numbers as numbers; leading zeros and formulas stay text.
    assert values[1] == [1, "Customer 0, Ltd", 0.5, "01234", '=HYPERLINK("x")']
    assert len(values) == 26
    assert google.state.sheet(SPREADSHEET, "Summary").values() == [["keep me"]]  # type: ignore[attr-defined]
    assert receipt.details["rows"] == "26" and receipt.details["columns"] == "5"
    assert receipt.location.endswith(f"#gid={orders.properties['sheetId']}")


def test_large_file_is_written_in_batches_within_limits(
    google: GoogleServer,
    app_settings: Settings,
    tmp_path: Path,
    spreadsheet: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gsheets, "BATCH_MAX_ROWS", 400)
    rows = sample_rows(1000)
    receipt = build(google, app_settings).deliver(csv_delivery(tmp_path, rows))
    assert receipt.details["batches"] == "3"
    values = google.state.sheet(SPREADSHEET, "Orders").values()  # type: ignore[attr-defined]
    assert len(values) == 1001 and values[-1][0] == 1000
    value_posts = [r for r in google.state.requests if r[1].endswith("/values:batchUpdate")]  # type: ignore[attr-defined]
    assert len(value_posts) == 3
    assert all(size <= gsheets.BATCH_MAX_BYTES + 1000 for _, _, size in value_posts)


def test_new_sheet_when_absent(
    google: GoogleServer, app_settings: Settings, tmp_path: Path, spreadsheet: Any
) -> None:
    build(google, app_settings, sheet="It's new").deliver(csv_delivery(tmp_path, sample_rows(3)))
    assert google.state.sheet(SPREADSHEET, "It's new").values()[0][0] == "id"  # type: ignore[attr-defined]


def test_rate_limited_batches_are_retried(
    google: GoogleServer, app_settings: Settings, tmp_path: Path, spreadsheet: Any
) -> None:
    google.state.faults["values 429"] = 2  # type: ignore[attr-defined]
    build(google, app_settings).deliver(csv_delivery(tmp_path, sample_rows(10)))
    assert len(google.state.sheet(SPREADSHEET, "Orders").values()) == 11  # type: ignore[attr-defined]


def test_failure_mid_write_leaves_old_sheet_and_retry_cleans_up(
    google: GoogleServer, app_settings: Settings, tmp_path: Path, spreadsheet: Any
) -> None:
    google.state.faults["values 429"] = 1000  # type: ignore[attr-defined]
    delivery = csv_delivery(tmp_path, sample_rows(10), job_id="job-9")
    with pytest.raises(DeliveryError) as failure:
        build(google, app_settings).deliver(delivery)
    assert failure.value.transient
    assert f"google_sheets spreadsheet {SPREADSHEET}" in failure.value.reason
    # The sheet people read is untouched; only the hidden temporary sheet exists.
    assert google.state.sheet(SPREADSHEET, "Orders").values() == [["old", "data"], ["1", "2"]]  # type: ignore[attr-defined]
    google.state.faults.clear()  # type: ignore[attr-defined]
    build(google, app_settings).deliver(delivery)
    titles = [s.properties["title"] for s in spreadsheet["sheets"]]
    assert titles == ["Summary", "Orders"]


def test_more_than_ten_million_cells_is_refused(
    google: GoogleServer,
    app_settings: Settings,
    tmp_path: Path,
    spreadsheet: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gsheets, "MAX_CELLS", 100)
    with pytest.raises(DeliveryError) as failure:
        build(google, app_settings).deliver(csv_delivery(tmp_path, sample_rows(30)))
    assert (
        "31 rows x 5 columns = 155 cells, more than Google Sheets' limit of 100 cells"
        in failure.value.reason
    )
    assert not failure.value.transient
    assert not any(r[0] == "POST" for r in google.state.requests)  # type: ignore[attr-defined]


def test_cells_already_in_the_spreadsheet_count(
    google: GoogleServer,
    app_settings: Settings,
    tmp_path: Path,
    spreadsheet: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gsheets, "MAX_CELLS", 60_000)  # the two existing sheets hold 52,000
    with pytest.raises(DeliveryError) as failure:
        build(google, app_settings).deliver(csv_delivery(tmp_path, sample_rows(2000)))
    assert "the spreadsheet already holds 52,000" in failure.value.reason


def test_xlsx_is_refused(
    google: GoogleServer, app_settings: Settings, tmp_path: Path, spreadsheet: Any
) -> None:
    path = tmp_path / "x.xlsx"
    path.write_bytes(b"PK\x03\x04")
    delivery = Delivery(
        path=path,
        file_name="orders.xlsx",
        job_id="j",
        content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    )
    with pytest.raises(DeliveryError) as failure:
        build(google, app_settings).deliver(delivery)
    assert "takes CSV exports" in failure.value.reason


def test_spreadsheet_not_shared_for_writing(
    google: GoogleServer, app_settings: Settings, tmp_path: Path, spreadsheet: Any
) -> None:
    google.state.readonly_spreadsheets.add(SPREADSHEET)  # type: ignore[attr-defined]
    with pytest.raises(DeliveryError) as failure:
        build(google, app_settings).deliver(csv_delivery(tmp_path, sample_rows(3)))
    assert f"permission denied: share spreadsheet {SPREADSHEET}" in failure.value.reason
    assert google.state.sheet(SPREADSHEET, "Orders").values() == [["old", "data"], ["1", "2"]]  # type: ignore[attr-defined]


def test_missing_spreadsheet(google: GoogleServer, app_settings: Settings, tmp_path: Path) -> None:
    with pytest.raises(DeliveryError) as failure:
        build(google, app_settings).deliver(csv_delivery(tmp_path, sample_rows(3)))
    assert f"spreadsheet {SPREADSHEET} was not found" in failure.value.reason


def test_server_down(google: GoogleServer, app_settings: Settings, tmp_path: Path) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(DeliveryError) as failure:
        build(google, app_settings, api_base_url=down, token_uri=f"{down}/token").deliver(
            csv_delivery(tmp_path, sample_rows(3))
        )
    assert failure.value.transient


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"spreadsheet_id": "short"}, "destination.settings.spreadsheet_id"),
        ({"sheet": "x" * 101}, "destination.settings.sheet"),
        ({"sheet": "a\nb"}, "destination.settings.sheet"),
        ({"token_uri": "not a url"}, "destination.settings.token_uri"),
        ({"subject": "nobody"}, "destination.settings.subject"),
    ],
)
def test_validation_names_the_field(
    google: GoogleServer, app_settings: Settings, settings: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidRequest) as failure:
        GoogleSheetsDestination.validate(
            {**sheet_settings(google), **settings},
            {"service_account": google.service_account},
            app_settings,
        )
    assert field in [e["field"] for e in failure.value.errors]
