"""The several-machines proof uses the session's moto S3 server (tests/destinations)."""

import pytest

from tests.destinations.servers import use_servers


def pytest_configure(config: pytest.Config) -> None:
    use_servers(config)
