"""The sensor of scheduled exports. The reaper and the reconciler are not sensors: sensors
execute in the code server (the worker role), so they run in the housekeeper instead
(pipelines.housekeeping)."""

import hashlib
import json
from datetime import datetime

from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from exports.configs.saved import require_config
from exports.configs.schedules import due_exports, paused_exports
from exports.jobs.lifecycle import create_job
from pipelines.exports.jobs import export
from pipelines.exports.runs import changed_rows_config, run_tags
from pipelines.resources import QuarryResource
from registry.models import utcnow


@sensor(
    job=export,
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.RUNNING,
    description="Runs each configuration on its cron and zone, read from the registry at "
    "every tick; run key = configuration + scheduled time. Paused configurations (quarry "
    "exports pause) are skipped: the tick after a pause or resume names them in its log, a "
    "skipped due tick is logged, and a tick with nothing due names them as its skip reason.",
)
def scheduled_exports(context: SensorEvaluationContext, quarry: QuarryResource) -> SensorResult:
    now = utcnow()
    # The first tick starts the clock: schedules do not backfill from before the sensor ran.
    since, paused_before = read_cursor(context.cursor, now)
    requests = []
    paused = paused_exports(quarry.registry)
    if _digest(paused) != paused_before:
        # Once per change, not every 30 s: the tick's log also prints in the daemon's console.
        if paused:
            context.log.info("paused (not run on schedule): %s", ", ".join(paused))
        elif paused_before is not None:
            context.log.info("no export paused")
    skipped = []
    for due in due_exports(quarry.registry, since, now):
        if due.paused:
            skipped.append(f"{due.config_name} at {due.scheduled_at.isoformat()}")
            continue
        with quarry.registry.session() as session:
            # The same idempotency key for the same tick: a re-evaluated tick finds its job.
            job, _ = create_job(
                session,
                require_config(session, due.config_id),
                idempotency_key=f"schedule:{due.scheduled_at.isoformat()}",
            )
            job_id = job.id
        tags = run_tags(job_id, due.config_name, changed_rows_config(quarry.registry, job_id))
        requests.append(RunRequest(run_key=due.run_key, tags=tags))
    if skipped:
        context.log.info("skipped paused ticks: %s", "; ".join(skipped))
    skip_reason = None
    if not requests and paused:
        skip_reason = f"no export due; paused: {', '.join(paused)}"
    cursor = json.dumps({"since": now.isoformat(), "paused": _digest(paused)})
    return SensorResult(run_requests=requests, cursor=cursor, skip_reason=skip_reason)


def read_cursor(cursor: str | None, now: datetime) -> tuple[datetime, str | None]:
    """The time the previous tick looked up to and a digest of the paused exports it saw
    (None when not known: the first tick, or a cursor of an earlier Quarry, which was the
    time alone)."""
    if not cursor:
        return now, None
    if not cursor.startswith("{"):
        return datetime.fromisoformat(cursor), None
    state = json.loads(cursor)
    return datetime.fromisoformat(state["since"]), str(state["paused"])


def _digest(names: list[str]) -> str:
    # A digest, not the names: a fleet may pause thousands, and the cursor is stored per tick.
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]


SENSORS = [scheduled_exports]
