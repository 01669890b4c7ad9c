"""How every Quarry process logs: text lines (the default) or JSON lines
(`QUARRY_LOG_FORMAT=json`), at `QUARRY_LOG_LEVEL`.

One place sets it up for each kind of process: the CLI when a command starts
(`configure`), uvicorn from the configuration `quarry serve` hands it (`uvicorn_log_config`)
and again when it builds the app (`configure_uvicorn`, for a uvicorn started another way),
the Dagster commands through their own options (`dagster_options`), and the processes of
the code location (code server, run workers) when Quarry's resource is set up in them
(`configure_unconfigured`). A JSON line holds `time` (ISO 8601, UTC), `level`, `logger`,
`message`, `request_id` while the API serves a request, and `exception` with the traceback
when there is one. Secrets are masked before any of it is written (quarry.redaction works
on the record itself, whatever formats it).
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Any

import structlog
from structlog.typing import EventDict

from quarry.settings import Settings

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# uvicorn's loggers write through handlers of their own, not the root's.
UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")


def level_of(settings: Settings, default: str) -> int:
    """QUARRY_LOG_LEVEL as a logging level, else `default` (a level's name)."""
    level: int = logging.getLevelName(settings.log_level or default)
    return level


_TRACEBACKS = logging.Formatter()


def _exception_text(_logger: Any, _name: str, event: EventDict) -> EventDict:
    # The traceback as the text format writes it: the record's exc_text, which
    # quarry.redaction fills in cleaned of secrets, else rendered here.
    exc_info = event.pop("exc_info", None)
    record = event.get("_record")
    if exc_info and isinstance(record, logging.LogRecord):
        event["exception"] = record.exc_text or _TRACEBACKS.formatException(exc_info)
    return event


def json_formatter() -> logging.Formatter:
    """Formats standard library records as one JSON object per line."""
    chain: list[Any] = [
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="time"),
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.ExtraAdder(allow=("request_id", "query_source")),
        # Here, not among the processors: the formatter clears the record's traceback
        # before those run.
        _exception_text,
    ]
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=chain,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            _without_empty_request_id,
            structlog.processors.EventRenamer("message"),
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
    others installed (a test runner's, an operator's) are left alone. It writes to the
    process's stderr of the moment, as logging's last resort does, so a stream swapped for
    a while (click's test runner) is never written to once closed."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def stderr_handler(settings: Settings, text_format: str = TEXT_FORMAT) -> logging.Handler:
    """A handler writing to the process's stderr in the configured format."""
    handler = _QuarryHandler()
    handler.setFormatter(formatter(settings, text_format))
    return handler


def configure(settings: Settings, *, default_level: str, text_format: str = TEXT_FORMAT) -> None:
    """The root logger writes to stderr in the configured format and level."""
    handler = stderr_handler(settings, text_format)
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _QuarryHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level_of(settings, default_level))


# Processes of the code location log WARNING unless asked: at INFO every sensor tick would
# print the registry's migration check (alembic), and a run's events are in Dagster already.
CODE_LOCATION_LEVEL = "WARNING"


def configure_unconfigured(settings: Settings) -> None:
    """configure() for a process whose program has not set up logging: a Dagster code server
    or run worker (the root logger has no handler there). A program that did (`quarry sync`
    runs in the CLI's process, a test runner) keeps its own."""
    root = logging.getLogger()
    if root.handlers:
        return
    configure(settings, default_level=CODE_LOCATION_LEVEL)
    if logging.getLogger("dagster").handlers:
        # Dagster's command (code server, run worker) gave the "dagster" logger a handler of
        # its own at the level it was started with (--log-level): its records are that
        # handler's to print. Ours would repeat them at whatever level the "dagster" logger
        # has, and get_dagster_logger() sets it to DEBUG: a code server started at ERROR
        # printed its INFO lines and "No heartbeat received" warnings through ours.
        for handler in root.handlers:
            if isinstance(handler, _QuarryHandler):
                handler.addFilter(_not_dagster_s)


def _not_dagster_s(record: logging.LogRecord) -> bool:
    return record.name != "dagster" and not record.name.startswith("dagster.")


