"""The console logger of every Quarry job.

Dagster's default console logger prints each of a run's events on the run worker's stderr
at DEBUG in Dagster's own text format: about ten lines for every maintenance or export run
in the terminal of `make demo`, and text lines among the JSON ones under
QUARRY_LOG_FORMAT=json. Quarry's prints them as every process of the code location logs:
at QUARRY_LOG_LEVEL (WARNING unless set), in Quarry's text or JSON lines. What it prints
changes nothing in Dagster's event log, which the UI, the sync progress and the checks
read.
"""

from __future__ import annotations

import logging
from typing import Any

from dagster import Field, InitLoggerContext, logger

from quarry import logs
from quarry.settings import load_settings


@logger(
    config_schema={
        "log_level": Field(
            str,
            is_required=False,
            description="DEBUG, INFO, WARNING, ERROR or CRITICAL; else QUARRY_LOG_LEVEL, "
            "else WARNING.",
        ),
        "name": Field(str, default_value="dagster"),
    },
    description="A run's events on stderr at QUARRY_LOG_LEVEL (WARNING unless set), in "
    "Quarry's log format (QUARRY_LOG_FORMAT).",
)
def quarry_console_logger(init_context: InitLoggerContext) -> logging.Logger:
    settings = load_settings()
    config = init_context.logger_config
    level = config.get("log_level") or settings.log_level or logs.CODE_LOCATION_LEVEL
    # Not from logging.getLogger: a logger of its own, which no root handler repeats.
    run_logger = logging.Logger(config["name"], level=level.upper())
    run_logger.addHandler(logs.stderr_handler(settings))
    return run_logger


# Every Quarry job's default run config names the console logger: Dagster instantiates a
# job's loggers only when the run config names them, and otherwise its own at DEBUG.
LOGGERS_CONFIG: dict[str, Any] = {"loggers": {"console": {"config": {}}}}
