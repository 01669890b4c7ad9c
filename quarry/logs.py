"""How every Quarry process logs: text lines (the default) or JSON lines
(`QUARRY_LOG_FORMAT=json`), at `QUARRY_LOG_LEVEL`.

One place sets it up for each kind of process: the CLI when a command starts, the API app
when uvicorn builds it (uvicorn's own error and access loggers included, so a JSON
deployment gets no stray text line), and the Dagster processes through their own
`--log-format`/`--log-level` options (dagster_options). A JSON line holds `time` (ISO 8601,
UTC), `level`, `logger`, `message`, `request_id` while the API serves a request, and
`exception` with the traceback when there is one. Secrets are masked before any of it is
written (quarry.redaction works on the record itself).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog
from structlog.typing import EventDict

from quarry.settings import Settings

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# uvicorn's loggers write through handlers of their own, not the root's.
UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")


def level_of(settings: Settings, default: str) -> int:
    level: int = logging.getLevelName(settings.log_level or default)
    return level


def json_formatter() -> logging.Formatter:
    """Formats standard library records as one JSON object per line."""
    chain: list[Any] = [
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="time"),
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.ExtraAdder(allow=("request_id",)),
    ]
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=chain,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            _without_empty_request_id,
            structlog.processors.EventRenamer("message"),
            structlog.processors.ExceptionRenderer(),
            structlog.processors.JSONRenderer(ensure_ascii=False),
        ],
    )


def _without_empty_request_id(_logger: Any, _name: str, event: EventDict) -> EventDict:
    # Outside a request the record factory says "-": no field is clearer than a dash.
    if event.get("request_id") in (None, "-"):
        event.pop("request_id", None)
    return event


def formatter(settings: Settings, text_format: str = TEXT_FORMAT) -> logging.Formatter:
    if settings.log_format == "json":
        return json_formatter()
    return logging.Formatter(text_format)


class _QuarryHandler(logging.StreamHandler):
    """The root handler configure() installs (and replaces on the next call); handlers
    others installed (a test runner's, an operator's) are left alone."""


def configure(settings: Settings, *, default_level: str, text_format: str = TEXT_FORMAT) -> None:
    """The root logger writes to stderr in the configured format and level."""
    handler = _QuarryHandler(sys.stderr)
    handler.setFormatter(formatter(settings, text_format))
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _QuarryHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level_of(settings, default_level))


def configure_uvicorn(settings: Settings) -> None:
    """In JSON, uvicorn's own handlers write JSON lines too; the level applies to them.
    Text keeps uvicorn's formats (request ids included, api.request_ids)."""
    if settings.log_level:
        for name in UVICORN_LOGGERS:
            logging.getLogger(name).setLevel(level_of(settings, "INFO"))
    if settings.log_format != "json":
        return
    for name in UVICORN_LOGGERS:
        for handler in logging.getLogger(name).handlers:
            handler.setFormatter(json_formatter())


# The option that sets a Dagster command's own log level, and its level when
# QUARRY_LOG_LEVEL is unset: the daemon's INFO is a line per sensor tick (two sensors,
# every 30 s), which buried everything else in `make demo`.
_DAGSTER_LEVELS = {
    "dagster-webserver": ("--dagster-log-level", "info"),
    "dagster-daemon": ("--log-level", "warning"),
    "code-server": ("--log-level", "info"),
}


def dagster_options(settings: Settings, command: str) -> list[str]:
    """Options of a Dagster command (dagster-webserver, dagster-daemon, code-server): its
    level, and JSON lines when Quarry's are."""
    option, default = _DAGSTER_LEVELS[command]
    options = [option, (settings.log_level or default).lower()]
    if settings.log_format == "json":
        options += ["--log-format", "json"]
    return options
