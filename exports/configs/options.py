"""Format options of a configuration: how values become text and cells.

Shared by the writers and the configuration schema, so a default is written once."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any
from zoneinfo import ZoneInfo

DELIMITERS = (",", ";", "\t", "|")
DEFAULT_DATE_FORMAT = "%Y-%m-%d %H:%M:%S"


@dataclass(frozen=True)
class FormatOptions:
    """`delimiter` and `bom` apply to CSV; `date_format` (strftime) to CSV text and, mapped
    to an Excel number format, to XLSX date cells; timestamps are shown in `time_zone`.
    `member_format` is the format of each file inside a zip."""

    delimiter: str = ","
    bom: bool = False
    date_format: str = DEFAULT_DATE_FORMAT
    time_zone: str = "UTC"
    member_format: str = "csv"

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.time_zone)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> FormatOptions:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in (data or {}).items() if k in known})