def uvicorn_log_config(settings: Settings) -> dict[str, Any]:
    """The logging configuration `quarry serve` hands uvicorn: uvicorn's own, at
    QUARRY_LOG_LEVEL when set, its two formatters JSON when QUARRY_LOG_FORMAT is. Given
    before uvicorn starts, it covers every line of every uvicorn process, the parent of
    several workers included (which never builds the app)."""
    import copy

    from uvicorn.config import LOGGING_CONFIG

    config: dict[str, Any] = copy.deepcopy(LOGGING_CONFIG)
    if settings.log_format == "json":
        for name in ("default", "access"):
            config["formatters"][name] = {"()": f"{__name__}.json_formatter"}
    if settings.log_level:
        for name in UVICORN_LOGGERS:
            config["loggers"].setdefault(name, {})["level"] = settings.log_level
    return config


def configure_uvicorn(settings: Settings) -> None:
    """In JSON, uvicorn's own handlers write JSON lines too; the level applies to them.
    Text keeps uvicorn's formats (request ids included, api.request_ids). For a uvicorn
    started without uvicorn_log_config (`uvicorn --factory api.main:create_app`)."""
    if settings.log_level:
        for name in UVICORN_LOGGERS:
            logging.getLogger(name).setLevel(level_of(settings, "INFO"))
    if settings.log_format != "json":
        return
    for name in UVICORN_LOGGERS:
        for handler in logging.getLogger(name).handlers:
            handler.setFormatter(json_formatter())


# The options that set a Dagster command's own log levels, and each level when
# QUARRY_LOG_LEVEL is unset. The daemon's INFO is a line per sensor tick (two sensors, every
# 30 and 60 s), which buried everything else in `make demo`. Errors still show. Neither the
# webserver nor the daemon starts a code server of its own: both reach Quarry's
# (pipelines.code_server), which `up` starts.
_DAGSTER_LEVELS = {
    "dagster-webserver": (("--dagster-log-level", "info"),),
    "dagster-daemon": (("--log-level", "warning"),),
    "code-server": (("--log-level", "info"),),
}


def dagster_options(settings: Settings, command: str) -> list[str]:
    """Options of a Dagster command (dagster-webserver, dagster-daemon, code-server): its
    levels, and JSON lines when Quarry's are."""
    options = []
    for option, default in _DAGSTER_LEVELS[command]:
        options += [option, (settings.log_level or default).lower()]
    if settings.log_format == "json":
        options += ["--log-format", "json"]
    return options


# Dagster's text lines ("2026-11-26 10:00:00 +0000 - dagster.code_server - WARNING - ..."),
# coloured or not; what a Python traceback or a library prints is any other line.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_DAGSTER_TEXT = re.compile(
    r"^(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}) - (?P<logger>[\w.\-]+) - "
    r"(?P<level>[A-Z]+) - (?P<message>.*)$"
)
# A traceback's lines, as Python prints an uncaught exception: its header, its indented
# frames, and the exception's own line.
_TRACEBACK = re.compile(
    r"^(Traceback \(most recent call last\):|\s+\S|[\w.]+(Error|Exception|Interrupt)(:|$))"
)
# Dagster's JSON field names, as Quarry names them.
_DAGSTER_FIELDS = {"event": "message", "timestamp": "time"}


def as_quarry_json(line: str, source: str) -> str:
    """One line another program wrote (a child of `quarry up`: Dagster's webserver,
    daemon, code servers, the API) as one of Quarry's JSON lines: Quarry's own pass
    unchanged, Dagster's JSON gets Quarry's field names, Dagster's text lines (with their
    colours) are parsed, and any other text is the message of a line whose `logger` is
    `source` (level `error` for a traceback's lines, else `info`). An empty line stays
    empty."""
    text = _ANSI.sub("", line).rstrip("\r\n")
    if not text.strip():
        return ""
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        if "message" in parsed and "time" in parsed:
            return text
        event: dict[str, Any] = {_DAGSTER_FIELDS.get(str(k), str(k)): v for k, v in parsed.items()}
        event.setdefault("time", _now())
        event["level"] = str(event.get("level", "info")).lower()
        event.setdefault("logger", source)
        return _ordered_json(event)
    match = _DAGSTER_TEXT.match(text)
    if match:
        when = datetime.strptime(match["time"], "%Y-%m-%d %H:%M:%S %z").astimezone(UTC)
        return _ordered_json({
            "time": when.isoformat().replace("+00:00", "Z"),
            "level": match["level"].lower(),
            "logger": match["logger"],
            "message": match["message"],
        })  # fmt: skip
    level = "error" if _TRACEBACK.match(text) else "info"
    return _ordered_json({"time": _now(), "level": level, "logger": source, "message": text})


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _ordered_json(event: dict[str, Any]) -> str:
    first = {k: event[k] for k in ("time", "level", "logger", "message") if k in event}
    return json.dumps(first | event, ensure_ascii=False, default=str)
