"""A secret typed into the export form survives the form coming back (a problem in another
field) without being sent back to the browser: the server keeps it sealed for the form,
bound to the session, until the form is saved, the user signs out or it expires."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select, update

from quarry.crypto import SecretBox
from registry.models import ConsoleFormSecret, ExportConfig, utcnow
from tests.api.console.conftest import Browser, ConsoleAccount, csrf_of, form_fields
from tests.api.console.test_exports import YAML_CONFIG, _apply, _replace
from tests.api.world import World

TYPED = "typed-s3cret-9f2c"


@pytest.fixture
def signed_in(browser: Browser, console_account: ConsoleAccount) -> Browser:
    assert browser.sign_in(console_account.keys["all"]).status_code == 303
    return browser


def _s3_form(person: Browser, name: str, secret: str, cron: str) -> list[tuple[str, str]]:
    """A new S3 export's fields with `secret` typed for its secret access key."""
    page = person.get("/console/exports/new?entity_type=products")
    refreshed = person.submit(
        "/console/exports/new",
        [*_replace(form_fields(page, "export-form"), dest__kind="s3"), ("action", "refresh")],
    )
    assert 'name="ds.bucket"' in refreshed.text
    return _replace(
        form_fields(refreshed, "export-form"),
        name=name,
        cron=cron,
        ds__bucket="quarry-drop",
        ds__region="eu-central-1",
        dc__access_key_id__mode="env",
        dc__access_key_id__value="DROP_KEY_ID",
        dc__secret_access_key__mode="secret",
        dc__secret_access_key__value=secret,
    )


def _kept_row(world: World, response: httpx.Response) -> ConsoleFormSecret | None:
    """The registry's row of the secrets kept for the form of `response` (its handle)."""
    (handle,) = [v for k, v in form_fields(response, "export-form") if k == "kept_secrets"]
    with world.registry.session() as session:
        row = session.get(ConsoleFormSecret, hashlib.sha256(handle.encode()).hexdigest())
        if row is not None:
            session.expunge(row)
    return row


def _kept_value(world: World, response: httpx.Response) -> str:
    row = _kept_row(world, response)
    assert row is not None and TYPED not in row.sealed
    return SecretBox(world.settings.fernet_keys).open(row.sealed)["secret_access_key"]


def _stored(world: World, account_id: str, name: str) -> dict[str, object]:
    with world.registry.session() as session:
        row = session.scalar(
            select(ExportConfig).where(
                ExportConfig.account_id == account_id, ExportConfig.name == name
            )
        )
        assert row is not None and row.credentials_secret is not None
        return SecretBox(world.settings.fernet_keys).open(row.credentials_secret)


def test_a_typed_secret_is_kept_server_side_through_a_problem_then_saved(
    signed_in: Browser, console_account: ConsoleAccount, world: World
) -> None:
    fields = _s3_form(signed_in, "Console kept secret", TYPED, "every monday")
    refused = signed_in.submit("/console/exports/new", [*fields, ("action", "save")])
    assert refused.status_code == 422
    assert TYPED not in refused.text  # never sent back
    back = form_fields(refused, "export-form")
    assert ("dc.secret_access_key.mode", "kept") in back
    assert ("dc.secret_access_key.value", "") in back
    beside = refused.text.split('id="dc-secret_access_key-value"')[1].split("</fieldset>")[0]
    assert "Secret entered, kept" in beside
    assert _kept_value(world, refused) == TYPED

    # The cron fixed, the form otherwise as it came back: saved with the typed secret.
    saved = signed_in.submit(
        "/console/exports/new", [*_replace(back, cron="0 6 * * 1"), ("action", "save")]
    )
    assert saved.status_code == 303, saved.text[:3000]
    stored = _stored(world, console_account.account_id, "Console kept secret")
    assert stored == {"access_key_id": {"env": "DROP_KEY_ID"}, "secret_access_key": TYPED}
    assert _kept_row(world, refused) is None  # saving ends what the form kept


def test_a_kept_secret_is_replaced_by_typing_and_asked_for_again_once_expired(
    signed_in: Browser, console_account: ConsoleAccount, world: World
) -> None:
    fields = _s3_form(signed_in, "Console replaced secret", "first-one", "every monday")
    refused = signed_in.submit("/console/exports/new", [*fields, ("action", "save")])
    back = form_fields(refused, "export-form")
    retyped = _replace(back, dc__secret_access_key__value=TYPED)
    again = signed_in.submit("/console/exports/new", [*retyped, ("action", "preview")])
    assert again.status_code == 422 and TYPED not in again.text
    assert _kept_value(world, again) == TYPED

    with world.registry.session() as session:
        kept = _kept_row(world, again)
        assert kept is not None
        session.execute(
            update(ConsoleFormSecret)
            .where(ConsoleFormSecret.id == kept.id)
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    fixed = _replace(form_fields(again, "export-form"), cron="0 6 * * 1")
    expired = signed_in.submit("/console/exports/new", [*fixed, ("action", "save")])
    assert expired.status_code == 422
    beside = expired.text.split('id="dc-secret_access_key-value"')[1].split("</fieldset>")[0]
    assert "no longer kept" in beside and "type it again" in beside
    names = [
        e["name"]
        for e in signed_in.get("/v1/exports", key=console_account.keys["all"]).json()["data"]
    ]
    assert "Console replaced secret" not in names


def test_signing_out_drops_what_the_forms_kept(signed_in: Browser, world: World) -> None:
    fields = _s3_form(signed_in, "Console signed out", TYPED, "every monday")
    refused = signed_in.submit("/console/exports/new", [*fields, ("action", "save")])
    assert refused.status_code == 422 and _kept_row(world, refused) is not None
    out = signed_in.request("POST", "/console/sign-out", data={"csrf_token": csrf_of(refused)})
    assert out.status_code == 303
    assert _kept_row(world, refused) is None


def test_a_stored_secret_stays_stored_when_its_form_comes_back_with_a_problem(
    signed_in: Browser, console_account: ConsoleAccount, world: World
) -> None:
    entry = dict(YAML_CONFIG, name="Console stored through a problem")
    config_id = _apply(world, console_account, entry)[entry["name"]]
    edit = signed_in.get(f"/console/exports/{config_id}/edit")
    bad = _replace(form_fields(edit, "export-form"), cron="every monday")
    refused = signed_in.submit(f"/console/exports/{config_id}/edit", [*bad, ("action", "save")])
    assert refused.status_code == 422 and "s3cret" not in refused.text
    back = form_fields(refused, "export-form")
    assert ("dc.secret_access_key.mode", "stored") in back
    assert not any(k == "kept_secrets" for k, _ in back)  # nothing typed, nothing kept
    fixed = _replace(back, cron="30 5 * * *")
    saved = signed_in.submit(f"/console/exports/{config_id}/edit", [*fixed, ("action", "save")])
    assert saved.status_code == 303, saved.text[:3000]
    stored = _stored(world, console_account.account_id, entry["name"])
    assert stored["secret_access_key"] == "s3cret"
