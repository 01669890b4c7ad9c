"""A configuration's page in process: run now queues a job (Dagster is not running here),
the job table polls while a job is unfinished and stops once all have ended, a failed
job shows its error, pause/resume change the schedule as the API shows it, and times
show in the account's zone."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from exports.jobs.lifecycle import COMPLETED, FAILED, finish
from tests.api.console.conftest import Browser, ConsoleAccount, csrf_of
from tests.api.world import World
from tests.exports.conftest import apply_yaml, new_job


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


def test_times_show_in_the_accounts_zone_with_utc_kept_machine_readable(
    browser: Browser, console_account: ConsoleAccount, world: World
) -> None:
    """The console's account is in Europe/Berlin: 08:14 UTC in November is 09:14 there,
    08:14 UTC in July 10:14; the page names the zone and keeps UTC in `datetime`."""
    config_id = _config(
        world,
        console_account,
        {"name": "Console times", "entity_type": "customers", "format": "csv",
         "schedule": {"cron": "0 6 * * *", "timezone": "America/New_York"}},
    )  # fmt: skip
    new_job(
        world,
        config_id,
        status=COMPLETED,
        created_at=datetime(2026, 11, 27, 8, 14, 5, tzinfo=UTC),
        started_at=datetime(2026, 11, 27, 8, 14, 30, tzinfo=UTC),
        finished_at=datetime(2026, 7, 1, 8, 14, 59, tzinfo=UTC),
    )
    browser.sign_in(console_account.keys["all"])
    listing = browser.get("/console/exports").text
    row = listing.split("Console times")[1].split("</tr>")[0]
    assert '<time datetime="2026-11-27T08:14:05Z">2026-11-27 09:14 Europe/Berlin</time>' in row
    assert "UTC<" not in row
    page = browser.get(f"/console/exports/{config_id}").text
    last_run = page.split('id="last-run">')[1].split("</dd>")[0]
    assert "2026-11-27 09:14 Europe/Berlin" in last_run
    job = page.split('class="job"')[1].split("</tr>")[0]
    assert '<time datetime="2026-11-27T08:14:05Z">2026-11-27 09:14:05 Europe/Berlin</time>' in job
    assert '<time datetime="2026-11-27T08:14:30Z">2026-11-27 09:14:30 Europe/Berlin</time>' in job
    assert '<time datetime="2026-07-01T08:14:59Z">2026-07-01 10:14:59 Europe/Berlin</time>' in job
    # 06:00 in New York is 12:00 in Berlin, save the weeks the two switch clocks apart.
    next_run = page.split('id="next-run">')[1].split("</dd>")[0]
    shown = re.search(r'datetime="([^"]+)">(\S+ \S+) Europe/Berlin<', next_run)
    assert shown is not None
    instant = datetime.fromisoformat(shown[1])
    assert instant > datetime.now(UTC)
    assert instant.astimezone(ZoneInfo("America/New_York")).strftime("%H:%M") == "06:00"
    berlin = instant.astimezone(ZoneInfo("Europe/Berlin")).strftime("%Y-%m-%d %H:%M")
    assert shown[2] == berlin
