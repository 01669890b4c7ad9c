"""The demo's API key: one per QUARRY_HOME, reused by every `quarry demo start`.

Quarry stores only a key's digest, so the demo keeps the secret itself, in
QUARRY_HOME/demo-api-key (readable by its owner only): a second `make demo` prints the same
key, and the curl lines of the first still work. When that key no longer serves (revoked,
or the demo moved to a newer account after `quarry demo seed`), a new one is made and the
one it replaces is revoked, so no forgotten demo key stays live.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select

from quarry.settings import Settings
from registry.db import Registry
from registry.keys import create_key, digest, revoke_key, well_formed
from registry.models import ApiKey

DEMO_SCOPES = ("read_data", "exports")
KEY_FILE = "demo-api-key"


@dataclass(frozen=True)
class DemoKey:
    secret: str
    reused: bool
    replaced_id: str | None = None  # the earlier demo key, revoked


def key_file(settings: Settings) -> Path:
    return settings.home / KEY_FILE


def demo_key(settings: Settings, registry: Registry, account_id: str) -> DemoKey:
    """The demo's key for `account_id`: the one kept in the key file while it is live and
    the account's, else a new one (the kept one, if live, revoked)."""
    path = key_file(settings)
    kept = path.read_text().strip() if path.exists() else ""
    with registry.session() as session:
        row = (
            session.scalars(select(ApiKey).where(ApiKey.digest == digest(kept))).first()
            if well_formed(kept)
            else None
        )
        if row is not None and row.revoked_at is None and row.account_id == account_id:
            return DemoKey(kept, reused=True)
        replaced = None
        if row is not None and row.revoked_at is None:
            replaced = revoke_key(session, row.id).id
        issued = create_key(session, account_id=account_id, scopes=DEMO_SCOPES)
        secret = issued.secret
    _write_private(path, secret)
    return DemoKey(secret, reused=False, replaced_id=replaced)


def _write_private(path: Path, secret: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".tmp")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(secret + "\n")
    partial.replace(path)
