"""Every destination kind end to end: a configuration per kind, applied from YAML with its
credentials as environment-variable references, run through the API on the shared stack
(tests/exports/conftest.py: uvicorn, dagster-webserver, dagster-daemon), delivered by the
Dagster run worker to a real server on loopback (tests/destinations/servers.py), and the copy
on the server is byte-identical to the file the API downloads.

The servers' credentials exist only once the servers are up, so the module restarts Dagster
with them in its environment (and stops it again at the end: the stack is shared with
test_end_to_end.py, whose first test needs Dagster down). google_sheets is schedule-only:
the API answers 422 for it.
"""

from __future__ import annotations

import email
import email.policy
import hashlib
import json
import re
import secrets
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization

from tests.destinations.servers import (
    S3_BUCKET,
    SFTP_USER,
    SMTP_USER,
    WRITABLE_FOLDER,
    FtpServer,
    GoogleServer,
    S3Server,
    SmtpServer,
    SshServer,
)
from tests.exports.conftest import Stack, apply

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("exports-end-to-end")]

CLIENT_EMAIL = "quarry-exports@quarry-test.iam.gserviceaccount.com"
FTPS_FOLDER = "e2e"
S3_PREFIX = "e2e/orders"
RECIPIENT = "ops@example.com"


@pytest.fixture(scope="module")
def delivering(
    stack: Stack,
    sshd: SshServer,
    ftps_server: FtpServer,
    s3_server: S3Server,
    smtp_starttls: SmtpServer,
    google_key: Any,
) -> Iterator[Stack]:
    """The stack with Dagster (re)started so its run workers hold every server's
    credentials, as an operator would set them; Dagster is stopped again afterwards."""
    pem = google_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    service_account = {
        "type": "service_account",
        "project_id": "quarry-test",
        "private_key_id": secrets.token_hex(20),
        "private_key": pem,
        "client_email": CLIENT_EMAIL,
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    (ftps_server.root / FTPS_FOLDER).mkdir(exist_ok=True)
    variables = {
        "E2E_SMTP_PASSWORD": smtp_starttls.password,
        "E2E_FTPS_PASSWORD": ftps_server.password,
        "E2E_SFTP_PASSWORD": sshd.password,
        "E2E_S3_ACCESS_KEY_ID": s3_server.writer["access_key_id"],
        "E2E_S3_SECRET_ACCESS_KEY": s3_server.writer["secret_access_key"],
        "E2E_GOOGLE_SERVICE_ACCOUNT": json.dumps(service_account),
    }
    stack.stop_dagster()
    stack.services.env.update(variables)
    try:
        stack.start_dagster()
        yield stack
    finally:
        stack.stop_dagster()
        for name in variables:
            stack.services.env.pop(name, None)


def export(name: str, stack: Stack, destination: dict[str, Any]) -> dict[str, Any]:
    """One small export: the paid orders of one store, a few columns."""
    return {
        "name": name,
        "entity_type": "orders",
        "format": "csv",
        "columns": ["order_name", "created_at", "financial_status", "total_price"],
        "filters": {"financial_status": "paid"},
        "stores": [stack.store_ids[0]],
        "file_name": "{name}-{job_id}",
        "destination": destination,
    }


def run_and_download(stack: Stack, document: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """Apply the one configuration, run it through the API, wait for `completed`, and
    download its file; (the job, the downloaded bytes)."""
    apply(stack, {"exports": [document]})
    job_id = stack.run(document["name"])
    job = stack.finished(job_id)
    assert job["status"] == "completed", job
    response = stack.download(job_id)
    assert response.status_code == 200, response.text
    assert response.content.count(b"\r\n") > 10  # a header and some rows, not an empty file
    return job, response.content


def test_email_attachment(
    delivering: Stack, smtp_starttls: SmtpServer, tls: dict[str, str]
) -> None:
    document = export("E2E email", delivering, {
        "kind": "email",
        "settings": {
            "host": "127.0.0.1", "port": smtp_starttls.port, "security": "starttls",
            "ca_certificate": tls["ca_pem"], "from_address": "quarry@example.com",
            "to": [RECIPIENT], "subject": "E2E {file_name}",
        },
        "credentials": {"username": SMTP_USER, "password": {"env": "E2E_SMTP_PASSWORD"}},
    })  # fmt: skip
    job, downloaded = run_and_download(delivering, document)
    messages = [
        email.message_from_bytes(m.original_content, policy=email.policy.default)  # type: ignore[attr-defined]
        for m in smtp_starttls.messages
    ]
    mine = [m for m in messages if m["Subject"] == f"E2E {job['file_name']}"]
    assert len(mine) == 1, [m["Subject"] for m in messages]
    (attachment,) = mine[0].iter_attachments()
    assert attachment.get_filename() == job["file_name"]
    assert attachment.get_payload(decode=True) == downloaded


def test_email_link_downloads_without_a_key(
    delivering: Stack, smtp_starttls: SmtpServer, tls: dict[str, str]
) -> None:
    """Above the attachment size the mail carries a signed link; following it as the
    recipient would (no API key) gives the same bytes as the keyed download."""
    document = export("E2E email link", delivering, {
        "kind": "email",
        "settings": {
            "host": "127.0.0.1", "port": smtp_starttls.port, "security": "starttls",
            "ca_certificate": tls["ca_pem"], "from_address": "quarry@example.com",
            "to": [RECIPIENT], "subject": "E2E link {file_name}", "attachment_max_bytes": 0,
        },
        "credentials": {"username": SMTP_USER, "password": {"env": "E2E_SMTP_PASSWORD"}},
    })  # fmt: skip
    job, downloaded = run_and_download(delivering, document)
    messages = [
        email.message_from_bytes(m.original_content, policy=email.policy.default)  # type: ignore[attr-defined]
        for m in smtp_starttls.messages
    ]
    (mine,) = [m for m in messages if m["Subject"] == f"E2E link {job['file_name']}"]
    assert not list(mine.iter_attachments())
    text = mine.get_body(preferencelist=("plain",)).get_content()  # type: ignore[union-attr]
    match = re.search(r"(http://127\.0\.0\.1:\d+/v1/downloads/\S+)", text)
    assert match, text
    followed = httpx.get(match.group(1), timeout=30)
    assert followed.status_code == 200, followed.text
    assert followed.content == downloaded
    assert job["file_name"] in followed.headers["content-disposition"]
    # The link is the authority: altered, it names nothing.
    forged = httpx.get(match.group(1)[:-2] + "xx", timeout=30)
    assert forged.status_code == 404
    assert forged.headers["content-type"] == "application/problem+json"


def test_ftps_file(delivering: Stack, ftps_server: FtpServer, tls: dict[str, str]) -> None:
    document = export("E2E ftps", delivering, {
        "kind": "ftps",
        "settings": {
            "host": "127.0.0.1", "port": ftps_server.port, "folder": f"/{FTPS_FOLDER}",
            "ca_certificate": tls["ca_pem"],
        },
        "credentials": {"username": "writer", "password": {"env": "E2E_FTPS_PASSWORD"}},
    })  # fmt: skip
    job, downloaded = run_and_download(delivering, document)
    folder = ftps_server.root / FTPS_FOLDER
    assert (folder / job["file_name"]).read_bytes() == downloaded
    assert not [p.name for p in folder.iterdir() if p.name.endswith(".part")]


def test_sftp_file(delivering: Stack, sshd: SshServer) -> None:
    document = export("E2E sftp", delivering, {
        "kind": "sftp",
        "settings": {
            "host": "127.0.0.1", "port": sshd.port, "folder": str(sshd.uploads),
            "host_key": sshd.host_key,
        },
        "credentials": {"username": SFTP_USER, "password": {"env": "E2E_SFTP_PASSWORD"}},
    })  # fmt: skip
    job, downloaded = run_and_download(delivering, document)
    assert (sshd.uploads / job["file_name"]).read_bytes() == downloaded


def test_s3_object(delivering: Stack, s3_server: S3Server) -> None:
    document = export("E2E s3", delivering, {
        "kind": "s3",
        "settings": {
            "bucket": S3_BUCKET, "prefix": S3_PREFIX, "endpoint_url": s3_server.endpoint_url,
            "addressing_style": "path",
        },
        "credentials": {
            "access_key_id": {"env": "E2E_S3_ACCESS_KEY_ID"},
            "secret_access_key": {"env": "E2E_S3_SECRET_ACCESS_KEY"},
        },
    })  # fmt: skip
    job, downloaded = run_and_download(delivering, document)
    client = s3_server.admin_client()
    stored = client.get_object(Bucket=S3_BUCKET, Key=f"{S3_PREFIX}/{job['file_name']}")  # type: ignore[attr-defined]
    assert stored["Body"].read() == downloaded


def test_google_drive_file(delivering: Stack, google: GoogleServer) -> None:
    document = export("E2E drive", delivering, {
        "kind": "google_drive",
        "settings": {
            "folder_id": WRITABLE_FOLDER, "api_base_url": google.base_url,
            "token_uri": google.token_uri,
        },
        "credentials": {"service_account": {"env": "E2E_GOOGLE_SERVICE_ACCOUNT"}},
    })  # fmt: skip
    job, downloaded = run_and_download(delivering, document)
    files = list(google.state.files.values())  # type: ignore[attr-defined]
    # The file, then its manifest beside it (docs/exports.md, "Manifests").
    assert [(f.name, f.parents) for f in files] == [
        (job["file_name"], [WRITABLE_FOLDER]),
        (f"{job['file_name']}.manifest.json", [WRITABLE_FOLDER]),
    ]
    assert files[0].content == downloaded
    assert json.loads(files[1].content)["file"]["sha256"] == hashlib.sha256(downloaded).hexdigest()


def test_google_sheets_is_refused_by_the_api(delivering: Stack) -> None:
    document = export("E2E sheet", delivering, {
        "kind": "google_sheets",
        "settings": {
            "spreadsheet_id": "spreadsheet-e2e", "api_base_url": "http://127.0.0.1:9",
            "token_uri": "http://127.0.0.1:9/token",
        },
        "credentials": {"service_account": {"env": "E2E_GOOGLE_SERVICE_ACCOUNT"}},
    })  # fmt: skip
    document["schedule"] = {"cron": "0 6 * * *", "timezone": "UTC"}
    apply(delivering, {"exports": [document]})
    config_id = delivering.config_id("E2E sheet")
    response = delivering.request("POST", f"/v1/exports/{config_id}/run")
    assert response.status_code == 422, response.text
    assert "live sheet sync" in response.text and "only on its schedule" in response.text


def run_bulk(stack: Stack, document: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """Run an already applied configuration through the API; (the job, its bytes)."""
    job = stack.finished(stack.run(document["name"]))
    assert job["status"] == "completed", job
    response = stack.download(job["job_id"])
    assert response.status_code == 200, response.text
    return job, response.content


def test_s3_parquet_object_with_its_media_type(delivering: Stack, s3_server: S3Server) -> None:
    document = export("E2E s3 parquet", delivering, {
        "kind": "s3",
        "settings": {
            "bucket": S3_BUCKET, "prefix": S3_PREFIX, "endpoint_url": s3_server.endpoint_url,
            "addressing_style": "path",
        },
        "credentials": {
            "access_key_id": {"env": "E2E_S3_ACCESS_KEY_ID"},
            "secret_access_key": {"env": "E2E_S3_SECRET_ACCESS_KEY"},
        },
    }) | {"format": "parquet"}  # fmt: skip
    apply(delivering, {"exports": [document]})
    job, downloaded = run_bulk(delivering, document)
    assert downloaded[:4] == b"PAR1" and job["file_name"].endswith(".parquet")
    client = s3_server.admin_client()
    stored = client.get_object(Bucket=S3_BUCKET, Key=f"{S3_PREFIX}/{job['file_name']}")  # type: ignore[attr-defined]
    assert stored["Body"].read() == downloaded
    assert stored["ContentType"] == "application/vnd.apache.parquet"
    # The manifest is delivered beside the file.
    beside = client.get_object(  # type: ignore[attr-defined]
        Bucket=S3_BUCKET, Key=f"{S3_PREFIX}/{job['file_name']}.manifest.json"
    )
    manifest = json.loads(beside["Body"].read())
    assert manifest["file"]["sha256"] == hashlib.sha256(downloaded).hexdigest()


def test_sftp_changed_rows_in_json_lines(delivering: Stack, sshd: SshServer) -> None:
    document = export("E2E sftp changes", delivering, {
        "kind": "sftp",
        "settings": {
            "host": "127.0.0.1", "port": sshd.port, "folder": str(sshd.uploads),
            "host_key": sshd.host_key,
        },
        "credentials": {"username": SFTP_USER, "password": {"env": "E2E_SFTP_PASSWORD"}},
    }) | {"format": "jsonl", "rows": "changed"}  # fmt: skip
    apply(delivering, {"exports": [document]})
    first, downloaded = run_bulk(delivering, document)
    assert (sshd.uploads / first["file_name"]).read_bytes() == downloaded
    records = [json.loads(line) for line in downloaded.splitlines()]
    assert records and {r["_change"] for r in records} == {"insert"}
    assert all(isinstance(r["total_price"], str) for r in records)
    # No sync in between: the next delivery is an empty file, and its manifest says so.
    second, downloaded = run_bulk(delivering, document)
    assert downloaded == b"" and (sshd.uploads / second["file_name"]).read_bytes() == b""
    manifest = delivering.request("GET", f"/v1/export-jobs/{second['job_id']}/manifest").json()
    beside = sshd.uploads / f"{second['file_name']}.manifest.json"
    assert json.loads(beside.read_text()) == manifest
    assert manifest["row_count"] == 0 and manifest["rows"] == "changed"
    assert manifest["stores"][0]["since"] == manifest["stores"][0]["snapshot"]
    assert manifest["parts"][0]["changes"] == {"insert": 0, "update": 0, "delete": 0}
