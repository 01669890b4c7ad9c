"""S3 against moto's server with IAM authentication on."""

from __future__ import annotations

import base64
import hashlib
from functools import partial
from pathlib import Path
from typing import Any

import botocore.exceptions
import pytest

from destinations import hosts
from destinations.base import Delivery, DeliveryError
from destinations.s3 import S3Destination
from quarry.errors import InvalidRequest
from quarry.settings import Settings
from tests.destinations.conftest import (
    S3_BUCKET,
    S3_OTHER_BUCKET,
    S3Server,
    build_destination,
    free_port,
    make_delivery,
)


def s3_settings(server: S3Server, **extra: Any) -> dict[str, Any]:
    return {
        "bucket": S3_BUCKET,
        "prefix": "exports/daily",
        "endpoint_url": server.endpoint_url,
        "addressing_style": "path",
        "timeout_seconds": 10,
        **extra,
    }


build = partial(build_destination, S3Destination)


def stored(server: S3Server, key: str, bucket: str = S3_BUCKET) -> dict[str, Any] | None:
    client: Any = server.admin_client()
    try:
        head = client.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    except botocore.exceptions.ClientError:
        return None
    body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
    return {**head, "Body": body}


@pytest.fixture
def key_prefix(request: pytest.FixtureRequest) -> str:
    return f"tests/{request.node.name}"


def test_delivers_with_sha256_checksum(
    s3_server: S3Server, app_settings: Settings, delivery: Delivery, key_prefix: str
) -> None:
    destination = build(s3_settings(s3_server, prefix=key_prefix), s3_server.writer, app_settings)
    receipt = destination.deliver(delivery)
    data = delivery.path.read_bytes()
    digest = hashlib.sha256(data)
    assert receipt.location == f"s3://{S3_BUCKET}/{key_prefix}/orders.csv"
    assert receipt.sha256 == digest.hexdigest()
    obj = stored(s3_server, f"{key_prefix}/orders.csv")
    assert obj is not None
    assert obj["Body"] == data
    assert obj["ChecksumSHA256"] == base64.b64encode(digest.digest()).decode()
    assert obj["Metadata"]["sha256"] == digest.hexdigest()
    assert obj["ContentType"] == "text/csv"


def test_multipart_upload_with_encryption(
    s3_server: S3Server, app_settings: Settings, tmp_path: Path, key_prefix: str
) -> None:
    delivery = make_delivery(tmp_path, 11 * 1024 * 1024)
    settings = s3_settings(
        s3_server, prefix=key_prefix, multipart_chunk_mb=5, server_side_encryption="AES256"
    )
    receipt = build(settings, s3_server.writer, app_settings).deliver(delivery)
    obj = stored(s3_server, f"{key_prefix}/orders.csv")
    assert obj is not None
    assert obj["Body"] == delivery.path.read_bytes()
    assert obj["ETag"].strip('"').endswith("-3")  # three parts
    assert obj["ServerSideEncryption"] == "AES256"
    assert receipt.details["server_side_encryption"] == "AES256"


