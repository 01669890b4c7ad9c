"""`quarry exports apply` and `quarry exports list`, in process with click's runner."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import yaml

from quarry.settings import Settings
from registry.accounts import create_account
from registry.db import Registry
from tests.api.conftest import isolated_env
from tests.api.world import World
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


def test_each_problem_of_a_bad_file_is_a_line_naming_file_key_problem(
    account: str, tmp_path: Path
) -> None:
    path = tmp_path / "bad.yaml"
    entry = {"name": "X", "entity_type": "orders", "format": "csv", "columns": ["nope"]}
    path.write_text(yaml.safe_dump({"exports": [entry]}))
    result = invoke("exports", "apply", "-f", str(path), "--account", account)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: {path}: exports[0].columns[0]: 'nope' is not a field of orders"
    ]
    entry["columns"] = ["nope", "order_name", "nada"]
    path.write_text(yaml.safe_dump({"exports": [entry, {**entry, "name": "Y", "format": "pdf"}]}))
    several = invoke("exports", "apply", "-f", str(path), "--account", account)
    assert several.exit_code == 1 and several.stdout == ""
    lines = several.stderr.splitlines()
    assert len(lines) == 5 and all(line.startswith(f"error: {path}: exports[") for line in lines)
    assert lines[0] == f"error: {path}: exports[0].columns[0]: 'nope' is not a field of orders"
    assert any(line.startswith(f"error: {path}: exports[1].format: ") for line in lines)
    machine = invoke("exports", "apply", "-f", str(path), "--account", account, "--json")
    assert machine.exit_code == 1 and len(machine.stderr.splitlines()) == 1
    missing = invoke("exports", "apply", "-f", str(tmp_path / "none.yaml"), "--account", account)
    assert missing.exit_code == 1 and "cannot read the file" in missing.stderr
    unknown = invoke("exports", "list", "--account", "acc_nope")
    assert unknown.exit_code == 1 and "does not exist" in unknown.stderr


def _s3_export(secret: object) -> dict[str, object]:
    return {
        "name": "To S3",
        "entity_type": "orders",
        "format": "csv",
        "columns": ["order_name", {"field": "total_price", "title": "Total"}],
        "filters": {"financial_status": ["paid", "refunded"], "created_at_min": "2024-01-01"},
        "format_options": {"delimiter": ";"},
        "destination": {
            "kind": "s3",
            "settings": {"bucket": "reports"},
            "credentials": {
                "access_key_id": {"env": "QUARRY_TEST_S3_KEY"},
                "secret_access_key": secret,
            },
        },
        "schedule": {"cron": "0 6 * * *", "timezone": "Europe/Berlin"},
    }


def _credentials(settings: Settings, account: str) -> dict[str, object]:
    from sqlalchemy import select

    from quarry.crypto import SecretBox
    from registry.models import ExportConfig

    registry = Registry(settings)
    with registry.session() as session:
        row = session.scalars(select(ExportConfig).where(ExportConfig.account_id == account)).one()
        sealed = row.credentials_secret
    registry.dispose()
    assert sealed is not None
    return SecretBox(settings.fernet_keys).open(sealed)


@pytest.mark.parametrize(
    "text",
    [
        "exports: " + "[" * 1000 + "]" * 1000 + "\n",
        "exports:\n" + "".join("  " * depth + "- \n" for depth in range(1, 200)),
        "exports: " + "{a: " * 1000 + "1" + "}" * 1000 + "\n",
    ],
    ids=["flow-lists", "block-lists", "flow-mappings"],
)
def test_deeply_nested_yaml_is_one_error_line(account: str, tmp_path: Path, text: str) -> None:
    # PyYAML recursed until RecursionError: a traceback instead of an answer.
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    result = invoke("exports", "apply", "-f", str(path), "--account", account, "--dry-run")
    assert result.exit_code == 1 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {path}: line ")
    assert "not valid YAML (nested deeper than 32 levels)" in line


def test_a_file_over_the_size_cap_is_one_error_line(account: str, tmp_path: Path) -> None:
    from exports.configs.document import MAX_FILE_BYTES

    entry = "  - {name: Orders %d, entity_type: orders, format: csv}\n"
    lines, size = ["exports:\n"], 9
    while size <= MAX_FILE_BYTES:
        lines.append(entry % len(lines))
        size += len(lines[-1])
    path = tmp_path / "huge.yaml"
    path.write_text("".join(lines))
    result = invoke("exports", "apply", "-f", str(path), "--account", account, "--dry-run")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: {path}: larger than 1,048,576 bytes; split the configurations into several files"
    ]
    # At the cap exactly, the file is read: one configuration and a long comment.
    head = b"exports:\n  - {name: Orders, entity_type: orders, format: csv}\n#"
    path.write_bytes(head + b"x" * (MAX_FILE_BYTES - len(head) - 1) + b"\n")
    assert path.stat().st_size == MAX_FILE_BYTES
    at_cap = invoke("exports", "apply", "-f", str(path), "--account", account)
    assert at_cap.exit_code == 0, at_cap.output
    assert at_cap.stdout.split()[0] == "created"


def test_dump_writes_what_apply_reads_without_secrets(
    quarry_env: Settings, account: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "exports.yaml"
    path.write_text(yaml.safe_dump({"exports": [_s3_export("s3cr3t-literal")]}))
    monkeypatch.delenv("QUARRY_TEST_S3_KEY", raising=False)
    applied = invoke("exports", "apply", "-f", str(path), "--account", account)
    assert applied.exit_code == 0, applied.output
    # The credential read from the environment is not set here: a warning, not an error.
    assert "warning: 'To S3': credentials.access_key_id reads $QUARRY_TEST_S3_KEY" in applied.stderr

    dumped = invoke("exports", "dump", "--account", account)
    assert dumped.exit_code == 0, dumped.output
    assert "s3cr3t" not in dumped.stdout
    (entry,) = yaml.safe_load(dumped.stdout)["exports"]
    assert entry["destination"]["credentials"] == {
        "access_key_id": {"env": "QUARRY_TEST_S3_KEY"},
        "secret_access_key": {"stored": True},
    }
    assert entry["columns"] == ["order_name", {"field": "total_price", "title": "Total"}]
    assert entry["filters"] == {
        "financial_status": ["paid", "refunded"],
        "created_at_min": "2024-01-01",
    }
    assert entry["format_options"] == {"delimiter": ";"}
    assert entry["schedule"] == {"cron": "0 6 * * *", "timezone": "Europe/Berlin"}

    # Applied back, it changes nothing and keeps the stored secret.
    (tmp_path / "dumped.yaml").write_text(dumped.stdout)
    monkeypatch.setenv("QUARRY_TEST_S3_KEY", "set")
    again = invoke("exports", "apply", "-f", str(tmp_path / "dumped.yaml"), "--account", account)
    assert again.exit_code == 0 and again.stdout.startswith("updated "), again.output
    assert again.stderr == ""
    assert _credentials(quarry_env, account)["secret_access_key"] == "s3cr3t-literal"
    assert invoke("exports", "dump", "--account", account).stdout == dumped.stdout

    # Under another name there is nothing stored to keep: an error naming the key, and
    # nothing is written.
    renamed = dumped.stdout.replace("name: To S3", "name: Elsewhere")
    (tmp_path / "renamed.yaml").write_text(renamed)
    refused = invoke("exports", "apply", "-f", str(tmp_path / "renamed.yaml"), "--account", account)
    assert refused.exit_code == 1
    assert "exports[0].destination.credentials.secret_access_key: {stored: true}" in refused.stderr
    listed = json.loads(invoke("exports", "list", "--account", account, "--json").stdout)
    assert [c["name"] for c in listed] == ["To S3"]


def test_show_and_delete(quarry_env: Settings, account: str, tmp_path: Path) -> None:
    path = tmp_path / "exports.yaml"
    path.write_text(yaml.safe_dump({"exports": [_s3_export({"env": "X_SECRET"})]}))
    created = invoke("exports", "apply", "-f", str(path), "--account", account, "--json")
    ((config_id, name, new),) = [
        (c["id"], c["name"], c["created"]) for c in json.loads(created.stdout)
    ]
    assert (name, new) == ("To S3", True)
    shown = invoke("exports", "show", config_id, "--json")
    assert shown.exit_code == 0, shown.output
    detail = json.loads(shown.stdout)
    assert detail["id"] == config_id and detail["destination"]["kind"] == "s3"
    assert detail["destination"]["has_credentials"] is True
    assert "X_SECRET" not in shown.stdout  # credentials are never shown, not even references
    human = invoke("exports", "show", config_id)
    assert yaml.safe_load(human.stdout)["name"] == "To S3"

    unknown = invoke("exports", "delete", "exp_nope", "--yes")
    assert unknown.exit_code == 1 and "does not exist" in unknown.stderr
    declined = invoke("exports", "delete", config_id, input="n\n")
    assert declined.exit_code == 1
    assert invoke("exports", "show", config_id).exit_code == 0
    deleted = invoke("exports", "delete", config_id, "--yes", "--json")
    assert deleted.exit_code == 0, deleted.output
    assert json.loads(deleted.stdout) == {"id": config_id, "name": "To S3", "jobs_removed": []}
    assert invoke("exports", "show", config_id).exit_code == 1
    cleaned = invoke("exports", "cleanup", "--older-than-days", "0", "--json")
    assert cleaned.exit_code == 0 and json.loads(cleaned.stdout) == {"jobs": []}


def test_dry_run_counts_and_shows_the_first_rows(export_world: World, tmp_path: Path) -> None:
    account = export_world.accounts["a"]
    stores = ("st_a1", "st_a2")
    path = tmp_path / "exports.yaml"
    path.write_text(yaml.safe_dump({"exports": [{
        "name": "Two stores", "entity_type": "orders", "format": "csv",
        "columns": ["order_name", "store_id"], "stores": list(stores),
    }]}))  # fmt: skip
    with isolated_env(str(export_world.settings.home)):
        result = invoke("exports", "apply", "-f", str(path), "--account", account,
                        "--dry-run", "--rows", "2")  # fmt: skip
        listed = invoke("exports", "list", "--account", account, "--json")
    assert result.exit_code == 0, result.output
    expected = export_world.records("orders", *stores)
    lines = result.stdout.splitlines()
    assert lines[0] == "would create 'Two stores': orders as csv, to local, 2 store(s)"
    assert lines[1] == f"  orders: {len(expected):,} rows; the first 2:"
    assert lines[2].split() == ["Order", "Store", "ID"]
    assert [line.split() for line in lines[3:5]] == [
        [r["order_name"], r["store_id"]] for r in expected[:2]
    ]
    assert lines[-1] == "nothing written (--dry-run)"
    assert "Two stores" not in listed.stdout
    with isolated_env(str(export_world.settings.home)):
        as_json = invoke("exports", "apply", "-f", str(path), "--account", account,
                         "--dry-run", "--rows", "1", "--json")  # fmt: skip
    (preview,) = json.loads(as_json.stdout)
    assert preview["name"] == "Two stores" and preview["created"] is True
    (part,) = preview["parts"]
    assert part["rows"] == len(expected) and part["titles"] == ["Order", "Store ID"]
    assert part["first"] == [[expected[0]["order_name"], expected[0]["store_id"]]]


def test_pause_resume_and_delete_with_jobs(
    quarry_env: Settings, account: str, tmp_path: Path
) -> None:
    from exports.jobs.lifecycle import COMPLETED, create_job, finish
    from registry.models import ExportConfig

    path = tmp_path / "exports.yaml"
    scheduled = {**_s3_export({"env": "X_SECRET"}), "schedule": {"cron": "*/5 * * * *"}}
    path.write_text(yaml.safe_dump({"exports": [scheduled]}))
    ((config_id,),) = [
        (c["id"],) for c in json.loads(
            invoke("exports", "apply", "-f", str(path), "--account", account, "--json").stdout)
    ]  # fmt: skip
    paused = invoke("exports", "pause", config_id)
    assert paused.exit_code == 0 and "paused" in paused.stdout, paused.output
    assert json.loads(invoke("exports", "show", config_id, "--json").stdout)["schedule"]["paused"]
    # Applying the file again leaves the pause alone: it is an operator's, not the file's.
    assert invoke("exports", "apply", "-f", str(path), "--account", account).exit_code == 0
    shown = json.loads(invoke("exports", "show", config_id, "--json").stdout)
    assert shown["schedule"]["paused"] is True
    resumed = invoke("exports", "resume", config_id, "--json")
    assert json.loads(resumed.stdout) == {"id": config_id, "name": "To S3", "paused": False}
    # Without a schedule there is nothing to pause or resume: refused, not a silent success.
    by_hand = {**_s3_export({"env": "X_SECRET"}), "name": "To S3 by hand"}
    del by_hand["schedule"]
    by_hand_path = tmp_path / "by-hand.yaml"
    by_hand_path.write_text(yaml.safe_dump({"exports": [by_hand]}))
    ((by_hand_id,),) = [
        (c["id"],) for c in json.loads(invoke(
            "exports", "apply", "-f", str(by_hand_path), "--account", account, "--json").stdout)
    ]  # fmt: skip
    for action in ("pause", "resume"):
        refused = invoke("exports", action, by_hand_id)
        assert refused.exit_code == 1, refused.output
        assert f"has no schedule to {action}" in refused.stderr

    registry = Registry(quarry_env)
    try:
        with registry.session() as session:
            config = session.get(ExportConfig, config_id)
            assert config is not None
            done, _ = create_job(session, config)
            waiting, _ = create_job(session, config, idempotency_key="second")
            done_id, waiting_id = done.id, waiting.id
        with registry.session() as session:
            finish(session, done_id, COMPLETED)
        refused = invoke("exports", "delete", config_id, "--yes")
        assert refused.exit_code == 1
        assert waiting_id in refused.stderr and "queued or running" in refused.stderr
        with registry.session() as session:
            finish(session, waiting_id, COMPLETED)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no library warning on the screen
            deleted = invoke("exports", "delete", config_id, "--yes", "--json")
        assert deleted.exit_code == 0, (deleted.output, deleted.exception)
        assert sorted(json.loads(deleted.stdout)["jobs_removed"]) == sorted([done_id, waiting_id])
        assert "Warning" not in deleted.output
    finally:
        registry.dispose()


def test_reset_a_changed_rows_export(account: str, tmp_path: Path) -> None:
    path = tmp_path / "exports.yaml"
    changes = {**_s3_export({"env": "X_SECRET"}), "name": "Changes", "rows": "changed"}
    path.write_text(yaml.safe_dump({"exports": [changes, _s3_export({"env": "X_SECRET"})]}))
    applied = json.loads(
        invoke("exports", "apply", "-f", str(path), "--account", account, "--json").stdout
    )
    ids = {c["name"]: c["id"] for c in applied}
    reset = invoke("exports", "reset", ids["Changes"], "--json")
    assert reset.exit_code == 0, reset.output
    assert json.loads(reset.stdout) == {"id": ids["Changes"], "name": "Changes", "stores_reset": 0}
    refused = invoke("exports", "reset", ids["To S3"])
    assert refused.exit_code == 1 and "rows: all" in refused.stderr
    dumped = yaml.safe_load(invoke("exports", "dump", "--account", account).stdout)
    assert next(e for e in dumped["exports"] if e["name"] == "Changes")["rows"] == "changed"
