"""Amazon S3 and S3-compatible delivery with boto3.

`upload_file` sends large files as a multipart upload with a SHA-256 checksum on every part,
which S3 verifies on receipt. An object appears only when its upload completes (a failed
multipart upload is aborted and never visible), so S3's equivalent of "temporary name and
rename" is the upload itself, and a retry of the same job writes the same key again.

Credentials are required: falling back to the worker's own AWS identity would let any
configuration write wherever the service itself may.
"""

from __future__ import annotations

import base64
import re
from typing import Any, ClassVar

import boto3
import botocore.exceptions
from boto3.exceptions import S3UploadFailedError
from boto3.s3.transfer import TransferConfig
from botocore.config import Config

from destinations import hosts
from destinations.base import (
    BaseDestination,
    Delivery,
    DeliveryError,
    Receipt,
    describe_exception,
)
from destinations.fields import FieldReader
from destinations.guarded_http import guard_boto3_client
from quarry.settings import Settings

_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_REGION = re.compile(r"^[a-z0-9-]{1,32}$")
_STORAGE_CLASSES = (
    "STANDARD",
    "STANDARD_IA",
    "ONEZONE_IA",
    "INTELLIGENT_TIERING",
    "GLACIER_IR",
    "REDUCED_REDUNDANCY",
)
_CREDENTIAL_ERRORS = {
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "InvalidToken",
    "TokenRefreshRequired",
    "InvalidClientTokenId",
}
_TRANSIENT_ERRORS = {
    "SlowDown",
    "RequestTimeout",
    "InternalError",
    "ServiceUnavailable",
    "Throttling",
}
MIB = 1024 * 1024


