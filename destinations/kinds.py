"""Destination kinds by name, and the three calls the rest of Quarry makes:

- `validate_destination` when a configuration is applied (InvalidRequest naming fields);
- `resolve_credentials` to turn `{"env": "VAR"}` references into values;
- `destination_for` when an export run delivers (DeliveryError on any problem, so a run
  handles one exception type).

Kind modules are imported on first use: the API should not load boto3 and paramiko to
start.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from destinations.base import BaseDestination, DeliveryError
from destinations.fields import is_env_reference
from destinations.retry import RetryPolicy
from quarry.errors import ConfigurationError, InvalidRequest, QuarryError
from quarry.settings import Settings, load_settings

KINDS: dict[str, str] = {
    "local": "destinations.local:LocalDestination",
    "email": "destinations.email:EmailDestination",
    "ftp": "destinations.ftp:FtpDestination",
    "ftps": "destinations.ftp:FtpsDestination",
    "sftp": "destinations.sftp:SftpDestination",
    "s3": "destinations.s3:S3Destination",
    "google_drive": "destinations.gdrive:GoogleDriveDestination",
    "google_sheets": "destinations.gsheets:GoogleSheetsDestination",
}


# Kinds that deliver files into a folder: each export file gets its manifest delivered
# beside it (`<file name>.manifest.json`). Email (one message per file) and a live sheet
# (a tab, not a file) do not.
FOLDER_KINDS = frozenset({"local", "ftp", "ftps", "sftp", "s3", "google_drive"})


def destination_class(kind: str) -> type[BaseDestination]:
    """The class for a kind name; InvalidRequest naming `destination.kind` when unknown."""
    if not isinstance(kind, str) or kind not in KINDS:
        raise InvalidRequest(
            detail=f"unknown destination kind {kind!r}",
            errors=[
                {
                    "field": "destination.kind",
                    "message": "must be one of " + ", ".join(sorted(KINDS)),
                }
            ],
        )
    module_name, class_name = KINDS[kind].split(":")
    return getattr(importlib.import_module(module_name), class_name)


def validate_destination(
    kind: str,
    settings: Mapping[str, Any],
    credentials: Mapping[str, Any],
    app_settings: Settings | None = None,
) -> dict[str, Any]:
    """Normalised settings to store with the configuration, or InvalidRequest whose
    `errors` name each bad field (`destination.settings.host`, ...). Credentials may be
    literal or `{"env": "VAR"}`; the variable itself is only needed when delivering."""
    app_settings = app_settings or load_settings()
    return destination_class(kind).validate(settings, credentials, app_settings)


def resolve_credentials(
    credentials: Mapping[str, Any], environ: Mapping[str, str]
) -> dict[str, Any]:
    """Credentials with every `{"env": "VAR"}` value replaced by that variable's value.
    ConfigurationError names the missing variable (never any value)."""
    resolved: dict[str, Any] = {}
    for name, value in credentials.items():
        if is_env_reference(value):
            variable = value["env"]
            if not isinstance(variable, str) or variable not in environ:
                raise ConfigurationError(
                    f"destination credential {name!r} refers to environment variable "
                    f"{variable!r}, which is not set"
                )
            resolved[name] = environ[variable]
        else:
            resolved[name] = value
    return resolved


def destination_for(
    kind: str,
    settings: Mapping[str, Any],
    credentials: Mapping[str, Any],
    app_settings: Settings,
    *,
    environ: Mapping[str, str] | None = None,
    retry: RetryPolicy | None = None,
) -> BaseDestination:
    """A ready destination for an export run. Settings are validated again (a stored
    configuration may predate a rule) and environment references resolved; any problem
    is a DeliveryError whose reason names the destination kind and field."""
    import os

    try:
        cls = destination_class(kind)
        resolved = resolve_credentials(credentials, os.environ if environ is None else environ)
        normalised = cls.validate(settings, resolved, app_settings)
    except InvalidRequest as exc:
        fields = "; ".join(f"{e['field']} {e['message']}" for e in exc.errors) or exc.detail
        raise DeliveryError(f"{kind} destination is not valid: {fields}") from None
    except QuarryError as exc:
        raise DeliveryError(f"{kind} destination: {exc.detail}") from None
    return cls(normalised, resolved, app_settings, retry=retry)
