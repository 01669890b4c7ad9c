"""Identifiers of registry rows: a readable prefix and random, URL-safe characters."""

from __future__ import annotations

import secrets

_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


def new_id(prefix: str, length: int = 12) -> str:
    """`acc_3k9x...`: prefix, underscore, `length` random lowercase letters and digits."""
    return f"{prefix}_" + "".join(secrets.choice(_ALPHABET) for _ in range(length))
