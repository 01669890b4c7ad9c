"""`quarry sync`: a line per store, and one line (no traceback) for what went wrong."""

from __future__ import annotations

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
    assert len(result.stderr.splitlines()) == 1, result.stderr
    [error] = result.stderr.splitlines()
    assert error.startswith(f"error: store {broken}: ")
    assert f"failed: NotFound: no demo data for store '{broken}'" in error
    assert "Traceback" not in result.output
