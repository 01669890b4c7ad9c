"""The four export endpoints in process: scopes, visibility (the same 404 for what a key
may not see), 422 for the schedule-only type, 202 and idempotency, job states, downloads
(409 before a file, the real content type and Content-Disposition, 404 once removed).

Dagster is not running here (QUARRY_DAGSTER_URL points at a closed port): jobs stay
queued, and files are produced by running the job in this process, as its run would."""

from __future__ import annotations

import hashlib
from urllib.parse import urlsplit

import pytest
from anyio.from_thread import BlockingPortal
from dagster import DagsterInstance

from api.main import create_app
from api.schemas import ExportDetail, ExportJobPage
from destinations.signed_links import download_url, sign
from exports.files.cleanup import remove_expired_files, remove_files_for_store
from exports.jobs.execute import execute_job
from exports.jobs.lifecycle import FAILED, finish
from registry.keys import create_key
from tests.api.conftest import Client, assert_problem
from tests.api.world import World
from tests.exports.conftest import apply_yaml

SHEET = {
    "kind": "google_sheets",
    "settings": {"spreadsheet_id": "s" * 20},
    "credentials": {"service_account": {"env": "GOOGLE_SA"}},
}


@pytest.fixture(scope="module")
def configs(world: World) -> dict[str, str]:
    ids = apply_yaml(
        world,
        "a",
        {
            "exports": [
                {"name": "API all stores", "entity_type": "orders", "format": "csv"},
                {"name": "API store one", "entity_type": "orders", "format": "xlsx",
                 "stores": ["st_a1"], "file_name": "Ventes été {store}"},
                {"name": "API bundle", "entity_type": "bundle", "format": "zip",
                 "stores": ["st_a1"], "parts": [{"entity_type": "customers"}]},
                {"name": "API sheet", "entity_type": "orders", "format": "csv",
                 "destination": SHEET, "schedule": {"cron": "0 * * * *"}},
            ]
        },
    )  # fmt: skip
    ids.update(apply_yaml(world, "b", {"exports": [
        {"name": "B orders", "entity_type": "orders", "format": "csv"}]}))  # fmt: skip
    return ids


def names(client: Client, key: str) -> set[str]:
    response = client.get("/v1/exports", key=key)
    assert response.status_code == 200, response.text
    return {c["name"] for c in response.json()["data"]}


def test_a_key_sees_configurations_of_its_stores_only(
    client: Client, world: World, configs: dict[str, str]
) -> None:
    every = {"API all stores", "API store one", "API bundle", "API sheet"}
    assert every <= names(client, world.keys["a_all"])
    assert "B orders" not in names(client, world.keys["a_all"])
    assert names(client, world.keys["b_all"]) >= {"B orders"}
    listed = client.get("/v1/exports", key=world.keys["a_exports"]).json()["data"]
    sheet = next(c for c in listed if c["name"] == "API sheet")
    assert sheet == {
        "id": configs["API sheet"], "name": "API sheet", "entity_type": "orders",
        "format": "csv", "runnable_via_api": False, "last_run_at": None,
        "last_run_status": None, "total_runs": 0,
    }  # fmt: skip


def test_scopes(client: Client, world: World, configs: dict[str, str]) -> None:
    job_path = "/v1/export-jobs/job_x"
    for method, path in (
        ("GET", "/v1/exports"),
        ("POST", f"/v1/exports/{configs['API all stores']}/run"),
        ("GET", job_path),
        ("GET", job_path + "/download"),
    ):
        response = client.request(method, path, key=world.keys["a_read"])
        assert_problem(response, 403, "Insufficient scope")
        assert_problem(client.request(method, path), 401, "Unauthorized")
        response = client.request(method, path, key=world.keys["c_exports"])
        assert_problem(response, 403, "Plan upgrade required")


def test_unseen_configurations_give_the_same_404(
    client: Client, world: World, configs: dict[str, str]
) -> None:
    unknown = client.request("POST", "/v1/exports/exp_nope/run", key=world.keys["a_all"])
    other = client.request(
        "POST", f"/v1/exports/{configs['B orders']}/run", key=world.keys["a_all"]
    )
    assert (
        assert_problem(unknown, 404, "Not found")["detail"]
        == assert_problem(other, 404, "Not found")["detail"]
    )


