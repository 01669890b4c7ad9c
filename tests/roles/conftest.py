"""The several-machines proofs use the session's moto S3 server (tests/destinations), and a
deployment of roles sharing PostgreSQL, Redis and S3 (tests.roles.deployment)."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.destinations.servers import S3Server, use_servers
from tests.roles.deployment import Deployment, deploy


def pytest_configure(config: pytest.Config) -> None:
    use_servers(config)


@pytest.fixture
def deployment(tmp_path: Path, s3_server: S3Server) -> Iterator[Deployment]:
    with deploy(tmp_path, s3_server) as made:
        yield made
