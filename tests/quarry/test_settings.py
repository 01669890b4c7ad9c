"""Settings: defaults, the development key, and nothing read before load_settings()."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from quarry.errors import ConfigurationError
from quarry.settings import load_settings
from tests.concurrency import errors_in_threads


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No Quarry variables set, working directory an empty folder; returns that folder."""
    for name in list(os.environ):
        if name.startswith("QUARRY_") or name == "DAGSTER_HOME":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_home_defaults_to_dot_quarry_in_the_working_directory(clean_env: Path) -> None:
    settings = load_settings()
    assert settings.home.is_absolute()
    assert settings.home == (clean_env / ".quarry").resolve()


def test_a_relative_home_is_made_absolute(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUARRY_HOME", "data/q")
    assert load_settings().home == (clean_env / "data" / "q").resolve()
    monkeypatch.setenv("HOME", str(clean_env / "user"))
    monkeypatch.setenv("QUARRY_HOME", "~/q")
    assert load_settings().home == (clean_env / "user" / "q").resolve()


def test_the_registry_defaults_to_sqlite_in_home(clean_env: Path) -> None:
    settings = load_settings()
    assert settings.resolved_database_url == f"sqlite:///{settings.home / 'registry.db'}"


def test_the_database_url_comes_from_the_environment(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "postgresql+psycopg://postgres@127.0.0.1:5432/quarry"
    monkeypatch.setenv("QUARRY_DATABASE_URL", url)
    assert load_settings().resolved_database_url == url


def test_dagster_home_defaults_into_quarry_home(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = load_settings()
    assert settings.resolved_dagster_home == settings.home / "dagster"
    monkeypatch.setenv("DAGSTER_HOME", str(clean_env / "elsewhere"))
    assert load_settings().resolved_dagster_home == clean_env / "elsewhere"


def test_defaults_of_the_other_knobs(clean_env: Path) -> None:
    settings = load_settings()
    assert settings.rate_limit == "120/60"
    assert settings.redis_url is None
    assert settings.dagster_url == "http://127.0.0.1:3000"
    assert settings.public_url == "http://127.0.0.1:8000"
    assert settings.allow_private_hosts is False
    assert settings.duckdb_memory_limit == "2GB"
    assert settings.export_duckdb_memory_limit == "400MB"
    assert settings.duckdb_threads >= 1
    assert settings.snapshot_retention_hours == 24
    assert settings.resolved_catalog_url == f"sqlite:///{settings.home}/warehouse/catalog.sqlite"
    assert settings.resolved_data_url == f"{settings.home}/warehouse/data/"


def test_knobs_parse_from_the_environment(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUARRY_ALLOW_PRIVATE_HOSTS", "true")
    monkeypatch.setenv("QUARRY_DUCKDB_THREADS", "3")
    monkeypatch.setenv("QUARRY_SNAPSHOT_RETENTION_HOURS", "0.5")
    monkeypatch.setenv("QUARRY_CATALOG_URL", "postgresql://127.0.0.1/lake")
    monkeypatch.setenv("QUARRY_DATA_URL", "s3://bucket/prefix")
    monkeypatch.setenv("QUARRY_REDIS_URL", "redis://127.0.0.1:6379/0")
    settings = load_settings()
    assert settings.allow_private_hosts is True
    assert settings.duckdb_threads == 3
    assert settings.snapshot_retention_hours == 0.5
    assert settings.resolved_catalog_url == "postgresql://127.0.0.1/lake"
    assert settings.resolved_data_url == "s3://bucket/prefix/lake/"
    assert settings.redis_url == "redis://127.0.0.1:6379/0"


def test_a_development_key_is_generated_once_and_reused(clean_env: Path) -> None:
    with pytest.warns(UserWarning, match="QUARRY_SECRET_KEY is not set"):
        key = load_settings().fernet_keys[0]
    key_file = clean_env / ".quarry" / "secret.key"
    assert key_file.read_text().strip() == key
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    Fernet(key.encode())  # a usable key

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning: the key is reused
        assert load_settings().fernet_keys == [key]
    assert [p.name for p in key_file.parent.iterdir()] == ["secret.key"], "no temporary left"


def test_no_development_key_when_the_secret_key_is_set(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = Fernet.generate_key().decode()
    monkeypatch.setenv("QUARRY_SECRET_KEY", key)
    assert load_settings().fernet_keys == [key]
    assert not (clean_env / ".quarry").exists()


def test_processes_starting_together_share_one_development_key(clean_env: Path) -> None:
    script = "from quarry.settings import load_settings; print(load_settings().fernet_keys[0])"
    processes = [
        subprocess.Popen(
            [sys.executable, "-W", "ignore", "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    outputs = [p.communicate(timeout=60) for p in processes]
    assert all(p.returncode == 0 for p in processes), [err for _, err in outputs]
    keys = {out.strip() for out, _ in outputs}
    assert keys == {(clean_env / ".quarry" / "secret.key").read_text().strip()}


def test_an_unwritable_home_is_one_clear_error(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tests run as root, which ignores permission bits: a path under a regular file can
    # not be created by anyone.
    blocker = clean_env / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("QUARRY_HOME", str(blocker / "home"))
    settings = load_settings()  # reading settings touches nothing
    with pytest.raises(ConfigurationError, match=re.escape(f"cannot write to {blocker / 'home'}")):
        settings.ensure_home()
    with pytest.raises(ConfigurationError, match="development key"):
        _ = settings.fernet_keys


def test_a_bad_value_names_its_variable(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUARRY_DUCKDB_THREADS", "many")
    with pytest.raises(ConfigurationError, match=r"^QUARRY_DUCKDB_THREADS: "):
        load_settings()


@pytest.mark.parametrize(
    ("variable", "value", "fragment"),
    [
        # A negative retention would put the cutoff in the future: every file removed.
        ("QUARRY_EXPORT_RETENTION_DAYS", "-1", "greater than or equal to 0"),
        # Past a century, the housekeeper's date arithmetic overflowed on every tick.
        ("QUARRY_EXPORT_RETENTION_DAYS", "99999999", "less than or equal to 36500"),
        ("QUARRY_CHANGED_ROWS_RETENTION_DAYS", "1e300", "less than or equal to 36500"),
        ("QUARRY_QUERY_TIMEOUT_SECONDS", "inf", "less than or equal to"),
        ("QUARRY_ALERT_REPEAT_MINUTES", "1e30", "less than or equal to"),
    ],
)
def test_durations_are_bounded(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, fragment: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigurationError, match=rf"^{variable}: .*{fragment}"):
        load_settings()


def test_alert_variables_are_checked_when_read(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not load_settings().alerts_enabled
    monkeypatch.setenv("QUARRY_ALERT_EMAIL", "ops@example.com, oncall@example.com")
    with pytest.raises(ConfigurationError, match=r"QUARRY_ALERT_EMAIL: .*QUARRY_ALERT_SMTP_URL"):
        load_settings()
    monkeypatch.setenv("QUARRY_ALERT_SMTP_URL", "https://mailer:hidden-pass@mail.example.com")
    with pytest.raises(ConfigurationError, match="QUARRY_ALERT_SMTP_URL: ") as bad:
        load_settings()
    assert "hidden-pass" not in str(bad.value)
    monkeypatch.setenv("QUARRY_ALERT_SMTP_URL", "smtps://mailer:hidden-pass@mail.example.com")
    assert load_settings().alert_recipients == ["ops@example.com", "oncall@example.com"]
    monkeypatch.setenv("QUARRY_ALERT_WEBHOOK_URL", "hooks.example.com/x")
    with pytest.raises(ConfigurationError, match="QUARRY_ALERT_WEBHOOK_URL: "):
        load_settings()
    # Set but empty, as in an env file: no alerts.
    for name in ("QUARRY_ALERT_EMAIL", "QUARRY_ALERT_WEBHOOK_URL", "QUARRY_ALERT_SMTP_URL"):
        monkeypatch.setenv(name, "")
    assert not load_settings().alerts_enabled


def test_nothing_is_read_at_import(clean_env: Path) -> None:
    """Importing with a broken environment works; only load_settings() complains."""
    blocker = clean_env / "a-file"
    blocker.write_text("")
    env = os.environ | {
        "QUARRY_HOME": str(blocker / "home"),
        "QUARRY_DUCKDB_THREADS": "many",
        "QUARRY_ALLOW_PRIVATE_HOSTS": "perhaps",
        "QUARRY_DATABASE_URL": "postgresql+psycopg://postgres@127.0.0.1:1/nowhere",
    }
    modules = [
        "quarry.settings",
        "quarry.crypto",
        "registry.db",
        "registry.accounts",
        "registry.keys",
        "cli.accounts",
        "cli.keys",
        "cli.stores",
    ]
    imports = "; ".join(f"import {m}" for m in modules)
    result = subprocess.run(
        [sys.executable, "-c", imports], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr

    check = (
        "from quarry.settings import load_settings\n"
        "from quarry.errors import ConfigurationError\n"
        "try:\n    load_settings()\n"
        "except ConfigurationError as exc:\n    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("QUARRY_")


def test_processes_starting_together_each_check_the_home(clean_env: Path) -> None:
    # Server workers start at once: one's write check must not remove another's probe.
    settings = load_settings()

    def check() -> None:
        for _ in range(200):
            settings.ensure_home()

    assert errors_in_threads(check, 8) == []
    assert sorted(p.name for p in settings.home.iterdir()) == ["dagster"]
