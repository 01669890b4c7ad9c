"""No credential, nor anything made from one (access tokens, upload session addresses),
reaches a log record, stdout/stderr, a receipt or a failure reason, with every logger at
DEBUG (paramiko, botocore, urllib3, httpx, ftplib's and smtplib's own output included)."""

from __future__ import annotations

import base64
import dataclasses
import logging
from pathlib import Path
from typing import Any

import pytest

from destinations.base import BaseDestination, Delivery, DeliveryError
from destinations.email import EmailDestination
from destinations.ftp import FtpsDestination
from destinations.gdrive import GoogleDriveDestination
from destinations.gsheets import GoogleSheetsDestination
from destinations.s3 import S3Destination
from destinations.sftp import SftpDestination
from quarry.settings import Settings
from tests.destinations.conftest import (
    S3_BUCKET,
    SFTP_USER,
    WRITABLE_FOLDER,
    FtpServer,
    GoogleServer,
    S3Server,
    SmtpServer,
    SshServer,
    build_destination,
    make_delivery,
)

# Loggers of the test servers themselves: they see what a real server would, and are not
# part of Quarry. Plain secrets must not appear there either; encoded forms may.
SERVER_LOGGERS = ("mail.log", "pyftpdlib")


def _pem_lines(pem: str) -> list[str]:
    return [line for line in pem.splitlines() if line and "-----" not in line]


class Outcomes:
    def __init__(self) -> None:
        self.texts: list[str] = []
        self.delivered = 0
        self.failed = 0

    def run(
        self,
        cls: type[BaseDestination],
        settings: dict[str, Any],
        credentials: dict[str, Any],
        app_settings: Settings,
        delivery: Delivery,
    ) -> None:
        destination = build_destination(cls, settings, credentials, app_settings)
        try:
            receipt = destination.deliver(delivery)
        except DeliveryError as exc:
            self.failed += 1
            self.texts += [str(exc), repr(exc), exc.reason]
        else:
            self.delivered += 1
            self.texts += [repr(receipt), str(dataclasses.asdict(receipt))]


