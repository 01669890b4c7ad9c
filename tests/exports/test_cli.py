"""`quarry exports apply` and `quarry exports list`, in process with click's runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from quarry.settings import Settings
from registry.accounts import create_account
from registry.db import Registry
from tests.cli.runner import invoke


@pytest.fixture
def account(quarry_env: Settings) -> str:
    registry = Registry(quarry_env)
    with registry.session() as session:
        account_id = create_account(session, name="Acme", currency="USD", timezone="UTC").id
    registry.dispose()
    return account_id


def test_apply_then_list(account: str, tmp_path: Path) -> None:
    path = tmp_path / "exports.yaml"
    path.write_text(yaml.safe_dump({"exports": [
        {"name": "Orders", "entity_type": "orders", "format": "csv"},
        {"name": "Customers", "entity_type": "customers", "format": "xlsx"},
    ]}))  # fmt: skip
    applied = invoke("exports", "apply", "-f", str(path), "--account", account)
    assert applied.exit_code == 0, applied.output
    assert [line.split()[0] for line in applied.stdout.splitlines()] == ["created", "created"]
    again = invoke("exports", "apply", "-f", str(path), "--account", account)
    assert [line.split()[0] for line in again.stdout.splitlines()] == ["updated", "updated"]
    listed = invoke("exports", "list", "--account", account, "--json")
    assert listed.exit_code == 0, listed.output
    assert [(c["name"], c["format"], c["total_runs"]) for c in json.loads(listed.stdout)] == [
        ("Customers", "xlsx", 0), ("Orders", "csv", 0),
    ]  # fmt: skip
    assert "Orders" in invoke("exports", "list", "--account", account).stdout


def test_a_bad_file_is_one_line_naming_file_key_and_problem(account: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    entry = {"name": "X", "entity_type": "orders", "format": "csv", "columns": ["nope"]}
    path.write_text(yaml.safe_dump({"exports": [entry]}))
    result = invoke("exports", "apply", "-f", str(path), "--account", account)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: {path}: exports[0].columns[0]: 'nope' is not a field of orders"
    ]
    missing = invoke("exports", "apply", "-f", str(tmp_path / "none.yaml"), "--account", account)
    assert missing.exit_code == 1 and "cannot read the file" in missing.stderr
    unknown = invoke("exports", "list", "--account", "acc_nope")
    assert unknown.exit_code == 1 and "does not exist" in unknown.stderr
