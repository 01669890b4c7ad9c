"""SFTP against a real OpenSSH sshd on loopback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from destinations.base import Delivery, DeliveryError
from destinations.sftp import SftpDestination
from quarry.errors import InvalidRequest
from quarry.settings import Settings
from tests.destinations.conftest import (
    FAST_RETRY,
    SFTP_USER,
    SshServer,
    build_destination,
    make_delivery,
)


def settings_for(sshd: SshServer, folder: Path | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "host": "127.0.0.1",
        "port": sshd.port,
        "folder": str(folder or sshd.uploads),
        "host_key": sshd.host_key,
        "timeout_seconds": 5,
        **extra,
    }


def key_credentials(sshd: SshServer) -> dict[str, str]:
    return {"username": SFTP_USER, "private_key": sshd.client_key}


def password_credentials(sshd: SshServer) -> dict[str, str]:
    return {"username": SFTP_USER, "password": sshd.password}


def build(
    sshd: SshServer, app_settings: Settings, credentials: dict[str, str], **settings: Any
) -> SftpDestination:
    return build_destination(
        SftpDestination, settings_for(sshd, **settings), credentials, app_settings
    )


def remote_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture
def folder(sshd: SshServer, request: pytest.FixtureRequest) -> Path:
    """A fresh folder on the server, writable by the test user."""
    import shutil

    path = sshd.uploads / request.node.name.replace("[", "_").replace("]", "_")
    path.mkdir()
    shutil.chown(path, user=SFTP_USER)
    return path


def test_delivers_byte_identical_file_with_key_auth(
    sshd: SshServer, app_settings: Settings, delivery: Delivery, folder: Path
) -> None:
    destination = build(sshd, app_settings, key_credentials(sshd), folder=folder)
    receipt = destination.deliver(delivery)
    assert (folder / "orders.csv").read_bytes() == delivery.path.read_bytes()
    assert remote_files(folder) == ["orders.csv"]
    assert receipt.bytes == delivery.path.stat().st_size
    assert receipt.location.endswith(f"{folder}/orders.csv")
    import hashlib

    assert receipt.sha256 == hashlib.sha256(delivery.path.read_bytes()).hexdigest()


def test_delivers_with_password_and_overwrites_own_file_on_retry(
    sshd: SshServer, app_settings: Settings, tmp_path: Path, folder: Path
) -> None:
    destination = build(sshd, app_settings, password_credentials(sshd), folder=folder)
    first = make_delivery(tmp_path / "a", 50_000, job_id="job-1")
    destination.deliver(first)
    again = make_delivery(tmp_path / "b", 70_000, job_id="job-1")
    destination.deliver(again)
    assert (folder / "orders.csv").read_bytes() == again.path.read_bytes()
    assert remote_files(folder) == ["orders.csv"]


def test_empty_file(sshd: SshServer, app_settings: Settings, tmp_path: Path, folder: Path) -> None:
    destination = build(sshd, app_settings, key_credentials(sshd), folder=folder)
    receipt = destination.deliver(make_delivery(tmp_path, 0))
    assert (folder / "orders.csv").read_bytes() == b""
    assert receipt.bytes == 0


def test_changed_host_key_refuses_before_sending_anything(
    sshd: SshServer, app_settings: Settings, delivery: Delivery, folder: Path
) -> None:
    destination = build(
        sshd, app_settings, password_credentials(sshd), folder=folder, host_key=sshd.other_host_key
    )
    log_before = sshd.log.read_text()
    with pytest.raises(DeliveryError) as failure:
        destination.deliver(delivery)
    assert "host key mismatch" in failure.value.reason
    assert "127.0.0.1" in failure.value.reason and "sftp" in failure.value.reason
    assert not failure.value.transient
    assert remote_files(folder) == []
    # No login was even attempted: the credentials never left the client.
    new_log = sshd.log.read_text()[len(log_before) :]
    assert "Accepted" not in new_log and "Failed password" not in new_log


def test_unknown_key_type_refuses(
    sshd: SshServer, app_settings: Settings, delivery: Delivery, folder: Path
) -> None:
    destination = build(
        sshd, app_settings, key_credentials(sshd), folder=folder, host_key=sshd.ecdsa_host_key
    )
    with pytest.raises(DeliveryError) as failure:
        destination.deliver(delivery)
    assert "offers no ecdsa-sha2-nistp256 host key" in failure.value.reason
    assert remote_files(folder) == []


def test_bad_password(
    sshd: SshServer, app_settings: Settings, delivery: Delivery, folder: Path
) -> None:
    credentials = {"username": SFTP_USER, "password": "not-the-password"}
    destination = build(sshd, app_settings, credentials, folder=folder)
    with pytest.raises(DeliveryError) as failure:
        destination.deliver(delivery)
    assert "authentication failed" in failure.value.reason
    assert "not-the-password" not in failure.value.reason
    assert remote_files(folder) == []


def test_permission_denied(sshd: SshServer, app_settings: Settings, delivery: Delivery) -> None:
    destination = build(sshd, app_settings, key_credentials(sshd), folder=sshd.readonly)
    with pytest.raises(DeliveryError) as failure:
        destination.deliver(delivery)
    assert f"permission denied writing to folder {sshd.readonly}" in failure.value.reason
    assert remote_files(sshd.readonly) == []


def test_missing_folder(sshd: SshServer, app_settings: Settings, delivery: Delivery) -> None:
    missing = sshd.uploads / "does-not-exist"
    destination = build(sshd, app_settings, key_credentials(sshd), folder=missing)
    with pytest.raises(DeliveryError) as failure:
        destination.deliver(delivery)
    assert "does not exist" in failure.value.reason


def test_server_down(app_settings: Settings, delivery: Delivery, sshd: SshServer) -> None:
    from tests.destinations.conftest import free_port

    settings = settings_for(sshd, port=free_port())
    destination = build_destination(SftpDestination, settings, key_credentials(sshd), app_settings)
    with pytest.raises(DeliveryError) as failure:
        destination.deliver(delivery)
    assert "connection refused" in failure.value.reason
    assert failure.value.transient


def test_connection_cut_mid_upload_is_retried(
    sshd: SshServer, app_settings: Settings, tmp_path: Path, folder: Path, cutting_proxy: Any
) -> None:
    proxy = cutting_proxy(sshd.port, cut_after=400_000, cuts=1)
    delivery = make_delivery(tmp_path, 2_000_000)
    destination = build(sshd, app_settings, key_credentials(sshd), folder=folder, port=proxy.port)
    destination.deliver(delivery)
    assert proxy.cut_count == 1 and proxy.connections == 2
    assert (folder / "orders.csv").read_bytes() == delivery.path.read_bytes()
    assert remote_files(folder) == ["orders.csv"]


def test_connection_cut_every_time_leaves_no_final_file(
    sshd: SshServer, app_settings: Settings, tmp_path: Path, folder: Path, cutting_proxy: Any
) -> None:
    proxy = cutting_proxy(sshd.port, cut_after=400_000, cuts=10)
    delivery = make_delivery(tmp_path, 2_000_000)
    destination = build(sshd, app_settings, key_credentials(sshd), folder=folder, port=proxy.port)
    with pytest.raises(DeliveryError) as failure:
        destination.deliver(delivery)
    assert failure.value.transient
    assert proxy.cut_count == FAST_RETRY.attempts
    assert "orders.csv" not in remote_files(folder)


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"host": "bad host"}, "destination.settings.host"),
        ({"host_key": "ssh-ed25519 not-base64!"}, "destination.settings.host_key"),
        ({"host_key": "ssh-dss AAAAB3NzaC1kc3M="}, "destination.settings.host_key"),
        ({"port": 70000}, "destination.settings.port"),
        ({"folder": "up\nloads"}, "destination.settings.folder"),
        ({"hots": "typo"}, "destination.settings.hots"),
    ],
)
def test_validation_names_the_field(
    sshd: SshServer, app_settings: Settings, settings: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidRequest) as failure:
        SftpDestination.validate(
            {**settings_for(sshd), **settings}, key_credentials(sshd), app_settings
        )
    assert field in [e["field"] for e in failure.value.errors]


def test_validation_of_credentials(sshd: SshServer, app_settings: Settings) -> None:
    with pytest.raises(InvalidRequest) as failure:
        SftpDestination.validate(settings_for(sshd), {"username": SFTP_USER}, app_settings)
    assert failure.value.errors == [
        {
            "field": "destination.credentials.password",
            "message": "password or private_key is required",
        }
    ]
    with pytest.raises(InvalidRequest) as failure:
        SftpDestination.validate(
            settings_for(sshd),
            {"username": SFTP_USER, "private_key": "-----BEGIN OPENSSH PRIVATE KEY-----\nnope"},
            app_settings,
        )
    assert failure.value.errors[0]["field"] == "destination.credentials.private_key"
    assert "nope" not in str(failure.value.errors)
    # An environment reference is accepted at apply time; it is resolved when delivering.
    SftpDestination.validate(
        settings_for(sshd),
        {"username": SFTP_USER, "password": {"env": "SFTP_PASSWORD"}},
        app_settings,
    )


def test_host_key_accepts_known_hosts_line(sshd: SshServer, app_settings: Settings) -> None:
    line = f"[127.0.0.1]:{sshd.port} {sshd.host_key}"
    normalised = SftpDestination.validate(
        settings_for(sshd, host_key=line), key_credentials(sshd), app_settings
    )
    assert normalised["host_key"] == " ".join(sshd.host_key.split()[:2])
