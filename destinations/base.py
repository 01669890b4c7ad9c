"""The delivery interface: every destination kind takes a finished file and puts it where an
export configuration says, returning a receipt.

A kind validates its settings when a configuration is applied (errors name the field) and
delivers at-least-once: it writes under a temporary name and renames (or the kind's
equivalent), so a partial file never appears under the final name, and a retry of the same
job overwrites only that job's own file. Transient failures are retried inside `deliver`
with backoff; a delivery that finally fails raises DeliveryError whose reason names the
destination. Credentials never appear in receipts, reasons or logs.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from destinations.fields import FieldReader
from destinations.hosts import HostRefused
from destinations.retry import RetryPolicy, run_with_retries
from quarry.redaction import Redactor, redacting
from quarry.settings import Settings

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class Receipt:
    """Where a delivered file went: a location a person can read, its size and SHA-256.
    `details` holds kind-specific facts (message id, object version, file id), never secrets."""

    kind: str
    location: str
    bytes: int
    sha256: str
    details: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Delivery:
    """One file to deliver: the local file, the name a person sees, and the job it belongs to."""

    path: Path
    file_name: str
    job_id: str
    content_type: str


class DeliveryError(Exception):
    """A delivery that failed; `reason` names the destination and says what to fix.
    `transient` says whether the last failure was of a kind that may pass (network, 5xx):
    `deliver` has already retried those with backoff before raising."""

    def __init__(self, reason: str, *, transient: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.transient = transient


# --- delivery helpers ---------------------------------------------------------------------

_BAD_FILE_NAME = re.compile(r"[\x00-\x1f\x7f/\\]")


def check_file_name(file_name: str) -> None:
    """The final name is a plain file name: a path separator or control character could
    write outside the configured folder or break a protocol command."""
    if (
        not file_name
        or file_name in {".", ".."}
        or _BAD_FILE_NAME.search(file_name)
        or len(file_name) > 255
    ):
        raise DeliveryError(f"file name {file_name!r} is not a plain file name")


def temporary_name(delivery: Delivery) -> str:
    """The name a file is written under before its rename. It carries the job id, so a retry
    of the same job overwrites its own partial file and never another job's."""
    job = re.sub(r"[^A-Za-z0-9_-]", "_", delivery.job_id)[:64] or "job"
    return f".{delivery.file_name}.{job}.part"


def file_digest(path: Path) -> tuple[int, str]:
    """Size in bytes and SHA-256 hex digest of a local file."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
            size += len(block)
    return size, digest.hexdigest()


def secret_values(credentials: Mapping[str, Any]) -> list[str]:
    """Every string inside a credentials document, for redaction."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, Mapping):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    walk(credentials)
    return found


