"""Collecting every problem of a configuration file at once, each named by its key path
(`exports[0].filters.financial_status`), and raising them as one InvalidRequest whose
detail names the file, the key and the problem."""

from __future__ import annotations

from typing import Any

from quarry.errors import InvalidRequest


class Problems:
    def __init__(self, source: str) -> None:
        self.source = source
        self.errors: list[dict[str, str]] = []

    def add(self, key: str, message: str) -> None:
        self.errors.append({"field": key, "message": message})

    def absorb(self, key: str, error: InvalidRequest, *, strip: str = "") -> None:
        """The field errors of `error`, re-rooted under `key` (without prefix `strip`)."""
        if not error.errors:
            self.add(key, error.detail)
        for item in error.errors:
            inner = str(item.get("field", "")).removeprefix(strip)
            self.add(f"{key}.{inner}" if inner else key, str(item.get("message", "")))

    def unknown_keys(self, key: str, given: Any, known: tuple[str, ...]) -> None:
        """A misspelt key would otherwise be ignored: name each unknown one."""
        if isinstance(given, dict):
            for name in given:
                if name not in known:
                    self.add(f"{key}.{name}" if key else str(name), "unknown key; known: "
                             + ", ".join(known))  # fmt: skip

    def error(self) -> InvalidRequest:
        """Every problem so far, as one error."""
        listed = "; ".join(f"{e['field']}: {e['message']}" for e in self.errors)
        return InvalidRequest(f"{self.source}: {listed}", errors=list(self.errors))

    def raise_if_any(self) -> None:
        if self.errors:
            raise self.error()
