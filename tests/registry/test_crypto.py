"""Secrets at rest: SecretBox round trips, key rotation with MultiFernet, and a clear
error when the configured key cannot open what was stored."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from quarry.crypto import SecretBox
from quarry.errors import ConfigurationError
from quarry.settings import load_settings

DOCUMENT = {"host": "sftp.example", "username": "exporter", "password": "s3cret ünïcode"}


def new_key() -> str:
    return Fernet.generate_key().decode()


def test_a_sealed_document_opens_again() -> None:
    box = SecretBox([new_key()])
    token = box.seal(DOCUMENT)
    assert "s3cret" not in token and "exporter" not in token
    assert box.open(token) == DOCUMENT


def test_sealing_twice_gives_different_tokens() -> None:
    box = SecretBox([new_key()])
    assert box.seal(DOCUMENT) != box.seal(DOCUMENT)


def test_an_old_token_opens_after_rotation_and_rotates_to_the_newest_key() -> None:
    old, new = new_key(), new_key()
    token = SecretBox([old]).seal(DOCUMENT)
    rotating = SecretBox([new, old])
    assert rotating.open(token) == DOCUMENT

    rotated = rotating.rotate(token)
    assert rotated != token
    # Encrypted under the newest key: it opens without the old one...
    assert SecretBox([new]).open(rotated) == DOCUMENT
    # ...and no longer with the old key alone.
    with pytest.raises(ConfigurationError):
        SecretBox([old]).open(rotated)


def test_a_wrong_key_is_a_clear_configuration_error() -> None:
    token = SecretBox([new_key()]).seal(DOCUMENT)
    with pytest.raises(ConfigurationError, match="cannot be decrypted") as caught:
        SecretBox([new_key()]).open(token)
    message = str(caught.value)
    assert "QUARRY_SECRET_KEY" in message
    assert "s3cret" not in message


def test_rotating_with_a_wrong_key_is_a_clear_configuration_error() -> None:
    token = SecretBox([new_key()]).seal(DOCUMENT)
    with pytest.raises(ConfigurationError, match="QUARRY_SECRET_KEY"):
        SecretBox([new_key()]).rotate(token)


def test_a_damaged_token_is_a_clear_configuration_error() -> None:
    box = SecretBox([new_key()])
    with pytest.raises(ConfigurationError, match="cannot be decrypted"):
        box.open("not-a-token")


@pytest.mark.parametrize("keys", [["not-a-fernet-key"], ["c2hvcnQ="], []])
def test_an_invalid_or_missing_key_is_refused_up_front(keys: list[str]) -> None:
    with pytest.raises(ConfigurationError, match="Fernet key"):
        SecretBox(keys)


def test_the_secret_key_setting_takes_several_keys_newest_first(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    old, new = new_key(), new_key()
    token = SecretBox([old]).seal(DOCUMENT)
    monkeypatch.setenv("QUARRY_HOME", str(tmp_path))
    monkeypatch.setenv("QUARRY_SECRET_KEY", f" {new} , {old} ")
    settings = load_settings()
    assert settings.fernet_keys == [new, old]
    box = SecretBox(settings.fernet_keys)
    assert box.open(token) == DOCUMENT
    assert SecretBox([new]).open(box.rotate(token)) == DOCUMENT
