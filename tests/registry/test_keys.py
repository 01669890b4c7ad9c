"""API keys on both databases: the secret is shown once and only its SHA-256 digest is
kept; malformed, unknown and revoked keys do not authenticate; store scopes are checked."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from quarry.errors import InvalidRequest, NotFound
from registry.accounts import create_account
from registry.db import Registry
from registry.keys import (
    KEY_PREFIX,
    IssuedKey,
    create_key,
    list_keys,
    revoke_key,
    well_formed,
)
from registry.principals import Principal, load_principal
from tests.factories import add_store


@pytest.fixture
def account_id(registry: Registry) -> str:
    with registry.session() as session:
        return create_account(session, name="Acme", currency="USD", timezone="UTC").id


def principal_of(session: Session, secret: str) -> Principal | None:
    """The key's Principal as the API loads it, seeing what `session` has not committed."""
    session.flush()
    return load_principal(session.connection(), secret)


def issue(registry: Registry, account_id: str, **options: object) -> IssuedKey:
    options.setdefault("scopes", ["read_data"])
    with registry.session() as session:
        return create_key(session, account_id=account_id, **options)  # type: ignore[arg-type]


def test_a_new_key_is_well_formed_and_stored_only_as_a_digest(
    registry: Registry, account_id: str
) -> None:
    issued = issue(registry, account_id, scopes=["read_data", "exports"])
    secret = issued.secret
    assert secret.startswith(KEY_PREFIX)
    assert well_formed(secret)
    with registry.session() as session:
        row = (
            session.execute(text("SELECT * FROM api_keys WHERE id = :id"), {"id": issued.row.id})
            .mappings()
            .one()
        )
    assert row["digest"] == hashlib.sha256(secret.encode()).hexdigest()
    assert row["prefix"] == secret[: len(row["prefix"])]
    assert len(row["prefix"]) < len(secret) // 2, "the visible prefix must not give the key away"
    stored = " ".join(str(value) for value in row.values())
    assert secret not in stored
    assert secret[len(KEY_PREFIX) :] not in stored


def test_each_key_is_different(registry: Registry, account_id: str) -> None:
    secrets = {issue(registry, account_id).secret for _ in range(5)}
    assert len(secrets) == 5


def test_listed_keys_carry_no_secret(registry: Registry, account_id: str) -> None:
    issued = issue(registry, account_id)
    with registry.session() as session:
        (row,) = list_keys(session, account_id)
        assert row.id == issued.row.id
        assert not hasattr(row, "secret")
        assert issued.secret not in repr(vars(row))


def flip(char: str) -> str:
    return "A" if char != "A" else "B"


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda k: k[:-1] + flip(k[-1]), id="bad-checksum"),
        pytest.param(lambda k: k[:10] + flip(k[10]) + k[11:], id="mistyped-body"),
        pytest.param(lambda k: "xk_" + k[3:], id="wrong-prefix"),
        pytest.param(lambda k: k[:-1], id="too-short"),
        pytest.param(lambda k: k + "0", id="too-long"),
        pytest.param(lambda k: k[:20] + "-" + k[21:], id="not-base62"),
        pytest.param(lambda k: "", id="empty"),
    ],
)
def test_well_formed_rejects_damaged_keys(
    registry: Registry, account_id: str, mangle: Callable[[str], str]
) -> None:
    secret = issue(registry, account_id).secret
    damaged = mangle(secret)
    assert not well_formed(damaged)
    with registry.session() as session:
        assert principal_of(session, damaged) is None


def test_authenticate_finds_a_live_key(registry: Registry, account_id: str) -> None:
    issued = issue(registry, account_id)
    with registry.session() as session:
        row = principal_of(session, issued.secret)
        assert row is not None
        assert (row.key_id, row.account_id, row.scopes) == (
            issued.row.id,
            account_id,
            ("read_data",),
        )


def test_an_unknown_well_formed_key_does_not_authenticate(
    registry: Registry, account_id: str
) -> None:
    issued = issue(registry, account_id)
    with registry.session() as session:
        session.execute(text("DELETE FROM api_keys"))
    with registry.session() as session:
        assert well_formed(issued.secret)
        assert principal_of(session, issued.secret) is None


def test_revoking_takes_effect_at_once(registry: Registry, account_id: str) -> None:
    issued = issue(registry, account_id)
    kept = issue(registry, account_id)
    with registry.session() as session:
        assert principal_of(session, issued.secret) is not None
        revoke_key(session, issued.row.id)
        # The same session already refuses it...
        assert principal_of(session, issued.secret) is None
    # ...and so does every new one, while the other key still works.
    with registry.session() as session:
        assert principal_of(session, issued.secret) is None
        assert principal_of(session, kept.secret) is not None


def test_revoking_twice_keeps_the_first_time(registry: Registry, account_id: str) -> None:
    issued = issue(registry, account_id)
    with registry.session() as session:
        first = revoke_key(session, issued.row.id).revoked_at
    with registry.session() as session:
        again = revoke_key(session, issued.row.id).revoked_at
    assert first is not None and again == first
    assert again.utcoffset() is not None


def test_revoking_an_unknown_key_is_not_found(registry: Registry) -> None:
    with registry.session() as session, pytest.raises(NotFound, match="key_nope"):
        revoke_key(session, "key_nope")


@pytest.mark.parametrize("scopes", [["admin"], [], ["read_data", "write_everything"]])
def test_unknown_or_missing_scopes_are_refused(
    registry: Registry, account_id: str, scopes: list[str]
) -> None:
    with pytest.raises(InvalidRequest, match="scopes"):
        issue(registry, account_id, scopes=scopes)
    with registry.session() as session:
        assert list_keys(session) == []


def test_a_key_for_an_unknown_account_is_not_found(registry: Registry) -> None:
    with pytest.raises(NotFound, match="acc_nope"):
        issue(registry, "acc_nope")


def test_a_key_without_stores_covers_every_store(registry: Registry, account_id: str) -> None:
    issued = issue(registry, account_id)
    assert issued.row.store_ids is None


def test_a_key_may_be_limited_to_stores_of_its_account(registry: Registry, account_id: str) -> None:
    first = add_store(registry, account_id, "first")
    second = add_store(registry, account_id, "second")
    issued = issue(registry, account_id, store_ids=[second, first, second])
    with registry.session() as session:
        row = principal_of(session, issued.secret)
        assert row is not None
        assert row.store_ids == tuple(sorted([first, second]))


def test_a_key_cannot_reach_another_accounts_store(registry: Registry, account_id: str) -> None:
    own = add_store(registry, account_id, "own")
    with registry.session() as session:
        other = create_account(session, name="Other", currency="USD", timezone="UTC").id
    foreign = add_store(registry, other, "foreign")
    with pytest.raises(InvalidRequest, match=foreign):
        issue(registry, account_id, store_ids=[own, foreign])
    with pytest.raises(InvalidRequest, match="st_nope"):
        issue(registry, account_id, store_ids=["st_nope"])
    with registry.session() as session:
        assert list_keys(session) == []


def test_an_empty_store_list_is_refused(registry: Registry, account_id: str) -> None:
    with pytest.raises(InvalidRequest, match="at least one store"):
        issue(registry, account_id, store_ids=[])