def test_a_schedule_only_type_is_422_naming_it(
    client: Client, world: World, configs: dict[str, str]
) -> None:
    response = client.request(
        "POST", f"/v1/exports/{configs['API sheet']}/run", key=world.keys["a_all"]
    )
    body = assert_problem(response, 422, "Unprocessable export")
    assert "live sheet sync" in body["detail"] and "google_sheets" in body["detail"]


def test_a_run_with_a_body_is_refused_and_queues_nothing(
    client: Client, world: World, configs: dict[str, str]
) -> None:
    path = f"/v1/exports/{configs['API all stores']}/run"
    key = world.keys["a_all"]
    history = f"/v1/export-jobs?export_id={configs['API all stores']}"
    before = client.get(history, key=key).json()["data"]
    # A client sending stores or options expects them to count: they would not.
    refused = client.request("POST", path, key=key, json={"store_ids": ["st_x"]})
    body = assert_problem(refused, 400, "Invalid request")
    assert body["errors"] == [{"field": "body", "message": "this endpoint takes no request body"}]
    assert client.get(history, key=key).json()["data"] == before
    # What HTTP clients send for "no body" runs it.
    for content in (b"{}", b"null", b" "):
        response = client.request("POST", path, key=key, content=content)
        assert response.status_code == 202, (content, response.text)


def test_run_poll_download(client: Client, world: World, configs: dict[str, str]) -> None:
    key = world.keys["a_all"]
    response = client.request("POST", f"/v1/exports/{configs['API store one']}/run", key=key)
    assert response.status_code == 202, response.text
    job_id = response.json()["job_id"]
    assert response.json() == {"job_id": job_id, "status": "queued"}
    assert response.headers["location"] == f"/v1/export-jobs/{job_id}"
    # ... and the document says so, next to the headers every /v1 answer has.
    documented = client.get("/openapi.json").json()["paths"]["/v1/exports/{config_id}/run"]
    headers = documented["post"]["responses"]["202"]["headers"]
    assert headers["Location"]["required"] is True and "X-Request-Id" in headers
    job = client.get(f"/v1/export-jobs/{job_id}", key=key).json()
    assert job["status"] == "queued" and job["file_name"] is None and job["error"] is None
    assert job["name"] == "API store one" and job["entity_type"] == "orders"
    early = client.get(f"/v1/export-jobs/{job_id}/download", key=key)
    assert_problem(early, 409, "Conflict")

    execute_job(world.settings, world.registry, job_id, "run-in-test")
    job = client.get(f"/v1/export-jobs/{job_id}", key=key).json()
    assert job["status"] == "completed" and job["file_name"] == "Ventes été Main Street.xlsx"
    download = client.get(f"/v1/export-jobs/{job_id}/download", key=key)
    assert download.status_code == 200
    assert download.headers["content-type"] == (
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    )
    assert download.headers["content-disposition"] == (
        'attachment; filename="Ventes ete Main Street.xlsx"; '
        "filename*=UTF-8''Ventes%20%C3%A9t%C3%A9%20Main%20Street.xlsx"
    )
    assert download.content[:2] == b"PK"
    # Byte ranges of a file on disk; a Range header that cannot be read is ignored.
    path = f"/v1/export-jobs/{job_id}/download"
    ranged = client.get(path, key=key, headers={"Range": "bytes=0-9"})
    assert ranged.status_code == 206 and ranged.content == download.content[:10]
    for unreadable in ("bytes=abc", "items=0-9", "bytes=9-2"):
        whole = client.get(path, key=key, headers={"Range": unreadable})
        assert whole.status_code == 200 and whole.content == download.content, unreadable
    past = client.get(path, key=key, headers={"Range": f"bytes={len(download.content)}-"})
    detail = assert_problem(past, 416, "Range not satisfiable")["detail"]
    assert f"({len(download.content)} bytes)" in detail
    assert past.headers["content-range"] == f"bytes */{len(download.content)}"
    listed = client.get("/v1/exports", key=key).json()["data"]
    summary = next(c for c in listed if c["name"] == "API store one")
    assert summary["total_runs"] >= 1 and summary["last_run_status"] == "completed"

    # A key without st_a1 does not see the job; after cleanup the download is gone.
    assert_problem(client.get(f"/v1/export-jobs/{job_id}", key=world.keys["b_all"]), 404,
                   "Not found")  # fmt: skip
    remove_files_for_store(world.settings, world.registry, "st_a1", "store_resynced")
    gone = client.get(f"/v1/export-jobs/{job_id}/download", key=key)
    detail = assert_problem(gone, 404, "Not found")["detail"]
    assert "a store it holds was fully re-synced" in detail and "run the export again" in detail
    after = client.get(f"/v1/export-jobs/{job_id}", key=key).json()
    assert after["status"] == "completed" and after["file_removed_at"] is not None


