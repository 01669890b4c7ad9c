"""Google Sheets delivery: a CSV export written into one sheet (tab) of a spreadsheet
shared with a service account.

The rows go into a hidden temporary sheet named after the job, in batches that stay well
inside the API's request limits; only when every batch is in does one atomic batchUpdate
delete the previous sheet and rename the temporary one into its place. A reader never sees a
half-written sheet, and a retry of the same job replaces its own temporary sheet.

Sheets holds at most 10 million cells per spreadsheet; a file that would not fit (with the
other sheets already there) is refused before anything is written, with the numbers.
Values are sent RAW: a cell that starts with "=" stays text, never a formula, so exported
data cannot run formulas in the reader's spreadsheet. Numbers are sent as numbers when they
survive the round trip (no leading zeros, at most 15 significant digits).
"""

from __future__ import annotations

import csv
import json
import re
import time
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import httpx

from destinations.base import Delivery, DeliveryError, Receipt
from destinations.fields import FieldReader
from destinations.google_auth import GoogleSession, api_error, read_google_settings
from destinations.google_destination import GoogleDestination
from quarry.settings import Settings

DEFAULT_API_BASE = "https://sheets.googleapis.com"
SHEETS_SCOPE = "https://www.googleapis.com/auth/spreadsheets"
MAX_CELLS = 10_000_000
MAX_CELL_CHARACTERS = 50_000
MAX_COLUMNS = 18_278  # column ZZZ
# Google recommends request bodies of at most 2 MB; keep a margin for JSON overhead.
BATCH_MAX_BYTES = 1_500_000
BATCH_MAX_ROWS = 10_000
_SPREADSHEET_ID = re.compile(r"^[A-Za-z0-9_-]{10,200}$")
_NUMBER = re.compile(r"^-?(0|[1-9]\d*)(\.\d+)?$")


def _cell(value: str) -> str | int | float:
    """A number when the text is one and converts without loss, otherwise the text."""
    if _NUMBER.match(value) and len(value.replace("-", "").replace(".", "")) <= 15:
        return float(value) if "." in value else int(value)
    return value


def _sheet_range(title: str, row: int) -> str:
    return "'" + title.replace("'", "''") + f"'!A{row}"


