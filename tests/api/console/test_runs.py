"""A configuration's page in process: run now queues a job (Dagster is not running here),
the job table polls while a job is unfinished and stops once all have ended, a failed
job shows its error, and pause/resume change the schedule as the API shows it."""

from __future__ import annotations

from typing import Any

from exports.jobs.lifecycle import FAILED, finish
from tests.api.console.conftest import Browser, ConsoleAccount, csrf_of
from tests.api.world import World
from tests.exports.conftest import apply_yaml


def _config(world: World, account: ConsoleAccount, entry: dict[str, Any]) -> str:
    world.accounts.setdefault("console", account.account_id)
    return apply_yaml(world, "console", {"exports": [entry]})[entry["name"]]


def test_run_now_queues_a_job_and_the_table_polls_until_it_ends(
    browser: Browser, console_account: ConsoleAccount, world: World
) -> None:
    config_id = _config(
        world,
        console_account,
        {"name": "Console runs", "entity_type": "products", "format": "csv"},
    )
    browser.sign_in(console_account.keys["all"])
    page = browser.get(f"/console/exports/{config_id}")
    assert "No runs yet." in page.text and 'hx-trigger="every 2s"' not in page.text
    ran = browser.request(
        "POST", f"/console/exports/{config_id}/run", data={"csrf_token": csrf_of(page)}
    )
    assert ran.status_code == 303
    jobs = browser.get(f"/v1/export-jobs?export_id={config_id}", key=console_account.keys["all"])
    (job,) = jobs.json()["data"]
    assert job["status"] == "queued"
    table = browser.get(f"/console/exports/{config_id}/jobs")
    assert 'hx-trigger="every 2s"' in table.text
    assert f'data-job="{job["job_id"]}" data-status="queued"' in table.text
    assert '<dd id="total-runs">1</dd>' in table.text
    with world.registry.session() as session:
        finish(session, job["job_id"], FAILED, error="the S3 bucket refused the upload")
    ended = browser.get(f"/console/exports/{config_id}/jobs")
    assert 'hx-trigger="every 2s"' not in ended.text  # nothing left to watch
    assert 'data-status="failed"' in ended.text
    assert "the S3 bucket refused the upload" in ended.text
    assert "Download" not in ended.text
    # A failed job has no file: the API's 409 as a page; another account's key: not found.
    refused = browser.get(f"/console/jobs/{job['job_id']}/download")
    assert refused.status_code == 409 and "the job failed and has no file" in refused.text
    other = Browser(browser.app, browser._portal)
    try:
        other.sign_in(world.keys["b_all"])
        assert other.get(f"/console/jobs/{job['job_id']}/download").status_code == 404
    finally:
        other.close()


def test_pause_and_resume_the_schedule(
    browser: Browser, console_account: ConsoleAccount, world: World
) -> None:
    config_id = _config(
        world,
        console_account,
        {"name": "Console weekly", "entity_type": "orders", "format": "csv",
         "schedule": {"cron": "0 6 * * 1"}},
    )  # fmt: skip
    key = console_account.keys["all"]
    browser.sign_in(key)
    page = browser.get(f"/console/exports/{config_id}")
    assert "Pause schedule" in page.text
    paused = browser.request(
        "POST", f"/console/exports/{config_id}/pause", data={"csrf_token": csrf_of(page)}
    )
    assert paused.status_code == 303
    assert browser.get(f"/v1/exports/{config_id}", key=key).json()["schedule"]["paused"] is True
    page = browser.get(f"/console/exports/{config_id}")
    assert "Resume schedule" in page.text and "paused" in page.text
    browser.request(
        "POST", f"/console/exports/{config_id}/resume", data={"csrf_token": csrf_of(page)}
    )
    assert browser.get(f"/v1/exports/{config_id}", key=key).json()["schedule"]["paused"] is False
    # Only a changed-rows export has "Start over"; on another, the API's 409 is a page.
    assert "Start over" not in page.text
    refused = browser.request(
        "POST", f"/console/exports/{config_id}/reset", data={"csrf_token": csrf_of(page)}
    )
    assert refused.status_code == 409 and "nothing to reset" in refused.text


def test_a_bundle_is_not_turned_into_something_else_by_the_form(
    browser: Browser, console_account: ConsoleAccount, world: World
) -> None:
    entry = {
        "name": "Console bundle", "entity_type": "bundle", "format": "zip",
        "parts": [{"entity_type": "orders"}, {"entity_type": "customers"}],
    }  # fmt: skip
    config_id = _config(world, console_account, entry)
    browser.sign_in(console_account.keys["all"])
    page = browser.get(f"/console/exports/{config_id}/edit")
    assert page.status_code == 409
    assert "edited in YAML" in page.text and "entity_type: bundle" in page.text
    forced = browser.request(
        "POST",
        f"/console/exports/{config_id}/edit",
        data={"csrf_token": csrf_of(page), "entity_type": "orders", "action": "save"},
    )
    assert forced.status_code == 409
    detail = browser.get(f"/v1/exports/{config_id}", key=console_account.keys["all"]).json()
    assert detail["entity_type"] == "bundle" and len(detail["parts"]) == 2
