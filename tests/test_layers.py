"""The layers point down (docs/architecture.md): the import-linter contract in
pyproject.toml holds for the source tree, and it does catch an import that points up."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(directory: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(directory)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(directory / "pyproject.toml")],
        cwd=directory,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_source_tree_keeps_its_layers() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Layers point down KEPT" in result.stdout


def test_an_import_that_points_up_breaks_the_contract(tmp_path: Path) -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    # The layers contract alone: the others name modules this bare tree does not have.
    text = (ROOT / "pyproject.toml").read_text()
    first = text.index("[[tool.importlinter.contracts]]")
    (tmp_path / "pyproject.toml").write_text(
        text[: text.index("[[tool.importlinter.contracts]]", first + 1)]
    )
    for package in config["root_packages"]:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    # The ground floor reaching for the API: what the rule exists to stop.
    (tmp_path / "quarry" / "settings.py").write_text("import api\n")
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert "quarry is not allowed to import api" in result.stdout