def test_no_secret_in_logs_reasons_or_receipts(
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    app_settings: Settings,
    tmp_path: Path,
    tls: dict[str, str],
    sshd: SshServer,
    ftps_server: FtpServer,
    s3_server: S3Server,
    smtp_starttls: SmtpServer,
    google: GoogleServer,
    cutting_proxy: Any,
) -> None:
    caplog.set_level(logging.DEBUG)
    outcomes = Outcomes()
    secrets: list[str] = []

    def delivery() -> Delivery:
        return make_delivery(tmp_path / "files", 600_000)

    # SFTP: key and password logins, a refused password, a cut connection (retries log).
    folder = sshd.uploads
    sftp = {
        "host": "127.0.0.1",
        "port": sshd.port,
        "folder": str(folder),
        "host_key": sshd.host_key,
    }
    wrong_password = "Wrong-sftp-password-42"
    secrets += [sshd.password, wrong_password, *_pem_lines(sshd.client_key)]
    proxy = cutting_proxy(sshd.port, cut_after=300_000, cuts=1)
    for port, credentials in [
        (sshd.port, {"username": SFTP_USER, "private_key": sshd.client_key}),
        (proxy.port, {"username": SFTP_USER, "password": sshd.password}),
        (sshd.port, {"username": SFTP_USER, "password": wrong_password}),
    ]:
        outcomes.run(SftpDestination, {**sftp, "port": port}, credentials, app_settings, delivery())

    # FTPS: a delivery and a refused login.
    (ftps_server.root / "secrets").mkdir(exist_ok=True)
    ftps = {
        "host": "127.0.0.1",
        "port": ftps_server.port,
        "folder": "/secrets",
        "ca_certificate": tls["ca_pem"],
    }
    wrong_ftp = "Wrong-ftp-password-42"
    secrets += [ftps_server.password, wrong_ftp]
    outcomes.run(FtpsDestination, ftps, ftps_server.writer(), app_settings, delivery())
    outcomes.run(
        FtpsDestination,
        ftps,
        {"username": "writer", "password": wrong_ftp},
        app_settings,
        delivery(),
    )

    # S3: a delivery, and a refused one that carries a session token (botocore logs
    # signed headers at DEBUG).
    s3 = {"bucket": S3_BUCKET, "prefix": "secrets", "endpoint_url": s3_server.endpoint_url}
    session_token = "FwoGZXIvYXdzEXAMPLESESSIONTOKEN0123456789abcdef"
    secrets += [s3_server.writer["secret_access_key"], session_token]
    outcomes.run(S3Destination, s3, s3_server.writer, app_settings, delivery())
    outcomes.run(
        S3Destination,
        s3,
        {**s3_server.writer, "session_token": session_token},
        app_settings,
        delivery(),
    )

    # SMTP: a delivery and a refused login.
    smtp = {
        "host": "127.0.0.1",
        "port": smtp_starttls.port,
        "ca_certificate": tls["ca_pem"],
        "from_address": "exports@quarry.example.com",
        "to": ["secrets@example.com"],
    }
    wrong_smtp = "Wrong-smtp-password-42"
    secrets += [smtp_starttls.password, wrong_smtp]
    outcomes.run(EmailDestination, smtp, smtp_starttls.credentials(), app_settings, delivery())
    outcomes.run(
        EmailDestination,
        smtp,
        {"username": "mailer", "password": wrong_smtp},
        app_settings,
        delivery(),
    )

    # Google: Drive with a connection cut mid-chunk (resumed), Sheets.
    account = {"service_account": google.service_account}
    secrets += _pem_lines(google.service_account["private_key"])
    secrets.append(google.service_account["private_key_id"])
    drive = {
        "folder_id": WRITABLE_FOLDER,
        "api_base_url": google.base_url,
        "token_uri": google.token_uri,
        "chunk_size_kib": 256,
    }
    google.state.faults["cut chunk"] = 1  # type: ignore[attr-defined]
    outcomes.run(GoogleDriveDestination, drive, account, app_settings, delivery())
    google.state.new_spreadsheet("1SecretsSpreadsheet0001", {"Sheet1": []})  # type: ignore[attr-defined]
    sheet_file = make_delivery(tmp_path / "csv", 10)
    sheet_file.path.write_text("id,total\n1,2\n")
    sheets = {
        "spreadsheet_id": "1SecretsSpreadsheet0001",
        "api_base_url": google.base_url,
        "token_uri": google.token_uri,
    }
    outcomes.run(GoogleSheetsDestination, sheets, account, app_settings, sheet_file)
    secrets += list(google.state.tokens)  # type: ignore[attr-defined]
    secrets += list(google.state.sessions)  # upload_id: the session address's capability  # type: ignore[attr-defined]

    assert outcomes.delivered == 7 and outcomes.failed == 4, "\n".join(outcomes.texts)
    records = caplog.records
    # The libraries did log at DEBUG, so the check below means something.
    for library in ("paramiko", "botocore", "httpcore"):
        assert any(r.name.startswith(library) and r.levelno == logging.DEBUG for r in records), (
            library
        )
    captured = capfd.readouterr()
    everything = "\n".join(
        [
            *(r.getMessage() for r in records),
            caplog.text,
            captured.out,
            captured.err,
            *outcomes.texts,
        ]
    )
    for secret in secrets:
        assert len(secret) >= 8
        assert secret not in everything, f"a secret ({secret[:3]}...) was logged or reported"
    client_side = "\n".join(
        r.getMessage() for r in records if not r.name.startswith(SERVER_LOGGERS)
    )
    for secret in secrets:
        encoded = base64.b64encode(secret.encode()).decode().rstrip("=")
        assert encoded not in client_side
