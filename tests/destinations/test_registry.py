"""Kinds by name, credential references and the calls the export job makes."""

from __future__ import annotations

import pytest

from destinations.base import DeliveryError
from destinations.email import EmailDestination
from destinations.kinds import (
    KINDS,
    destination_class,
    destination_for,
    resolve_credentials,
    validate_destination,
)
from quarry.errors import ConfigurationError, InvalidRequest
from quarry.settings import Settings

EMAIL = {"host": "127.0.0.1", "from_address": "a@example.com", "to": ["b@example.com"]}


def test_every_kind_loads() -> None:
    for kind in KINDS:
        assert destination_class(kind).kind == kind


def test_unknown_kind_names_the_field(app_settings: Settings) -> None:
    with pytest.raises(InvalidRequest) as failure:
        validate_destination("dropbox", {}, {}, app_settings)
    assert failure.value.errors[0]["field"] == "destination.kind"


def test_validate_returns_normalised_settings(app_settings: Settings) -> None:
    assert validate_destination("email", EMAIL, {}, app_settings)["port"] == 587


def test_resolve_credentials() -> None:
    resolved = resolve_credentials(
        {"username": "u", "password": {"env": "SMTP_PASSWORD"}}, {"SMTP_PASSWORD": "s3cret-value"}
    )
    assert resolved == {"username": "u", "password": "s3cret-value"}


def test_missing_variable_is_named() -> None:
    with pytest.raises(ConfigurationError) as failure:
        resolve_credentials({"password": {"env": "SMTP_PASSWORD"}}, {"OTHER": "x"})
    assert "SMTP_PASSWORD" in str(failure.value)
    assert "'password'" in str(failure.value)


def test_destination_for_resolves_references(app_settings: Settings) -> None:
    destination = destination_for(
        "email",
        EMAIL,
        {"username": "u", "password": {"env": "SMTP_PASSWORD"}},
        app_settings,
        environ={"SMTP_PASSWORD": "s3cret-value"},
    )
    assert isinstance(destination, EmailDestination)
    assert destination._credentials["password"] == "s3cret-value"


def test_destination_for_fails_with_a_delivery_error(app_settings: Settings) -> None:
    with pytest.raises(DeliveryError) as failure:
        destination_for(
            "email", EMAIL, {"username": "u", "password": {"env": "NOPE"}}, app_settings, environ={}
        )
    assert "NOPE" in failure.value.reason and "email" in failure.value.reason
    with pytest.raises(DeliveryError) as failure:
        destination_for("email", {**EMAIL, "to": ["x"]}, {}, app_settings, environ={})
    assert "destination.settings.to[0]" in failure.value.reason