class S3Destination(BaseDestination):
    kind: ClassVar[str] = "s3"

    @classmethod
    def _read_settings(cls, fields: FieldReader, app_settings: Settings) -> dict[str, Any]:
        bucket = fields.text("bucket", required=True, max_length=63)
        prefix = fields.text("prefix", default="", max_length=900) or ""
        region = fields.text("region", default="us-east-1", max_length=32) or "us-east-1"
        endpoint_url = fields.text("endpoint_url", max_length=2048)
        addressing = fields.choice("addressing_style", ("auto", "path", "virtual"), default="auto")
        encryption = fields.raw("server_side_encryption")
        kms_key_id = fields.text("kms_key_id", max_length=2048)
        storage_class = fields.raw("storage_class")
        chunk_mb = fields.integer("multipart_chunk_mb", default=16, minimum=5, maximum=5120)
        timeout = fields.integer("timeout_seconds", default=60, minimum=1, maximum=600)
        if bucket and not fields.has_error("bucket") and not _BUCKET.match(bucket):
            fields.error(
                "bucket", "must be a valid bucket name (3-63 lowercase letters, digits, '.', '-')"
            )
        if prefix.startswith("/") or ".." in prefix.split("/"):
            fields.error("prefix", "must be a relative key prefix without '..'")
        if not _REGION.match(region):
            fields.error("region", "must be a region name such as eu-west-1")
        fields.check(
            "endpoint_url",
            endpoint_url,
            lambda url: hosts.url_error(url, allow_private=app_settings.allow_private_hosts),
        )
        if encryption is not None and encryption not in ("AES256", "aws:kms"):
            fields.error("server_side_encryption", "must be 'AES256' or 'aws:kms'")
        if kms_key_id and encryption != "aws:kms":
            fields.error("kms_key_id", "is only used with server_side_encryption 'aws:kms'")
        if storage_class is not None and storage_class not in _STORAGE_CLASSES:
            fields.error("storage_class", "must be one of " + ", ".join(_STORAGE_CLASSES))
        fields.credential("access_key_id", required=True)
        fields.credential("secret_access_key", required=True)
        fields.credential("session_token")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        return {
            "bucket": bucket,
            "prefix": prefix,
            "region": region,
            "endpoint_url": endpoint_url,
            "addressing_style": addressing,
            "server_side_encryption": encryption,
            "kms_key_id": kms_key_id,
            "storage_class": storage_class,
            "multipart_chunk_mb": chunk_mb,
            "timeout_seconds": timeout,
        }

    def target(self) -> str:
        where = f"bucket {self.settings['bucket']}"
        if self.settings.get("endpoint_url"):
            where += f" at {self.settings['endpoint_url']}"
        return where

    _s3: Any = None

    def _client(self) -> Any:
        settings = self.settings
        session = boto3.session.Session(
            aws_access_key_id=self._credentials["access_key_id"],
            aws_secret_access_key=self._credentials["secret_access_key"],
            aws_session_token=self._credentials.get("session_token") or None,
            region_name=settings["region"],
        )
        config = Config(
            connect_timeout=settings["timeout_seconds"],
            read_timeout=settings["timeout_seconds"],
            # One attempt per request: our own retries repeat the whole upload with backoff
            # and a reason, instead of botocore retrying silently underneath.
            retries={"total_max_attempts": 1, "mode": "standard"},
            s3={"addressing_style": settings["addressing_style"]},
        )
        client = session.client("s3", endpoint_url=settings.get("endpoint_url"), config=config)
        if not self.allow_private_hosts:
            # Connect to the addresses checked, never to a second resolution of the name.
            guard_boto3_client(client)
        return client

    def _deliver_once(self, delivery: Delivery, size: int, sha256: str) -> Receipt:
        settings = self.settings
        endpoint = settings.get("endpoint_url") or f"https://s3.{settings['region']}.amazonaws.com"
        hosts.check_url(endpoint, allow_private=self.allow_private_hosts)
        key = f"{settings['prefix']}{delivery.file_name}"
        extra: dict[str, Any] = {
            "ChecksumAlgorithm": "SHA256",
            "ContentType": delivery.content_type,
            "Metadata": {"sha256": sha256},
        }
        if settings.get("server_side_encryption"):
            extra["ServerSideEncryption"] = settings["server_side_encryption"]
        if settings.get("kms_key_id"):
            extra["SSEKMSKeyId"] = settings["kms_key_id"]
        if settings.get("storage_class"):
            extra["StorageClass"] = settings["storage_class"]
        chunk = settings["multipart_chunk_mb"] * MIB
        transfer = TransferConfig(
            multipart_threshold=chunk, multipart_chunksize=chunk, max_concurrency=4
        )
        # One client for all attempts: building one loads botocore's service model (slow);
        # its connection pool drops connections that broke.
        if self._s3 is None:
            self._s3 = self._client()
        client = self._s3
        client.upload_file(
            str(delivery.path), settings["bucket"], key, ExtraArgs=extra, Config=transfer
        )
        details = self._verify(client, key, size, sha256)
        return Receipt(
            kind=self.kind,
            location=f"s3://{settings['bucket']}/{key}",
            bytes=size,
            sha256=sha256,
            details=details,
        )

    def _verify(self, client: Any, key: str, size: int, sha256: str) -> dict[str, str]:
        """Check the stored object's size and, for a single-part upload, its SHA-256."""
        try:
            head = client.head_object(
                Bucket=self.settings["bucket"], Key=key, ChecksumMode="ENABLED"
            )
        except botocore.exceptions.ClientError as exc:
            if _error_code(exc) in ("AccessDenied", "403"):
                return {}  # s3:GetObject is optional; the upload itself was checksummed
            raise
        if head.get("ContentLength") != size:
            raise DeliveryError(
                f"the stored object has {head.get('ContentLength')} bytes, expected {size}",
                transient=True,
            )
        stored = head.get("ChecksumSHA256")
        expected = base64.b64encode(bytes.fromhex(sha256)).decode()
        # A multipart object's checksum is a checksum of its parts' checksums (its ETag
        # ends in -N): S3 verified each part on receipt, so only a whole-object one compares.
        etag = str(head.get("ETag", "")).strip('"')
        whole_object = head.get("ChecksumType") == "FULL_OBJECT" or (
            head.get("ChecksumType") is None and "-" not in etag
        )
        if stored and whole_object and "-" not in stored and stored != expected:
            raise DeliveryError(
                "the stored object's SHA-256 differs from the file's", transient=True
            )
        details = {"etag": etag}
        if head.get("VersionId"):
            details["version_id"] = str(head["VersionId"])
        if head.get("ServerSideEncryption"):
            details["server_side_encryption"] = str(head["ServerSideEncryption"])
        return details

    def _failure(self, exc: Exception) -> DeliveryError:
        if isinstance(exc, S3UploadFailedError):
            # s3transfer wraps the ClientError it caught; the code is on the original.
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, Exception):
                return self._failure(cause)
        if isinstance(exc, botocore.exceptions.ClientError):
            code = _error_code(exc)
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
            message = exc.response.get("Error", {}).get("Message", "")
            if code in _CREDENTIAL_ERRORS:
                return DeliveryError(f"the credentials were rejected ({code})")
            if code == "AccessDenied":
                return DeliveryError(
                    f"access denied: the credentials may not write to bucket "
                    f"{self.settings['bucket']} ({message or code})"
                )
            if code == "NoSuchBucket":
                return DeliveryError(f"bucket {self.settings['bucket']} does not exist")
            if code in _TRANSIENT_ERRORS or status >= 500:
                return DeliveryError(f"server error {code}: {message}", transient=True)
            return DeliveryError(f"request refused ({code}: {message})")
        if isinstance(exc, botocore.exceptions.HTTPClientError) and isinstance(
            exc.kwargs.get("error"), hosts.HostRefused
        ):
            return DeliveryError(exc.kwargs["error"].reason)
        if isinstance(exc, botocore.exceptions.EndpointConnectionError):
            return DeliveryError(
                "cannot connect to the endpoint (is it reachable?)", transient=True
            )
        if isinstance(
            exc,
            botocore.exceptions.ConnectionError | botocore.exceptions.HTTPClientError,
        ):
            return DeliveryError(f"connection lost ({describe_exception(exc)})", transient=True)
        if isinstance(
            exc,
            botocore.exceptions.NoCredentialsError | botocore.exceptions.PartialCredentialsError,
        ):
            return DeliveryError("credentials are missing")
        if isinstance(exc, S3UploadFailedError):
            # Its message quotes the local file's path, which is of no use to the reader.
            return DeliveryError("upload failed", transient=True)
        return super()._failure(exc)


def _error_code(exc: botocore.exceptions.ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))
