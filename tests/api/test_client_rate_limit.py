"""quarry-client against a real `quarry serve` with a tight rate limit: a 429 is waited out
as Retry-After says, and the call then succeeds."""

from __future__ import annotations

import time
from pathlib import Path

from quarry_client import Client, RateLimited

from registry.keys import create_key
from tests.api.world import World
from tests.factories import running_api


def test_a_429_is_retried_after_retry_after(world: World, tmp_path: Path) -> None:
    with world.registry.session() as session:
        key, other = (
            create_key(session, account_id=world.accounts["a"], scopes=["read_data"]).secret
            for _ in range(2)
        )
    limit = {"QUARRY_RATE_LIMIT": "2/2"}  # a token a second
    home, secret = world.settings.home, world.settings.secret_key or ""
    with running_api(home, secret, tmp_path / "serve.log", **limit) as port:
        url = f"http://127.0.0.1:{port}"
        with Client(url, key) as client:
            client.account(), client.account()  # the bucket is empty now
            started = time.monotonic()
            assert client.account()["account_id"] == world.accounts["a"]
            assert time.monotonic() - started >= 0.9  # it waited, then passed
        with Client(url, other, max_retries=0) as impatient:
            impatient.account()
            impatient.account()
            try:
                impatient.account()
            except RateLimited as refused:
                assert refused.status == 429 and refused.retry_after >= 1
            else:
                raise AssertionError("a third call at once should be refused")
