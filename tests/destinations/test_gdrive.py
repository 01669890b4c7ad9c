"""Google Drive against a local server speaking the resumable upload protocol."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from destinations import hosts
from destinations.base import Delivery, DeliveryError
from destinations.gdrive import GoogleDriveDestination
from quarry.errors import InvalidRequest
from quarry.settings import Settings
from tests.destinations.conftest import (
    READONLY_FOLDER,
    WRITABLE_FOLDER,
    GoogleServer,
    build_destination,
    free_port,
    make_delivery,
)


def drive_settings(google: GoogleServer, **extra: Any) -> dict[str, Any]:
    return {
        "folder_id": WRITABLE_FOLDER,
        "api_base_url": google.base_url,
        "token_uri": google.token_uri,
        "chunk_size_kib": 256,
        "timeout_seconds": 5,
        **extra,
    }


def build(
    google: GoogleServer,
    app_settings: Settings,
    credentials: dict[str, Any] | None = None,
    **extra: Any,
) -> GoogleDriveDestination:
    credentials = credentials or {"service_account": google.service_account}
    return build_destination(
        GoogleDriveDestination, drive_settings(google, **extra), credentials, app_settings
    )


def files(google: GoogleServer) -> list[Any]:
    return list(google.state.files.values())  # type: ignore[attr-defined]


def test_resumable_upload_in_chunks(
    google: GoogleServer, app_settings: Settings, tmp_path: Path
) -> None:
    delivery = make_delivery(tmp_path, 700_000)  # three 256 KiB chunks
    receipt = build(google, app_settings).deliver(delivery)
    (stored,) = files(google)
    assert stored.content == delivery.path.read_bytes()
    assert stored.name == "orders.csv" and stored.parents == [WRITABLE_FOLDER]
    assert stored.app_properties == {"quarryJobId": delivery.job_id}
    puts = [r for r in google.state.requests if r[0] == "PUT"]  # type: ignore[attr-defined]
    assert [size for _, _, size in puts] == [262_144, 262_144, 700_000 - 2 * 262_144]
    assert receipt.location == f"https://drive.google.com/file/d/{stored.id}/view?usp=drivesdk"
    assert receipt.details == {"file_id": stored.id, "replaced": "no"}
    assert receipt.bytes == 700_000


def test_with_the_guard_on_connections_go_to_the_checked_address(
    google: GoogleServer,
    app_settings: Settings,
    strict_settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The guard's own connections (destinations.guarded_http) carry the token request and
    a chunked upload: loopback is counted public here, so the guard is on and lets the
    fake server through."""
    monkeypatch.setattr(hosts, "_is_forbidden", lambda address: False)
    connected: list[str] = []
    real_connect = hosts.connect

    def counting(host: str, port: int, **kwargs: Any) -> Any:
        connected.append(host)
        return real_connect(host, port, **kwargs)

    monkeypatch.setattr(hosts, "connect", counting)
    credentials = {"service_account": google.service_account}
    normalised = GoogleDriveDestination.validate(drive_settings(google), credentials, app_settings)
    destination = GoogleDriveDestination(normalised, credentials, strict_settings)
    delivery = make_delivery(tmp_path, 300_000)
    destination.deliver(delivery)
    (stored,) = files(google)
    assert stored.content == delivery.path.read_bytes()
    assert connected and set(connected) == {"127.0.0.1"}


def test_retry_of_same_job_replaces_only_its_own_file(
    google: GoogleServer, app_settings: Settings, tmp_path: Path
) -> None:
    destination = build(google, app_settings)
    other = destination.deliver(make_delivery(tmp_path / "other", 1_000, job_id="job-other"))
    destination.deliver(make_delivery(tmp_path / "a", 5_000, job_id="job-1"))
    again = make_delivery(tmp_path / "b", 6_000, job_id="job-1")
    receipt = destination.deliver(again)
    assert receipt.details["replaced"] == "yes"
    by_job = {f.app_properties["quarryJobId"]: f for f in files(google)}
    assert set(by_job) == {"job-other", "job-1"}
    assert by_job["job-1"].content == again.path.read_bytes()
    assert by_job["job-1"].revisions == 2
    assert by_job["job-other"].id == other.details["file_id"]
    assert by_job["job-other"].revisions == 1


def test_empty_file(google: GoogleServer, app_settings: Settings, tmp_path: Path) -> None:
    build(google, app_settings).deliver(make_delivery(tmp_path, 0))
    (stored,) = files(google)
    assert stored.content == b""


