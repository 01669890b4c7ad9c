"""`quarry demo seed` and `quarry demo advance` through click, as a user runs them."""

from __future__ import annotations

import json

from click.testing import CliRunner, Result

from cli.context import AppContext
from cli.demo import demo
from platforms.demo.storage import load_state
from quarry.errors import NotFound
from quarry.settings import Settings


def _run(*args: str) -> Result:
    return CliRunner().invoke(demo, list(args), obj=AppContext())


def test_seed_json_names_the_account_and_stores(quarry_env: Settings) -> None:
    result = _run(
        "seed",
        "--orders",
        "900",
        "--stores",
        "3",
        "--seed",
        "4",
        "--anchor",
        "2025-05-01",
        "--json",
    )
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert set(shown) == {"account_id", "stores"}
    assert [set(s) for s in shown["stores"]] == [{"id", "name"}] * 3
    assert shown["stores"][2]["name"] == "Tokyo \"Kissa\" O'Brien's 東京ストア"
    state = load_state(quarry_env, shown["account_id"])
    assert (state.seed, state.anchor.isoformat()) == (4, "2025-05-01")
    assert [s["id"] for s in shown["stores"]] == [s.id for s in state.stores]


def test_seed_prints_a_summary_and_advance_what_changed(quarry_env: Settings) -> None:
    seeded = _run("seed", "--orders", "900", "--stores", "2")
    assert seeded.exit_code == 0, seeded.output
    account_id = seeded.stdout.split()[1].rstrip(":")
    assert "Northwind Outfitters" in seeded.output and "Berliner Werkstatt" in seeded.output

    advanced = _run("advance", "--account", account_id, "--days", "2")
    assert advanced.exit_code == 0, advanced.output
    for dataset in ("orders", "customers", "products", "draft_orders"):
        assert f"  {dataset}: " in advanced.output
    assert "deleted" in advanced.output

    as_json = json.loads(_run("advance", "--account", account_id, "--json").stdout)
    assert as_json["days"] == 1 and set(as_json["changes"]["orders"]) == {
        "added",
        "updated",
        "deleted",
    }
    assert load_state(quarry_env, account_id).advances == 2


def test_unknown_account_is_a_not_found_error(quarry_env: Settings) -> None:
    result = _run("advance", "--account", "acc_missing")
    assert isinstance(result.exception, NotFound)
    assert "acc_missing" in str(result.exception)


def test_bad_numbers_are_usage_errors(quarry_env: Settings) -> None:
    for args in (
        ("seed", "--orders", "0"),
        ("seed", "--orders", "2", "--stores", "3"),
        ("seed", "--stores", "-1"),
        ("seed", "--anchor", "yesterday"),
        ("advance", "--account", "acc_x", "--days", "0"),
        ("advance", "--days", "2"),
    ):
        result = _run(*args)
        assert result.exit_code == 2, args
        assert "Usage:" in result.output


def test_quarry_prints_an_unknown_account_as_one_line(quarry_env: Settings) -> None:
    from cli.main import cli

    result = CliRunner().invoke(cli, ["demo", "advance", "--account", "acc_missing"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == ["error: account 'acc_missing' does not exist"]
