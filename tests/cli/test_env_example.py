""".env.example lists every setting of the settings classes with its default (cli.env_example
writes it; `make lint` runs the same check as the first test)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cli import env_example
from platforms.shopify.settings import ShopifySettings
from quarry.settings import Settings

_LINE = re.compile(r"^#([A-Z][A-Z0-9_]*)=(.*)$")


def _listed() -> dict[str, str]:
    text = env_example.FILE.read_text()
    return {m.group(1): m.group(2) for m in map(_LINE.match, text.splitlines()) if m}


def test_the_checked_in_file_is_what_the_classes_give(capsys: pytest.CaptureFixture[str]) -> None:
    assert env_example.main(["--check"]) == 0, "run `python -m cli.env_example`"
    assert capsys.readouterr().err == ""


def test_every_setting_is_listed_once() -> None:
    names = [m.group(1) for m in map(_LINE.match, env_example.render().splitlines()) if m]
    assert len(names) == len(set(names))
    expected = {"DAGSTER_HOME", "QUARRY_METRICS_TOKEN", "QUARRY_SHOPIFY_API_VERSION"}
    assert expected <= set(names)
    assert len(names) == len(Settings.model_fields) + len(ShopifySettings.model_fields)


def test_the_listed_values_are_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """Uncommenting every line with a value changes nothing: each is the default."""
    listed = _listed()
    for name in [*listed, "QUARRY_HOME", "DAGSTER_HOME"]:
        monkeypatch.delenv(name, raising=False)
    defaults = (Settings(), ShopifySettings())
    for name, value in listed.items():
        if value:
            monkeypatch.setenv(name, value)
    assert (Settings(), ShopifySettings()) == defaults
    assert listed["QUARRY_METRICS"] == "off" and listed["QUARRY_RATE_LIMIT"] == "120/60"


def test_a_stale_file_fails_the_check(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = tmp_path / ".env.example"
    stale.write_text(env_example.render().replace("#QUARRY_METRICS_TOKEN=\n", ""))
    monkeypatch.setattr(env_example, "FILE", stale)
    assert env_example.main(["--check"]) == 1
    assert "out of date" in capsys.readouterr().err
    assert env_example.main([]) == 0 and env_example.main(["--check"]) == 0