def test_after_cleanup_the_download_says_the_file_was_too_old(
    client: Client, world: World, configs: dict[str, str]
) -> None:
    # The 404 used to blame a re-sync or a removed store for every removal.
    key = world.keys["a_all"]
    job_id = client.request("POST", f"/v1/exports/{configs['API store one']}/run", key=key).json()[
        "job_id"
    ]
    execute_job(world.settings, world.registry, job_id, "run-in-test")
    assert client.get(f"/v1/export-jobs/{job_id}/download", key=key).status_code == 200
    assert job_id in remove_expired_files(world.settings, world.registry, 0)
    gone = client.get(f"/v1/export-jobs/{job_id}/download", key=key)
    detail = assert_problem(gone, 404, "Not found")["detail"]
    assert "older than the retention period (QUARRY_EXPORT_RETENTION_DAYS or" in detail
    assert "re-synced" not in detail


def test_idempotency_key(client: Client, world: World, configs: dict[str, str]) -> None:
    key = world.keys["a_all"]
    path = f"/v1/exports/{configs['API bundle']}/run"
    first = client.request("POST", path, key=key, headers={"Idempotency-Key": "abc-1"})
    again = client.request("POST", path, key=key, headers={"Idempotency-Key": "abc-1"})
    other = client.request("POST", path, key=key, headers={"Idempotency-Key": "abc-2"})
    plain = client.request("POST", path, key=key)
    assert first.status_code == again.status_code == 202
    assert first.json() == again.json() and again.headers["idempotent-replayed"] == "true"
    assert len({first.json()["job_id"], other.json()["job_id"], plain.json()["job_id"]}) == 3
    bad = client.request("POST", path, key=key, headers={"Idempotency-Key": "x" * 300})
    assert_problem(bad, 400, "Invalid request")


def test_unknown_parameters_are_rejected(client: Client, world: World) -> None:
    response = client.get("/v1/exports?page=2", key=world.keys["a_all"])
    assert_problem(response, 400, "Invalid request")


def test_the_app_disposes_of_its_dagster_instance_when_it_stops(
    world: World, portal: BlockingPortal
) -> None:
    app = create_app(world.settings)
    runs = app.state.export_runs
    disposed: list[DagsterInstance] = []

    async def lifetime() -> DagsterInstance:
        async with app.router.lifespan_context(app):
            instance = runs.instance()
            dispose = instance.dispose
            instance.dispose = lambda: (disposed.append(instance), dispose())[-1]  # type: ignore[method-assign]
        return instance

    first = portal.call(lifetime)
    try:
        assert disposed == [first]
        # A later lifespan (test clients start several) opens a new one on demand.
        assert runs.instance() is not first
    finally:
        runs.close()
        app.state.reader.close()
        app.state.registry.dispose()


