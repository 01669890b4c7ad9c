"""`quarry sync`: progress on stderr as each store and dataset is written, a line per store
on stdout (or one JSON array), and one line (no traceback) for what went wrong."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from platforms.demo.storage import store_dir
from quarry.settings import Settings
from registry.db import Registry


def test_unknown_store_is_one_line_and_exit_1(settings: Settings, registry: Registry) -> None:
    result = CliRunner().invoke(cli, ["sync", "--store", "st_nope"])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == ["error: store 'st_nope' does not exist"]


@pytest.mark.slow
def test_sync_reports_each_store_and_names_the_failed_one(
    settings: Settings, demo_account: str, store_ids: list[str], tmp_path: Path
) -> None:
    good, broken = store_ids
    # The second store's platform loses its data: every dataset of it fails to sync.
    folder = store_dir(settings, demo_account, broken).local_path()
    assert folder is not None
    shutil.move(folder, tmp_path / "away")

    result = CliRunner().invoke(cli, ["sync"])

    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("exchange_rates (exchange rates): exchange_rates 88,")
    assert lines[1].startswith(f"{good} (") and ", orders " in lines[1]
    progress = result.stderr.splitlines()
    [error] = [line for line in progress if line.startswith("error:")]
    assert error.startswith(f"error: store {broken}: ")
    assert f"failed: NotFound: no demo data for store '{broken}'" in error
    assert "Traceback" not in result.output
    # As it goes: each store as it starts, each dataset as it is written, then the failure.
    good_name = lines[1].split(" (", 1)[1].split("):", 1)[0]
    started = progress.index(f"syncing {good_name} ({good}) ...")
    orders = next(line for line in progress[started:] if line.startswith("  orders: "))
    assert re.fullmatch(
        r"  orders: orders [\d,]+, order_lines [\d,]+, .* rows in \d+\.\d s, [\d,]+ rows/s",
        orders,
    ), orders
    assert any(re.fullmatch(r"  customers: [\d,]+ rows in .*", line) for line in progress)
    assert progress.index(error) > progress.index(next(p for p in progress if broken in p))

    # Again, as JSON: one array on stdout; the good store has nothing new.
    again = CliRunner().invoke(cli, ["sync", "--json"])
    assert again.exit_code == 1
    results = {r["store_id"]: r for r in json.loads(again.stdout)}
    assert results[good]["success"] is True and not any(results[good]["rows"].values())
    assert results[broken]["success"] is False
    assert "NotFound" in results[broken]["error"] and results[broken]["run_id"]
