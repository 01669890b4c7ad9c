"""Fixtures of the destination tests. The servers themselves (sshd, FTPS, moto, aiosmtpd,
the Google stand-in) are in tests/destinations/servers.py, a plugin this conftest registers."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import pytest
from cryptography.fernet import Fernet

from destinations.base import BaseDestination, Delivery
from destinations.retry import RetryPolicy
from quarry.settings import Settings, load_settings

# Re-exported for the destination tests, which import them from here.
from tests.destinations.servers import (  # noqa: F401
    READONLY_FOLDER,
    REFUSED_RECIPIENT,
    S3_BUCKET,
    S3_OTHER_BUCKET,
    SFTP_USER,
    SMTP_USER,
    WRITABLE_FOLDER,
    CuttingProxy,
    FtpServer,
    GoogleServer,
    S3Server,
    SmtpServer,
    SshServer,
    free_port,
    server_failed,
    stop_process,
    use_servers,
)


def pytest_configure(config: pytest.Config) -> None:
    use_servers(config)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the marks into node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every destination test runs on one xdist worker (--dist loadgroup), so each server
    starts once per run rather than once per worker."""
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.xdist_group("destinations"))


FAST_RETRY = RetryPolicy(attempts=3, initial_wait=0.05, max_wait=0.2)

DestinationT = TypeVar("DestinationT", bound=BaseDestination)


def build_destination(
    cls: type[DestinationT],
    settings: Mapping[str, Any],
    credentials: Mapping[str, Any],
    app_settings: Settings,
) -> DestinationT:
    """A destination as an export run makes it (settings validated and normalised first),
    retrying transient failures with FAST_RETRY."""
    normalised = cls.validate(settings, credentials, app_settings)
    return cls(normalised, credentials, app_settings, retry=FAST_RETRY)


@pytest.fixture
def app_settings(tmp_path: Path) -> Settings:
    """Settings with private hosts allowed (every test server is on loopback)."""
    return load_settings(
        home=tmp_path / "home",
        secret_key=Fernet.generate_key().decode(),
        allow_private_hosts=True,
        public_url="https://quarry.example.test",
    )


@pytest.fixture
def strict_settings(tmp_path: Path) -> Settings:
    """Settings as in production: private and loopback hosts refused."""
    return load_settings(
        home=tmp_path / "home",
        secret_key=Fernet.generate_key().decode(),
        allow_private_hosts=False,
    )


def make_delivery(
    folder: Path, size: int, *, name: str = "orders.csv", job_id: str = ""
) -> Delivery:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"source-{uuid.uuid4().hex}"
    path.write_bytes(os.urandom(size))
    return Delivery(
        path=path,
        file_name=name,
        job_id=job_id or f"job-{uuid.uuid4().hex[:12]}",
        content_type="text/csv",
    )


@pytest.fixture
def delivery(tmp_path: Path) -> Delivery:
    return make_delivery(tmp_path / "out", 300_000)


@pytest.fixture
def cutting_proxy() -> Iterator[type[CuttingProxy]]:
    """Factory for loopback proxies that cut connections mid-stream; closed after the test."""
    made: list[CuttingProxy] = []

    class Factory(CuttingProxy):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            made.append(self)

    yield Factory
    for proxy in made:
        proxy.close()


def elapsed_ok(started: float, limit: float) -> bool:
    return time.monotonic() - started < limit