def test_a_signed_link_downloads_without_a_key(
    client: Client, world: World, configs: dict[str, str]
) -> None:
    key = world.keys["a_all"]
    response = client.request("POST", f"/v1/exports/{configs['API all stores']}/run", key=key)
    job_id = response.json()["job_id"]
    execute_job(world.settings, world.registry, job_id, "run-in-test")
    keyed = client.get(f"/v1/export-jobs/{job_id}/download", key=key)
    assert keyed.status_code == 200

    url, _ = download_url(world.settings, job_id, lifetime_seconds=3600)
    followed = client.get(urlsplit(url).path)
    assert followed.status_code == 200, followed.text
    assert followed.content == keyed.content
    assert followed.headers["content-type"] == keyed.headers["content-type"]

    token = urlsplit(url).path.rsplit("/", 1)[1]
    for bad in (token[:-3] + "AAA", "v1.e30.AAAA", "not-a-token", token + "x"):
        assert_problem(client.get(f"/v1/downloads/{bad}"), 404, "Download link not valid")
    # A genuine link to a job that does not exist says no more than a forged one.
    unknown = sign("job_nope", secret_keys=world.settings.fernet_keys, expires_at=2**40)
    assert_problem(client.get(f"/v1/downloads/{unknown}"), 404, "Download link not valid")
    expired, _ = download_url(world.settings, job_id, lifetime_seconds=60, now=1_000_000)
    gone = assert_problem(client.get(urlsplit(expired).path), 410, "Download link expired")
    assert "expired" in gone["detail"]


def test_downloading_a_failed_job_says_it_failed_and_why(
    client: Client, world: World, configs: dict[str, str]
) -> None:
    key = world.keys["a_all"]
    response = client.request("POST", f"/v1/exports/{configs['API all stores']}/run", key=key)
    job_id = response.json()["job_id"]
    with world.registry.session() as session:
        finish(session, job_id, FAILED, error="the SFTP server refused the password")
    refused = client.get(f"/v1/export-jobs/{job_id}/download", key=key)
    detail = assert_problem(refused, 409, "Conflict")["detail"]
    assert "failed" in detail and "refused the password" in detail
    assert "poll" not in detail


@pytest.fixture(scope="module")
def a_st2_key(world: World) -> str:
    """An exports key of account a that reads st_a2 only."""
    with world.registry.session() as session:
        account = world.accounts["a"]
        return create_key(
            session, account_id=account, scopes=["exports"], store_ids=["st_a2"]
        ).secret


def test_one_configuration_shows_what_it_reads_and_never_its_credentials(
    client: Client, world: World, configs: dict[str, str], a_st2_key: str
) -> None:
    key = world.keys["a_all"]
    sheet = client.get(f"/v1/exports/{configs['API sheet']}", key=key)
    assert sheet.status_code == 200, sheet.text
    body = sheet.json()
    ExportDetail.model_validate(body)  # what /openapi.json documents
    assert body["id"] == configs["API sheet"] and body["name"] == "API sheet"
    assert body["destination"]["kind"] == "google_sheets"
    # The settings as validated (defaults filled in), which hold no secret.
    assert body["destination"]["settings"]["spreadsheet_id"] == "s" * 20
    assert body["destination"]["has_credentials"] is True
    assert "GOOGLE_SA" not in sheet.text and '"credentials"' not in sheet.text
    assert body["schedule"] == {
        "cron": "0 * * * *", "timezone": body["schedule"]["timezone"], "paused": False
    }  # fmt: skip
    assert body["runnable_via_api"] is False
    one = client.get(f"/v1/exports/{configs['API store one']}", key=key).json()
    assert one["stores"] == ["st_a1"] and one["store_ids"] == ["st_a1"]
    assert one["file_name"] == "Ventes été {store}" and one["format"] == "xlsx"
    assert one["parts"][0]["entity_type"] == "orders" and one["schedule"] is None
    # Another account's configuration, or one beyond the key's stores: the unknown 404.
    unknown = assert_problem(client.get("/v1/exports/exp_nope", key=key), 404, "Not found")
    for hidden in (
        client.get(f"/v1/exports/{configs['B orders']}", key=key),
        client.get(f"/v1/exports/{configs['API all stores']}", key=a_st2_key),
    ):
        assert assert_problem(hidden, 404, "Not found")["detail"] == unknown["detail"]


def test_a_run_answers_where_to_poll(client: Client, world: World, configs: dict[str, str]) -> None:
    key = world.keys["a_all"]
    response = client.request("POST", f"/v1/exports/{configs['API bundle']}/run", key=key)
    assert response.status_code == 202
    assert response.headers["location"] == f"/v1/export-jobs/{response.json()['job_id']}"
    polled = client.get(response.headers["location"], key=key)
    assert polled.status_code == 200 and polled.json()["export_id"] == configs["API bundle"]


