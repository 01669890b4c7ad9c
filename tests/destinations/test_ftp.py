"""FTP and FTPS against real pyftpdlib servers (TLS on control and data connections)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from destinations.base import Delivery, DeliveryError
from destinations.ftp import FtpDestination, FtpsDestination
from quarry.errors import InvalidRequest
from quarry.settings import Settings
from tests.destinations.conftest import (
    FAST_RETRY,
    FtpServer,
    build_destination,
    free_port,
    make_delivery,
)


@pytest.fixture
def folder_name(request: pytest.FixtureRequest) -> str:
    return request.node.name.replace("[", "_").replace("]", "_")


def ftps_settings(
    server: FtpServer, folder: str, tls: dict[str, str], **extra: Any
) -> dict[str, Any]:
    return {
        "host": "127.0.0.1",
        "port": server.port,
        "folder": f"/{folder}",
        "ca_certificate": tls["ca_pem"],
        "timeout_seconds": 5,
        **extra,
    }


def files_in(server: FtpServer, folder: str) -> list[str]:
    path = server.root / folder
    return sorted(p.name for p in path.iterdir()) if path.exists() else []


@pytest.fixture
def ftps_folder(ftps_server: FtpServer, folder_name: str) -> str:
    (ftps_server.root / folder_name).mkdir()
    ftps_server.faults["cuts"] = 0
    return folder_name


@pytest.fixture
def destination(
    ftps_server: FtpServer, tls: dict[str, str], app_settings: Settings, ftps_folder: str
) -> FtpDestination:
    """The ftps kind delivering into the test's folder as the user who may write there."""
    return build_destination(
        FtpsDestination,
        ftps_settings(ftps_server, ftps_folder, tls),
        ftps_server.writer(),
        app_settings,
    )


def test_ftps_delivers_byte_identical_file(
    ftps_server: FtpServer,
    destination: FtpDestination,
    delivery: Delivery,
    ftps_folder: str,
) -> None:
    receipt = destination.deliver(delivery)
    stored = ftps_server.root / ftps_folder / "orders.csv"
    assert stored.read_bytes() == delivery.path.read_bytes()
    assert files_in(ftps_server, ftps_folder) == ["orders.csv"]
    assert receipt.location == f"ftps://127.0.0.1:{ftps_server.port}/{ftps_folder}/orders.csv"
    assert receipt.sha256 == hashlib.sha256(delivery.path.read_bytes()).hexdigest()


def test_ftp_kind_defaults_to_tls(
    ftps_server: FtpServer,
    tls: dict[str, str],
    app_settings: Settings,
    delivery: Delivery,
    ftps_folder: str,
) -> None:
    settings = ftps_settings(ftps_server, ftps_folder, tls)
    assert (
        FtpDestination.validate(settings, ftps_server.writer(), app_settings)["security"] == "tls"
    )
    build_destination(FtpDestination, settings, ftps_server.writer(), app_settings).deliver(
        delivery
    )
    assert (
        ftps_server.root / ftps_folder / "orders.csv"
    ).read_bytes() == delivery.path.read_bytes()


def test_retry_of_same_job_overwrites_its_file(
    ftps_server: FtpServer,
    destination: FtpDestination,
    tmp_path: Path,
    ftps_folder: str,
) -> None:
    destination.deliver(make_delivery(tmp_path / "a", 10_000, job_id="job-7"))
    second = make_delivery(tmp_path / "b", 20_000, job_id="job-7")
    destination.deliver(second)
    assert (ftps_server.root / ftps_folder / "orders.csv").read_bytes() == second.path.read_bytes()
    assert files_in(ftps_server, ftps_folder) == ["orders.csv"]


def test_plain_ftp_only_when_asked(
    ftp_server: FtpServer, app_settings: Settings, delivery: Delivery, folder_name: str
) -> None:
    (ftp_server.root / folder_name).mkdir()
    settings = {
        "host": "127.0.0.1",
        "port": ftp_server.port,
        "folder": f"/{folder_name}",
        "timeout_seconds": 5,
    }
    # Without `security: none` the ftp kind insists on TLS, which this server lacks.
    with pytest.raises(DeliveryError) as failure:
        build_destination(FtpDestination, settings, ftp_server.writer(), app_settings).deliver(
            delivery
        )
    assert "does not offer FTPS" in failure.value.reason
    assert files_in(ftp_server, folder_name) == []

    plain = build_destination(
        FtpDestination, {**settings, "security": "none"}, ftp_server.writer(), app_settings
    )
    receipt = plain.deliver(delivery)
    assert (ftp_server.root / folder_name / "orders.csv").read_bytes() == delivery.path.read_bytes()
    assert receipt.location.startswith("ftp://")