class BaseDestination:
    """Shared delivery flow: checks the file name, hashes the file, runs the kind's
    `_deliver_once` under redaction and retries, and turns the final failure into a
    DeliveryError that names the destination.

    Kinds implement `_read_settings`, `target` and `_deliver_once`, and map their library's
    exceptions in `_failure`.
    """

    kind: ClassVar[str]

    def __init__(
        self,
        settings: Mapping[str, Any],
        credentials: Mapping[str, Any],
        app_settings: Settings,
        *,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.settings = dict(settings)
        self._credentials = dict(credentials)
        self.app_settings = app_settings
        self.retry = retry or RetryPolicy()
        self._redactor: Redactor | None = None

    @classmethod
    def validate(
        cls,
        settings: Mapping[str, Any],
        credentials: Mapping[str, Any],
        app_settings: Settings,
    ) -> dict[str, Any]:
        """Normalised settings, or quarry.errors.InvalidRequest naming every bad field."""
        fields = FieldReader(cls.kind, settings, credentials)
        normalised = cls._read_settings(fields, app_settings)
        fields.raise_if_errors()
        return normalised

    @classmethod
    def field_names(cls, app_settings: Settings) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The names of the kind's settings and of its credentials, in the order the kind
        reads them: what a form for it asks (api/console). Read off the validation itself,
        so a form never lists a field the kind does not take."""
        fields = FieldReader(cls.kind, {}, {})
        cls._read_settings(fields, app_settings)
        return fields.read_names()

    @classmethod
    def _read_settings(cls, fields: FieldReader, app_settings: Settings) -> dict[str, Any]:
        """The kind's settings and credentials read through `fields`, which collects the
        problems; returns the normalised settings (used only when there is no problem)."""
        raise NotImplementedError

    def target(self) -> str:
        """Where this destination delivers, for reasons and logs: host, bucket, folder."""
        raise NotImplementedError

    def _deliver_once(self, delivery: Delivery, size: int, sha256: str) -> Receipt:
        raise NotImplementedError

    def _failure(self, exc: Exception) -> DeliveryError:
        """A library exception as a DeliveryError. Network errors are transient."""
        if isinstance(exc, DeliveryError):
            return exc
        if isinstance(exc, HostRefused):
            return DeliveryError(exc.reason)
        if isinstance(exc, TimeoutError):
            return DeliveryError("timed out", transient=True)
        if isinstance(exc, ConnectionRefusedError):
            return DeliveryError("connection refused (is the server running?)", transient=True)
        if isinstance(exc, ConnectionError | EOFError):
            return DeliveryError(f"connection lost ({describe_exception(exc)})", transient=True)
        if isinstance(exc, OSError):
            return DeliveryError(describe_exception(exc), transient=True)
        return DeliveryError(describe_exception(exc))

    def secrets(self) -> list[str]:
        """Strings to keep out of logs and reasons: every credential value by default."""
        return secret_values(self._credentials)

    @property
    def allow_private_hosts(self) -> bool:
        return self.app_settings.allow_private_hosts

    def protect(self, secret: str | None) -> None:
        """Add a secret made while delivering (an access token, an upload session address)
        to the redaction of logs and reasons."""
        if secret and self._redactor is not None:
            self._redactor.add(secret)

    def scrub(self, text: str) -> str:
        return self._redactor.scrub(text) if self._redactor is not None else text

    def deliver(self, delivery: Delivery) -> Receipt:
        """Put the file at its destination, retrying transient failures; raise DeliveryError
        naming the destination when it finally fails."""
        check_file_name(delivery.file_name)
        try:
            size, sha256 = file_digest(delivery.path)
        except OSError as exc:
            raise DeliveryError(
                f"{self.kind} {self.target()}: cannot read the file to deliver "
                f"({exc.strerror or type(exc).__name__})"
            ) from None
        return self.transfer(lambda: self._deliver_once(delivery, size, sha256))

    def transfer(self, operation: Callable[[], T]) -> T:
        """Run `operation` (one attempt at talking to the destination) under redaction and
        retries; raise DeliveryError naming the destination when it finally fails."""
        with redacting(self.secrets()) as redactor:
            self._redactor = redactor
            try:
                return run_with_retries(
                    lambda: self._attempt(operation),
                    self.retry,
                    describe=f"{self.kind} delivery to {self.target()}",
                )
            except DeliveryError as exc:
                reason = redactor.scrub(f"{self.kind} {self.target()}: {exc.reason}")
                raise DeliveryError(reason, transient=exc.transient) from None
            finally:
                self._redactor = None

    def _attempt(self, operation: Callable[[], T]) -> T:
        try:
            return operation()
        except Exception as exc:
            failure = self._failure(exc)
            raise DeliveryError(self.scrub(failure.reason), transient=failure.transient) from None


def describe_exception(exc: BaseException) -> str:
    """A short, single-line description of a library exception for a reason."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:300]


def call_quietly(action: Callable[[], T]) -> T | None:
    """Best-effort cleanup: a failure here must not hide the failure being reported."""
    try:
        return action()
    except Exception as exc:
        logger.debug("cleanup step failed: %s", type(exc).__name__)
        return None