def test_the_run_history_is_newest_first_filtered_and_paged(
    client: Client, world: World, configs: dict[str, str], a_st2_key: str
) -> None:
    key = world.keys["a_all"]
    started = [
        client.request("POST", f"/v1/exports/{configs[name]}/run", key=key).json()["job_id"]
        for name in ("API store one", "API all stores", "API store one")
    ]
    with world.registry.session() as session:
        finish(session, started[0], FAILED, error="refused")
    history = client.get("/v1/export-jobs", key=key, params={"page_size": 250}).json()
    ExportJobPage.model_validate(history)  # what /openapi.json documents
    ids = [job["job_id"] for job in history["data"]]
    assert ids.index(started[2]) < ids.index(started[1]) < ids.index(started[0])
    created = [job["created_at"] for job in history["data"]]
    assert created == sorted(created, reverse=True)
    assert history["page"] == 1 and history["has_more"] is False

    mine = client.get(
        "/v1/export-jobs", key=key, params={"export_id": configs["API store one"]}
    ).json()["data"]
    assert {j["export_id"] for j in mine} == {configs["API store one"]}
    assert {started[0], started[2]} <= {j["job_id"] for j in mine}
    failed = client.get("/v1/export-jobs", key=key, params={"status": "failed"}).json()["data"]
    assert started[0] in {j["job_id"] for j in failed}
    assert {j["status"] for j in failed} == {"failed"}

    first = client.get("/v1/export-jobs", key=key, params={"page_size": 1}).json()
    second = client.get("/v1/export-jobs", key=key, params={"page_size": 1, "page": 2}).json()
    assert first["has_more"] is True and len(first["data"]) == 1
    assert [first["data"][0]["job_id"], second["data"][0]["job_id"]] == ids[:2]

    # A key without st_a1 sees none of the jobs holding st_a1's data.
    narrow = client.get("/v1/export-jobs", key=a_st2_key).json()["data"]
    assert not {started[0], started[1], started[2]} & {j["job_id"] for j in narrow}
    other = client.get("/v1/export-jobs", key=world.keys["b_all"]).json()["data"]
    assert not set(ids) & {j["job_id"] for j in other}


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"status": "done"}, "status"),
        ({"page": "0"}, "page"),
        ({"page_size": "251"}, "page_size"),
        ({"sort": "asc"}, "sort"),
    ],
)
def test_the_run_history_refuses_bad_parameters(
    client: Client, world: World, params: dict[str, str], field: str
) -> None:
    response = client.get("/v1/export-jobs", key=world.keys["a_all"], params=params)
    body = assert_problem(response, 400, "Invalid request")
    assert body["errors"][0]["field"] == field


def test_the_run_history_of_an_unseen_configuration_is_not_found(
    client: Client, world: World, configs: dict[str, str]
) -> None:
    response = client.get(
        "/v1/export-jobs", key=world.keys["a_all"], params={"export_id": configs["B orders"]}
    )
    assert_problem(response, 404, "Not found")


def test_pause_and_resume_one_schedule(
    client: Client, world: World, configs: dict[str, str]
) -> None:
    key = world.keys["a_all"]
    sheet = f"/v1/exports/{configs['API sheet']}"
    paused = client.request("POST", f"{sheet}/pause", key=key)
    assert paused.status_code == 200, paused.text
    ExportDetail.model_validate(paused.json())
    assert paused.json()["schedule"]["paused"] is True
    assert client.get(sheet, key=key).json()["schedule"]["paused"] is True
    # Idempotent.
    assert client.request("POST", f"{sheet}/pause", key=key).json()["schedule"]["paused"]
    resumed = client.request("POST", f"{sheet}/resume", key=key)
    assert resumed.status_code == 200 and resumed.json()["schedule"]["paused"] is False
    assert client.get(sheet, key=key).json()["schedule"]["paused"] is False
    # Nothing to pause or resume without a schedule.
    for action in ("pause", "resume"):
        body = assert_problem(
            client.request("POST", f"/v1/exports/{configs['API bundle']}/{action}", key=key),
            409,
            "Conflict",
        )
        assert f"has no schedule to {action}" in body["detail"]
    # Scope exports, the same 404 for what the key may not see, no body.
    for action in ("pause", "resume"):
        path = f"{sheet}/{action}"
        assert_problem(client.request("POST", path, key=world.keys["a_read"]), 403,
                       "Insufficient scope")  # fmt: skip
        hidden = client.request("POST", f"/v1/exports/{configs['B orders']}/{action}", key=key)
        assert_problem(hidden, 404, "Not found")
        refused = client.request("POST", path, key=key, json={"paused": True})
        assert_problem(refused, 400, "Invalid request")


