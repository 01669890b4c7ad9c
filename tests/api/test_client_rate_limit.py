"""quarry-client against a real `quarry serve` with a tight rate limit: a 429 is waited out
as Retry-After says, and the call then succeeds; a download too."""

from __future__ import annotations

import time
from pathlib import Path

from quarry_client import Client, RateLimited

from exports.jobs.execute import execute_job
from registry.keys import create_key
from tests.api.world import World
from tests.exports.conftest import apply_yaml
from tests.factories import running_api


def test_a_429_is_retried_after_retry_after(world: World, tmp_path: Path) -> None:
    with world.registry.session() as session:
        key, other = (
            create_key(
                session, account_id=world.accounts["a"], scopes=["read_data", "exports"]
            ).secret
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
            # A download goes through the same handling: the bucket is empty again.
            document = {"exports": [{"name": "Rate-limited download", "entity_type": "orders",
                                     "format": "csv", "stores": ["st_a1"]}]}  # fmt: skip
            job = client.export(apply_yaml(world, "a", document)["Rate-limited download"]).run()
            execute_job(world.settings, world.registry, job.id, "rate-limit-test")
            client.account(), client.account()
            started = time.monotonic()
            saved = job.download(tmp_path / "download.csv")
            assert time.monotonic() - started >= 0.9
            assert saved.read_bytes().startswith(b"ID,")
        with Client(url, other, max_retries=0) as impatient:
            impatient.account()
            impatient.account()
            try:
                impatient.account()
            except RateLimited as refused:
                assert refused.status == 429 and refused.retry_after >= 1
            else:
                raise AssertionError("a third call at once should be refused")
