"""Reading a destination's settings and credentials when a configuration is applied:
every problem is collected as {field, message}, with the field named as the API shows it
(`destination.settings.host`, `destination.credentials.password`), and raised together as
quarry.errors.InvalidRequest. Messages never echo a credential's value."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from destinations import hosts
from quarry.errors import InvalidRequest

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CONTROL_MULTILINE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_env_reference(value: Any) -> bool:
    """`{"env": "VAR"}`: a credential read from the worker's environment at delivery time."""
    return isinstance(value, Mapping) and set(value) == {"env"}


class FieldReader:
    """Reads one destination's settings and credentials, collecting every problem as
    {field, message} so the caller sees all of them at once. Messages never echo a
    credential's value."""

    def __init__(
        self, kind: str, settings: Mapping[str, Any], credentials: Mapping[str, Any]
    ) -> None:
        self.kind = kind
        self.errors: list[dict[str, str]] = []
        self._settings = settings if isinstance(settings, Mapping) else {}
        self._credentials = credentials if isinstance(credentials, Mapping) else {}
        if not isinstance(settings, Mapping):
            self.error("settings", "must be an object", section="destination")
        if not isinstance(credentials, Mapping):
            self.error("credentials", "must be an object", section="destination")
        # Dicts as ordered sets: the order a kind reads its fields is the order a form
        # shows them (read_names).
        self._seen_settings: dict[str, None] = {}
        self._seen_credentials: dict[str, None] = {}

    def error(self, name: str, message: str, *, section: str = "settings") -> None:
        prefix = "destination" if section == "destination" else f"destination.{section}"
        self.errors.append({"field": f"{prefix}.{name}", "message": message})

    def has_error(self, name: str, *, section: str = "settings") -> bool:
        wanted = f"destination.{section}.{name}"
        return any(e["field"] == wanted for e in self.errors)

    def raw(self, name: str) -> Any:
        self._seen_settings[name] = None
        return self._settings.get(name)

    def text(
        self,
        name: str,
        *,
        required: bool = False,
        default: str | None = None,
        max_length: int = 1024,
        multiline: bool = False,
    ) -> str | None:
        value = self.raw(name)
        if value is None or value == "":
            if required:
                self.error(name, "is required")
            return default
        if not isinstance(value, str):
            self.error(name, "must be a string")
            return default
        if len(value) > max_length:
            self.error(name, f"must be at most {max_length} characters")
            return default
        pattern = _CONTROL_MULTILINE if multiline else _CONTROL
        if pattern.search(value):
            what = "control characters" if multiline else "line breaks or control characters"
            self.error(name, f"must not contain {what}")
            return default
        return value

    def check(self, name: str, value: str | None, rule: Callable[[str], str | None]) -> None:
        """Record `rule(value)`, the problem with a setting already read as `name` (None when
        there is none), unless the value is absent or already has an error."""
        if value and not self.has_error(name):
            problem = rule(value)
            if problem:
                self.error(name, problem)

    def host(self, name: str, *, allow_private: bool) -> str | None:
        """A required host name or IP address that passes the private-host guard."""
        value = self.text(name, required=True, max_length=253)
        self.check(name, value, lambda host: _host_error(host, allow_private=allow_private))
        return value

    def integer(self, name: str, *, default: int, minimum: int, maximum: int) -> int:
        value = self.raw(name)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(name, "must be an integer")
            return default
        if not minimum <= value <= maximum:
            self.error(name, f"must be between {minimum} and {maximum}")
            return default
        return value

    def choice(self, name: str, choices: tuple[str, ...], *, default: str) -> str:
        value = self.raw(name)
        if value is None:
            return default
        if value not in choices:
            self.error(name, "must be one of " + ", ".join(repr(c) for c in choices))
            return default
        return str(value)

    def string_list(self, name: str, *, required: bool = False) -> list[str]:
        value = self.raw(name)
        if value is None or value == []:
            if required:
                self.error(name, "is required")
            return []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.error(name, "must be a list of strings")
            return []
        return list(value)

    def credential(self, name: str, *, required: bool = False) -> str | None:
        """The literal value of a credential, None when absent or an environment reference
        (those are resolved only when delivering, where the variable must exist)."""
        self._seen_credentials[name] = None
        value = self._credentials.get(name)
        if value is None or value == "":
            if required:
                self.error(name, "is required", section="credentials")
            return None
        if is_env_reference(value):
            if not isinstance(value["env"], str) or not _ENV_NAME.match(value["env"]):
                self.error(name, "env must name an environment variable", section="credentials")
            return None
        if not isinstance(value, str):
            self.error(name, 'must be a string or {"env": "VARIABLE"}', section="credentials")
            return None
        return value

    def raw_credential(self, name: str) -> Any:
        """A credential as given (a JSON key may be an object); None when absent."""
        self._seen_credentials[name] = None
        value = self._credentials.get(name)
        return None if value == "" else value

    def credential_present(self, name: str) -> bool:
        self._seen_credentials[name] = None
        value = self._credentials.get(name)
        return value is not None and value != ""

    def refuse_unknown(self) -> None:
        """A misspelt key would otherwise be silently ignored; name it instead."""
        for name in self._settings:
            if name not in self._seen_settings:
                self.error(str(name), "is not a setting of this destination kind")
        for name in self._credentials:
            if name not in self._seen_credentials:
                self.error(
                    str(name), "is not a credential of this destination kind", section="credentials"
                )

    def read_names(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The settings and credentials read so far, each in the order first read."""
        return tuple(self._seen_settings), tuple(self._seen_credentials)

    def raise_if_errors(self) -> None:
        self.refuse_unknown()
        if self.errors:
            first = self.errors[0]
            raise InvalidRequest(
                detail=f"invalid {self.kind} destination: {first['field']} {first['message']}",
                errors=list(self.errors),
            )


def _host_error(value: str, *, allow_private: bool) -> str | None:
    """Why `value` is not a host name or address that passes the private-host guard, or None."""
    problem = hosts.host_syntax_error(value)
    if problem is None:
        try:
            hosts.check_host(value, allow_private=allow_private)
        except hosts.HostRefused as exc:
            problem = exc.reason
    return problem