def test_a_paused_export_still_runs_by_hand(
    client: Client, world: World, configs: dict[str, str]
) -> None:
    key = world.keys["a_all"]
    ids = apply_yaml(world, "a", {"exports": [
        {"name": "API paused", "entity_type": "orders", "format": "csv", "stores": ["st_a1"],
         "schedule": {"cron": "0 6 * * *"}}]})  # fmt: skip
    path = f"/v1/exports/{ids['API paused']}"
    assert client.request("POST", f"{path}/pause", key=key).status_code == 200
    response = client.request("POST", f"{path}/run", key=key)
    assert response.status_code == 202, response.text


def test_a_jobs_manifest_describes_its_file(
    client: Client, world: World, configs: dict[str, str]
) -> None:
    key = world.keys["a_all"]
    ids = apply_yaml(world, "a", {"exports": [
        {"name": "API jsonl", "entity_type": "orders", "format": "jsonl", "stores": ["st_a1"],
         "columns": ["id", "total_price"]}]})  # fmt: skip
    job_id = client.request("POST", f"/v1/exports/{ids['API jsonl']}/run", key=key).json()["job_id"]
    early = client.get(f"/v1/export-jobs/{job_id}/manifest", key=key)
    assert "file_name" in assert_problem(early, 409, "Conflict")["detail"]
    execute_job(world.settings, world.registry, job_id, "run-in-test")
    manifest = client.get(f"/v1/export-jobs/{job_id}/manifest", key=key)
    assert manifest.status_code == 200, manifest.text
    body = manifest.json()
    download = client.get(f"/v1/export-jobs/{job_id}/download", key=key)
    assert download.headers["content-type"].startswith("application/jsonl")
    assert body["file"]["sha256"] == hashlib.sha256(download.content).hexdigest()
    assert body["file"]["bytes"] == len(download.content)
    assert body["row_count"] == len(download.content.splitlines()) == 7
    assert body["rows"] == "all" and body["job_id"] == job_id
    assert body["stores"][0]["store_id"] == "st_a1" and body["stores"][0]["snapshot"] >= 0
    assert body["parts"][0]["dataset"] == "orders" and body["parts"][0]["rows"] == 7
    assert [c["name"] for c in body["parts"][0]["columns"]] == ["id", "total_price"]
    hidden = client.get(f"/v1/export-jobs/{job_id}/manifest", key=world.keys["b_all"])
    assert_problem(hidden, 404, "Not found")


def test_reset_starts_a_changed_rows_export_over(
    client: Client, world: World, configs: dict[str, str]
) -> None:
    key = world.keys["a_all"]
    ids = apply_yaml(world, "a", {"exports": [
        {"name": "API changes", "entity_type": "orders", "format": "csv", "stores": ["st_a1"],
         "rows": "changed"}]})  # fmt: skip
    path = f"/v1/exports/{ids['API changes']}"
    shown = client.get(path, key=key).json()
    assert shown["rows"] == "changed" and shown["parts"][0]["columns"][0]["field"] == "id"
    reset = client.request("POST", f"{path}/reset", key=key)
    assert reset.status_code == 200 and reset.json()["rows"] == "changed"
    every = client.request("POST", f"/v1/exports/{configs['API bundle']}/reset", key=key)
    assert "rows: all" in assert_problem(every, 409, "Conflict")["detail"]
    assert_problem(client.request("POST", f"{path}/reset", key=world.keys["a_read"]), 403,
                   "Insufficient scope")  # fmt: skip
    # Refused while a job of it waits: that run would record its end as the new start.
    assert client.request("POST", f"{path}/run", key=key).status_code == 202
    busy = client.request("POST", f"{path}/reset", key=key)
    assert "queued or running" in assert_problem(busy, 409, "Conflict")["detail"]