class GoogleSheetsDestination(GoogleDestination):
    kind: ClassVar[str] = "google_sheets"
    scope: ClassVar[str] = SHEETS_SCOPE
    service: ClassVar[str] = "Sheets"

    @classmethod
    def _read_settings(cls, fields: FieldReader, app_settings: Settings) -> dict[str, Any]:
        spreadsheet_id = fields.text("spreadsheet_id", required=True, max_length=200)
        sheet = fields.text("sheet", default="Export", max_length=100) or "Export"
        common = read_google_settings(
            fields, app_settings.allow_private_hosts, default_api_base=DEFAULT_API_BASE
        )
        if (
            spreadsheet_id
            and not fields.has_error("spreadsheet_id")
            and not _SPREADSHEET_ID.match(spreadsheet_id)
        ):
            fields.error(
                "spreadsheet_id", "must be a spreadsheet id (the long part of its address)"
            )
        return {"spreadsheet_id": spreadsheet_id, "sheet": sheet, **common}

    def target(self) -> str:
        return f"spreadsheet {self.settings['spreadsheet_id']} sheet {self.settings['sheet']!r}"

    def _shared_item(self) -> str:
        return f"spreadsheet {self.settings['spreadsheet_id']}"

    def _url(self, suffix: str = "") -> str:
        settings = self.settings
        return f"{settings['api_base_url']}/v4/spreadsheets/{settings['spreadsheet_id']}{suffix}"

    # --- the file -----------------------------------------------------------------------

    def _rows(self, delivery: Delivery) -> Iterator[list[str]]:
        with delivery.path.open("r", encoding="utf-8-sig", newline="") as handle:
            yield from csv.reader(handle)

    def _measure(self, delivery: Delivery) -> tuple[int, int]:
        """Rows and columns of the CSV, refusing what Sheets cannot hold."""
        if "csv" not in (delivery.content_type or "") and not delivery.file_name.endswith(".csv"):
            raise DeliveryError(
                f"Google Sheets takes CSV exports; this file is {delivery.content_type}"
            )
        rows = columns = 0
        try:
            for row in self._rows(delivery):
                rows += 1
                columns = max(columns, len(row))
                if any(len(value) > MAX_CELL_CHARACTERS for value in row):
                    raise DeliveryError(
                        f"row {rows} has a cell longer than Google Sheets' limit of "
                        f"{MAX_CELL_CHARACTERS:,} characters"
                    )
        except (UnicodeDecodeError, csv.Error) as exc:
            raise DeliveryError(f"the file is not UTF-8 CSV ({type(exc).__name__})") from None
        if columns > MAX_COLUMNS:
            raise DeliveryError(
                f"the file has {columns:,} columns; Google Sheets allows {MAX_COLUMNS:,}"
            )
        if rows * columns > MAX_CELLS:
            raise DeliveryError(
                f"the file has {rows:,} rows x {columns:,} columns = {rows * columns:,} cells, "
                f"more than Google Sheets' limit of {MAX_CELLS:,} cells per spreadsheet"
            )
        return rows, columns

    def _batches(self, delivery: Delivery) -> Iterator[tuple[int, list[list[Any]]]]:
        """(first row number, rows) in batches within the request size limit."""
        batch: list[list[Any]] = []
        first_row = 1
        batch_bytes = 0
        for number, row in enumerate(self._rows(delivery), start=1):
            values = [_cell(value) for value in row]
            row_bytes = len(json.dumps(values, ensure_ascii=False).encode())
            if batch and (
                batch_bytes + row_bytes > BATCH_MAX_BYTES or len(batch) >= BATCH_MAX_ROWS
            ):
                yield first_row, batch
                batch, batch_bytes, first_row = [], 0, number
            batch.append(values)
            batch_bytes += row_bytes + 1
        if batch:
            yield first_row, batch

    # --- the API ------------------------------------------------------------------------

    def _call(self, api: GoogleSession, method: str, url: str, **kwargs: Any) -> dict[str, Any]:
        """One request, retried in place on rate limits and server errors (a batch that
        failed is simply sent again: writing the same range twice is harmless)."""
        for attempt in range(1, self.retry.attempts + 1):
            try:
                response = api.request(method, url, **kwargs)
            except httpx.TransportError:
                if attempt == self.retry.attempts:
                    raise
                response = None
            if response is not None:
                if response.status_code == 200:
                    return response.json()
                error = api_error(response)
                if not error.transient or attempt == self.retry.attempts:
                    raise self._refused(error)
                wait = response.headers.get("retry-after", "")
                if wait.isdigit():
                    time.sleep(min(float(wait), self.retry.max_wait))
                    continue
            time.sleep(min(self.retry.max_wait, self.retry.initial_wait * 2 ** (attempt - 1)))
        raise DeliveryError("Sheets did not answer", transient=True)  # unreachable

    def _deliver_once(self, delivery: Delivery, size: int, sha256: str) -> Receipt:
        rows, columns = self._measure(delivery)
        sheet = self.settings["sheet"]
        temporary = f"{sheet} (writing {delivery.job_id})"[:100]
        api = self._session()
        spreadsheet = self._call(
            api,
            "GET",
            self._url(),
            params={"fields": "spreadsheetId,sheets.properties"},
        )
        existing = {
            s["properties"]["title"]: s["properties"] for s in spreadsheet.get("sheets", [])
        }
        target = existing.get(sheet)
        stale = existing.get(temporary)
        others = sum(
            _cells(properties)
            for title, properties in existing.items()
            if title not in (sheet, temporary)
        )
        needed = max(rows, 1) * max(columns, 1)
        # The old sheet stays until the swap, so it counts too.
        total = others + needed + (_cells(target) if target else 0)
        if total > MAX_CELLS:
            raise DeliveryError(
                f"the export needs {needed:,} cells and the spreadsheet already holds "
                f"{total - needed:,}; together more than Google Sheets' limit of "
                f"{MAX_CELLS:,} cells per spreadsheet"
            )
        requests: list[dict[str, Any]] = []
        if stale:
            requests.append({"deleteSheet": {"sheetId": stale["sheetId"]}})
        requests.append(
            {
                "addSheet": {
                    "properties": {
                        "title": temporary,
                        "hidden": True,
                        "gridProperties": {
                            "rowCount": max(rows, 1),
                            "columnCount": max(columns, 1),
                        },
                    }
                }
            }
        )
        reply = self._call(api, "POST", self._url(":batchUpdate"), json={"requests": requests})
        new_sheet_id = reply["replies"][-1]["addSheet"]["properties"]["sheetId"]
        batches = 0
        for first_row, values in self._batches(delivery):
            self._call(
                api,
                "POST",
                self._url("/values:batchUpdate"),
                json={
                    "valueInputOption": "RAW",
                    "data": [
                        {
                            "range": _sheet_range(temporary, first_row),
                            "majorDimension": "ROWS",
                            "values": values,
                        }
                    ],
                },
            )
            batches += 1
        # One atomic batch, in this order: show the new sheet (a spreadsheet must keep a
        # visible sheet), delete the old one, then give the new one its name and place.
        swap: list[dict[str, Any]] = [
            {
                "updateSheetProperties": {
                    "properties": {"sheetId": new_sheet_id, "hidden": False},
                    "fields": "hidden",
                }
            }
        ]
        if target:
            swap.append({"deleteSheet": {"sheetId": target["sheetId"]}})
        properties: dict[str, Any] = {"sheetId": new_sheet_id, "title": sheet}
        fields = "title"
        if target and "index" in target:
            properties["index"] = target["index"]
            fields += ",index"
        swap.append({"updateSheetProperties": {"properties": properties, "fields": fields}})
        self._call(api, "POST", self._url(":batchUpdate"), json={"requests": swap})
        return Receipt(
            kind=self.kind,
            location=(
                f"https://docs.google.com/spreadsheets/d/{self.settings['spreadsheet_id']}"
                f"/edit#gid={new_sheet_id}"
            ),
            bytes=size,
            sha256=sha256,
            details={
                "sheet": sheet,
                "rows": str(rows),
                "columns": str(columns),
                "batches": str(batches),
            },
        )


def _cells(properties: Mapping[str, Any]) -> int:
    grid = properties.get("gridProperties") or {}
    return int(grid.get("rowCount", 0)) * int(grid.get("columnCount", 0))
