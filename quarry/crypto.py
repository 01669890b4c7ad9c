"""Secrets at rest: Fernet with MultiFernet, so keys can rotate (newest key first)."""

from __future__ import annotations

import json
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from quarry.errors import ConfigurationError


class SecretBox:
    """Encrypts and decrypts small JSON documents (connection settings, credentials)."""

    def __init__(self, keys: list[str]) -> None:
        if not keys:
            raise ConfigurationError("no Fernet key configured")
        try:
            self._fernet = MultiFernet([Fernet(k.encode()) for k in keys])
        except (ValueError, TypeError) as exc:
            raise ConfigurationError(
                "QUARRY_SECRET_KEY is not a valid Fernet key (32 url-safe base64 bytes)"
            ) from exc

    def seal(self, document: dict[str, Any]) -> str:
        return self._fernet.encrypt(json.dumps(document, sort_keys=True).encode()).decode()

    def open(self, token: str) -> dict[str, Any]:
        try:
            return json.loads(self._fernet.decrypt(token.encode()))
        except InvalidToken as exc:
            raise _undecryptable() from exc

    def rotate(self, token: str) -> str:
        """Re-encrypt under the newest key; the token must open with one of the keys."""
        try:
            return self._fernet.rotate(token.encode()).decode()
        except InvalidToken as exc:
            raise _undecryptable() from exc


def _undecryptable() -> ConfigurationError:
    return ConfigurationError(
        "a stored secret cannot be decrypted with the configured QUARRY_SECRET_KEY "
        "(was the key changed without keeping the old one after it, comma-separated?)"
    )
