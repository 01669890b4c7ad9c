"""A small, exactly known warehouse for the export tests (the API tests' world: accounts
a, b, c; stores st_a1..st_a3 with st_a3 hostile, st_b1, st_c1), and helpers to apply
configurations and run jobs in this process."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from exports.config import validate_document
from exports.configs import account_context, apply_definitions
from exports.execute import ExportFailed, execute_job
from exports.jobs import create_job
from quarry.settings import Settings, load_settings
from registry.models import ExportConfig
from tests.api.conftest import isolated_env
from tests.api.world import World, build_world

SHM = Path("/dev/shm")


@pytest.fixture(scope="session")
def export_world() -> Iterator[World]:
    # On tmpfs when there is one: the world's Delta commits take a third of the time.
    fast = SHM.is_dir() and os.access(SHM, os.W_OK)
    base = Path(tempfile.mkdtemp(prefix="quarry-exports-", dir=SHM if fast else None))
    with isolated_env(str(base / "quarry-home")):
        settings = load_settings()
    world = build_world(settings)
    yield world
    world.registry.dispose()
    shutil.rmtree(base, ignore_errors=True)


def apply_yaml(world: World, account: str, document: dict) -> dict[str, str]:
    """Apply configurations (a parsed YAML document) to account `account` ("a", "b", "c");
    returns name -> configuration id."""
    with world.registry.session() as session:
        context = account_context(session, world.settings, world.accounts[account])
        definitions = validate_document(document, context, source="test.yaml")
        applied = apply_definitions(session, world.settings, world.accounts[account], definitions)
    return {item.name: item.id for item in applied}


def run_config(world: World, config_id: str, **kwargs: object) -> tuple[str, str | None]:
    """Create a job of the configuration and execute it here; (job id, failure or None)."""
    with world.registry.session() as session:
        job, _ = create_job(session, session.get(ExportConfig, config_id))
        job_id = job.id
    try:
        execute_job(world.settings, world.registry, job_id, f"run-{job_id}", **kwargs)  # type: ignore[arg-type]
    except ExportFailed as exc:
        return job_id, exc.reason
    return job_id, None


def stored(settings: Settings, world: World, job_id: str) -> Path:
    from registry.models import ExportJob

    with world.registry.session() as session:
        job = session.get(ExportJob, job_id)
        assert job is not None and job.file_path is not None
        return settings.exports_dir / job.file_path
