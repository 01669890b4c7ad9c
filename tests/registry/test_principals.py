"""What a key may read, decided by its Principal alone."""

from __future__ import annotations

import pytest

from quarry.errors import InvalidRequest
from registry.models import ExportConfig, ExportJob
from tests.factories import principal_for


def _config(account_id: str, stores: list[str] | None) -> ExportConfig:
    definition = {} if stores is None else {"stores": stores}
    return ExportConfig(id="exp_t", account_id=account_id, name="t", definition=definition)


def test_a_configuration_without_a_store_list_needs_every_store_of_the_account() -> None:
    narrow = principal_for("acc_a", ["st_1"], account_stores=["st_1", "st_2"])
    wide = principal_for("acc_a", ["st_1", "st_2"])
    assert not narrow.sees_config(_config("acc_a", None))
    assert wide.sees_config(_config("acc_a", None))
    assert narrow.sees_config(_config("acc_a", ["st_1"]))
    assert not narrow.sees_config(_config("acc_a", ["st_1", "st_2"]))
    assert not wide.sees_config(_config("acc_b", ["st_1"]))


def test_a_job_is_seen_only_by_keys_reading_all_its_stores() -> None:
    job = ExportJob(id="job_t", account_id="acc_a", store_ids=["st_1", "st_2"])
    assert principal_for("acc_a", ["st_1", "st_2", "st_3"]).sees_job(job)
    assert not principal_for("acc_a", ["st_1"]).sees_job(job)
    assert not principal_for("acc_b", ["st_1", "st_2"]).sees_job(job)


def test_requested_stores_may_only_narrow_and_unknown_ids_leak_nothing() -> None:
    principal = principal_for("acc_a", ["st_2", "st_1"])
    assert principal.reads(None) == ("st_1", "st_2")
    assert principal.reads(["st_2", "st_2"]) == ("st_2",)
    with pytest.raises(InvalidRequest) as foreign:
        principal.reads(["st_1", "st_other"], field="store_ids")
    assert foreign.value.errors == [
        {"field": "store_ids", "message": "'st_other' is not a store this key can read"}
    ]