def test_with_the_guard_on_connections_go_to_the_checked_address(
    s3_server: S3Server,
    app_settings: Settings,
    strict_settings: Settings,
    tmp_path: Path,
    key_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The guard's own connections (destinations.guarded_http) carry a whole multipart
    upload: loopback is counted public here, so the guard is on and lets moto through."""
    monkeypatch.setattr(hosts, "_is_forbidden", lambda address: False)
    connected: list[str] = []
    real_connect = hosts.connect

    def counting(host: str, port: int, **kwargs: Any) -> Any:
        connected.append(host)
        return real_connect(host, port, **kwargs)

    monkeypatch.setattr(hosts, "connect", counting)
    delivery = make_delivery(tmp_path, 11 * 1024 * 1024)
    settings = s3_settings(s3_server, prefix=key_prefix, multipart_chunk_mb=5)
    normalised = S3Destination.validate(settings, s3_server.writer, app_settings)
    destination = S3Destination(normalised, s3_server.writer, strict_settings)
    destination.deliver(delivery)
    obj = stored(s3_server, f"{key_prefix}/orders.csv")
    assert obj is not None and obj["Body"] == delivery.path.read_bytes()
    assert connected and set(connected) == {"127.0.0.1"}


def test_wrong_secret_is_rejected(
    s3_server: S3Server, app_settings: Settings, delivery: Delivery, key_prefix: str
) -> None:
    credentials = {**s3_server.writer, "secret_access_key": "wrong-secret-key-value"}
    with pytest.raises(DeliveryError) as failure:
        build(s3_settings(s3_server, prefix=key_prefix), credentials, app_settings).deliver(
            delivery
        )
    assert "credentials were rejected (SignatureDoesNotMatch)" in failure.value.reason
    assert f"bucket {S3_BUCKET}" in failure.value.reason
    assert not failure.value.transient
    assert stored(s3_server, f"{key_prefix}/orders.csv") is None


def test_unknown_access_key_is_rejected(
    s3_server: S3Server, app_settings: Settings, delivery: Delivery, key_prefix: str
) -> None:
    credentials = {"access_key_id": "AKIAUNKNOWNKEY000000", "secret_access_key": "whatever-secret"}
    with pytest.raises(DeliveryError) as failure:
        build(s3_settings(s3_server, prefix=key_prefix), credentials, app_settings).deliver(
            delivery
        )
    assert "credentials were rejected (InvalidAccessKeyId)" in failure.value.reason


def test_permission_denied(
    s3_server: S3Server, app_settings: Settings, delivery: Delivery, key_prefix: str
) -> None:
    settings = s3_settings(s3_server, bucket=S3_OTHER_BUCKET, prefix=key_prefix)
    with pytest.raises(DeliveryError) as failure:
        build(settings, s3_server.writer, app_settings).deliver(delivery)
    assert (
        f"access denied: the credentials may not write to bucket {S3_OTHER_BUCKET}"
        in failure.value.reason
    )
    assert stored(s3_server, f"{key_prefix}/orders.csv", bucket=S3_OTHER_BUCKET) is None


def test_missing_bucket(s3_server: S3Server, app_settings: Settings, delivery: Delivery) -> None:
    settings = s3_settings(s3_server, bucket="no-such-bucket")
    with pytest.raises(DeliveryError) as failure:
        build(settings, s3_server.admin, app_settings).deliver(delivery)
    assert "bucket no-such-bucket does not exist" in failure.value.reason


def test_server_down(s3_server: S3Server, app_settings: Settings, delivery: Delivery) -> None:
    settings = s3_settings(s3_server, endpoint_url=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(DeliveryError) as failure:
        build(settings, s3_server.writer, app_settings).deliver(delivery)
    assert "cannot connect" in failure.value.reason
    assert failure.value.transient


def test_connection_cut_mid_upload_is_retried(
    s3_server: S3Server, app_settings: Settings, tmp_path: Path, key_prefix: str, cutting_proxy: Any
) -> None:
    proxy = cutting_proxy(s3_server.port, cut_after=1_000_000, cuts=1)
    delivery = make_delivery(tmp_path, 3_000_000)
    settings = s3_settings(
        s3_server, prefix=key_prefix, endpoint_url=f"http://127.0.0.1:{proxy.port}"
    )
    build(settings, s3_server.writer, app_settings).deliver(delivery)
    assert proxy.cut_count == 1
    obj = stored(s3_server, f"{key_prefix}/orders.csv")
    assert obj is not None and obj["Body"] == delivery.path.read_bytes()


def test_connection_cut_every_time_leaves_no_object(
    s3_server: S3Server, app_settings: Settings, tmp_path: Path, key_prefix: str, cutting_proxy: Any
) -> None:
    proxy = cutting_proxy(s3_server.port, cut_after=1_000_000, cuts=100)
    delivery = make_delivery(tmp_path, 3_000_000)
    settings = s3_settings(
        s3_server, prefix=key_prefix, endpoint_url=f"http://127.0.0.1:{proxy.port}"
    )
    with pytest.raises(DeliveryError) as failure:
        build(settings, s3_server.writer, app_settings).deliver(delivery)
    assert failure.value.transient
    assert stored(s3_server, f"{key_prefix}/orders.csv") is None


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"bucket": "Bad_Bucket"}, "destination.settings.bucket"),
        ({"prefix": "/absolute"}, "destination.settings.prefix"),
        ({"endpoint_url": "ftp://example.com"}, "destination.settings.endpoint_url"),
        ({"server_side_encryption": "rot13"}, "destination.settings.server_side_encryption"),
        ({"kms_key_id": "key"}, "destination.settings.kms_key_id"),
        ({"multipart_chunk_mb": 1}, "destination.settings.multipart_chunk_mb"),
    ],
)
def test_validation_names_the_field(
    s3_server: S3Server, app_settings: Settings, settings: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidRequest) as failure:
        S3Destination.validate(
            {**s3_settings(s3_server), **settings}, s3_server.writer, app_settings
        )
    assert field in [e["field"] for e in failure.value.errors]


def test_credentials_are_required(s3_server: S3Server, app_settings: Settings) -> None:
    with pytest.raises(InvalidRequest) as failure:
        S3Destination.validate(s3_settings(s3_server), {}, app_settings)
    assert {e["field"] for e in failure.value.errors} == {
        "destination.credentials.access_key_id",
        "destination.credentials.secret_access_key",
    }


def test_plain_http_endpoint_needs_private_hosts_allowed(strict_settings: Settings) -> None:
    settings = {"bucket": S3_BUCKET, "endpoint_url": "http://s3.example.com"}
    credentials = {"access_key_id": "AKIAEXAMPLE", "secret_access_key": "secret-value"}
    with pytest.raises(InvalidRequest) as failure:
        S3Destination.validate(settings, credentials, strict_settings)
    assert failure.value.errors[0]["field"] == "destination.settings.endpoint_url"