def test_ftps_kind_refuses_plain(ftp_server: FtpServer, app_settings: Settings) -> None:
    settings = {"host": "127.0.0.1", "port": ftp_server.port, "security": "none"}
    with pytest.raises(InvalidRequest) as failure:
        FtpsDestination.validate(settings, ftp_server.writer(), app_settings)
    assert failure.value.errors[0]["field"] == "destination.settings.security"


def test_untrusted_certificate(
    ftps_server: FtpServer,
    tls: dict[str, str],
    app_settings: Settings,
    delivery: Delivery,
    ftps_folder: str,
) -> None:
    settings = ftps_settings(ftps_server, ftps_folder, tls)
    del settings["ca_certificate"]
    with pytest.raises(DeliveryError) as failure:
        build_destination(FtpsDestination, settings, ftps_server.writer(), app_settings).deliver(
            delivery
        )
    assert "certificate is not trusted" in failure.value.reason
    assert not failure.value.transient
    assert files_in(ftps_server, ftps_folder) == []


def test_bad_password(
    ftps_server: FtpServer,
    tls: dict[str, str],
    app_settings: Settings,
    delivery: Delivery,
    ftps_folder: str,
) -> None:
    credentials = {"username": "writer", "password": "wrong-password"}
    with pytest.raises(DeliveryError) as failure:
        build_destination(
            FtpsDestination, ftps_settings(ftps_server, ftps_folder, tls), credentials, app_settings
        ).deliver(delivery)
    assert "login refused" in failure.value.reason
    assert f"ftps://127.0.0.1:{ftps_server.port}" in failure.value.reason
    assert files_in(ftps_server, ftps_folder) == []


def test_permission_denied(
    ftps_server: FtpServer,
    tls: dict[str, str],
    app_settings: Settings,
    delivery: Delivery,
    ftps_folder: str,
) -> None:
    destination = build_destination(
        FtpsDestination,
        ftps_settings(ftps_server, ftps_folder, tls),
        ftps_server.reader(),
        app_settings,
    )
    with pytest.raises(DeliveryError) as failure:
        destination.deliver(delivery)
    assert "refused the write" in failure.value.reason and "550" in failure.value.reason
    assert not failure.value.transient
    assert files_in(ftps_server, ftps_folder) == []


def test_server_down(
    ftps_server: FtpServer, tls: dict[str, str], app_settings: Settings, delivery: Delivery
) -> None:
    settings = ftps_settings(ftps_server, "x", tls, port=free_port())
    with pytest.raises(DeliveryError) as failure:
        build_destination(FtpsDestination, settings, ftps_server.writer(), app_settings).deliver(
            delivery
        )
    assert "connection refused" in failure.value.reason
    assert failure.value.transient


def test_data_connection_cut_mid_upload_is_retried(
    ftps_server: FtpServer,
    destination: FtpDestination,
    tmp_path: Path,
    ftps_folder: str,
) -> None:
    delivery = make_delivery(tmp_path, 3_000_000)
    ftps_server.faults.update(cuts=1, cut_after=500_000)
    destination.deliver(delivery)
    assert ftps_server.faults["cuts"] == 0
    assert (
        ftps_server.root / ftps_folder / "orders.csv"
    ).read_bytes() == delivery.path.read_bytes()
    assert files_in(ftps_server, ftps_folder) == ["orders.csv"]


def test_data_connection_cut_every_time_leaves_no_final_file(
    ftps_server: FtpServer,
    destination: FtpDestination,
    tmp_path: Path,
    ftps_folder: str,
) -> None:
    delivery = make_delivery(tmp_path, 3_000_000)
    ftps_server.faults.update(cuts=FAST_RETRY.attempts, cut_after=500_000)
    with pytest.raises(DeliveryError) as failure:
        destination.deliver(delivery)
    assert failure.value.transient
    assert "orders.csv" not in files_in(ftps_server, ftps_folder)


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"host": "ftp.example.com/path"}, "destination.settings.host"),
        ({"ca_certificate": "not a certificate"}, "destination.settings.ca_certificate"),
        ({"security": "ssl"}, "destination.settings.security"),
        ({"folder": "a\r\nDELE x"}, "destination.settings.folder"),
    ],
)
def test_validation_names_the_field(
    ftps_server: FtpServer,
    tls: dict[str, str],
    app_settings: Settings,
    settings: dict[str, Any],
    field: str,
) -> None:
    with pytest.raises(InvalidRequest) as failure:
        FtpDestination.validate(
            {**ftps_settings(ftps_server, "x", tls), **settings}, ftps_server.writer(), app_settings
        )
    assert field in [e["field"] for e in failure.value.errors]


def test_credentials_are_required(
    ftps_server: FtpServer, tls: dict[str, str], app_settings: Settings
) -> None:
    with pytest.raises(InvalidRequest) as failure:
        FtpDestination.validate(ftps_settings(ftps_server, "x", tls), {}, app_settings)
    assert {e["field"] for e in failure.value.errors} == {
        "destination.credentials.username",
        "destination.credentials.password",
    }