def test_connection_cut_mid_chunk_resumes(
    google: GoogleServer, app_settings: Settings, tmp_path: Path
) -> None:
    delivery = make_delivery(tmp_path, 700_000)
    google.state.faults["cut chunk"] = 1  # type: ignore[attr-defined]
    build(google, app_settings).deliver(delivery)
    (stored,) = files(google)
    assert stored.content == delivery.path.read_bytes()
    # Resumed in the same session (a status query, then the rest), not started over.
    assert (
        sum(1 for r in google.state.requests if r[1] == "/upload/drive/v3/files" and r[0] == "POST")
        == 1
    )  # type: ignore[attr-defined]
    assert any(r[0] == "PUT" and r[2] == 0 for r in google.state.requests)  # type: ignore[attr-defined]


def test_server_errors_on_chunks_resume(
    google: GoogleServer, app_settings: Settings, tmp_path: Path
) -> None:
    delivery = make_delivery(tmp_path, 600_000)
    google.state.faults["chunk 503"] = 2  # type: ignore[attr-defined]
    build(google, app_settings).deliver(delivery)
    (stored,) = files(google)
    assert stored.content == delivery.path.read_bytes()


def test_cut_every_time_leaves_no_file(
    google: GoogleServer, app_settings: Settings, tmp_path: Path
) -> None:
    google.state.faults["cut chunk"] = 1000  # type: ignore[attr-defined]
    with pytest.raises(DeliveryError) as failure:
        build(google, app_settings).deliver(make_delivery(tmp_path, 700_000))
    assert failure.value.transient
    assert f"google_drive folder {WRITABLE_FOLDER}" in failure.value.reason
    assert files(google) == []


def test_wrong_key_is_refused_by_token_endpoint(
    google: GoogleServer, app_settings: Settings, delivery: Delivery
) -> None:
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    account = {
        **google.service_account,
        "private_key": other_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode(),
    }
    with pytest.raises(DeliveryError) as failure:
        build(google, app_settings, {"service_account": account}).deliver(delivery)
    assert (
        "refused by the token endpoint (invalid_grant: Invalid JWT Signature.)"
        in failure.value.reason
    )
    assert not failure.value.transient
    assert files(google) == []


def test_folder_not_shared_for_writing(
    google: GoogleServer, app_settings: Settings, delivery: Delivery
) -> None:
    with pytest.raises(DeliveryError) as failure:
        build(google, app_settings, folder_id=READONLY_FOLDER).deliver(delivery)
    assert f"permission denied: share folder {READONLY_FOLDER}" in failure.value.reason
    assert not failure.value.transient
    assert files(google) == []


def test_missing_folder(google: GoogleServer, app_settings: Settings, delivery: Delivery) -> None:
    with pytest.raises(DeliveryError) as failure:
        build(google, app_settings, folder_id="folder-missing-0001").deliver(delivery)
    assert "folder folder-missing-0001 was not found" in failure.value.reason


def test_server_down(google: GoogleServer, app_settings: Settings, delivery: Delivery) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(DeliveryError) as failure:
        build(google, app_settings, api_base_url=down, token_uri=f"{down}/token").deliver(delivery)
    assert "cannot reach the token endpoint" in failure.value.reason
    assert failure.value.transient


def test_service_account_as_json_text(
    google: GoogleServer, app_settings: Settings, delivery: Delivery
) -> None:
    # As it arrives from an environment variable.
    build(google, app_settings, {"service_account": json.dumps(google.service_account)}).deliver(
        delivery
    )
    assert len(files(google)) == 1


@pytest.mark.parametrize(
    ("settings", "credentials", "field"),
    [
        ({"chunk_size_kib": 300}, None, "destination.settings.chunk_size_kib"),
        ({"folder_id": "a/b"}, None, "destination.settings.folder_id"),
        ({"api_base_url": "ftp://x"}, None, "destination.settings.api_base_url"),
        ({}, {}, "destination.credentials.service_account"),
        ({}, {"service_account": "{not json"}, "destination.credentials.service_account"),
        (
            {},
            {"service_account": {"type": "authorized_user"}},
            "destination.credentials.service_account",
        ),
    ],
)
def test_validation_names_the_field(
    google: GoogleServer,
    app_settings: Settings,
    settings: dict[str, Any],
    credentials: dict[str, Any] | None,
    field: str,
) -> None:
    if credentials is None:
        credentials = {"service_account": google.service_account}
    with pytest.raises(InvalidRequest) as failure:
        GoogleDriveDestination.validate(
            {**drive_settings(google), **settings}, credentials, app_settings
        )
    assert field in [e["field"] for e in failure.value.errors]
    assert google.service_account["private_key"] not in str(failure.value.errors)


def test_plain_http_api_refused_in_production(
    strict_settings: Settings, google: GoogleServer
) -> None:
    with pytest.raises(InvalidRequest) as failure:
        GoogleDriveDestination.validate(
            {"folder_id": WRITABLE_FOLDER, "api_base_url": "http://drive.example.com"},
            {"service_account": google.service_account},
            strict_settings,
        )
    assert failure.value.errors[0]["field"] == "destination.settings.api_base_url"
