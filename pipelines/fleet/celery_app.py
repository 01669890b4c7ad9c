"""The Celery app of a worker host's fleet workers (`quarry fleet-worker`): dagster-celery's
task, which executes one step of a run, on the broker and result backend of
QUARRY_REDIS_URL, with the settings that redeliver a dead worker's steps
(pipelines.fleet.executor.celery_settings)."""

from __future__ import annotations

from typing import Any

from celery import Celery

from pipelines.fleet.executor import celery_settings
from quarry.settings import Settings


def fleet_app(settings: Settings) -> Celery:
    """The app a fleet worker runs: the same broker, backend and settings as the runs'
    executor config (pipelines.fleet.executor.execution_config)."""
    from dagster_celery.make_app import make_app
    from dagster_celery.tasks import create_task

    url = settings.require_redis_url()
    app: Any = make_app(
        {
            "broker": url,
            "backend": url,
            "config_source": celery_settings(settings.fleet_visibility_timeout),
        }
    )
    create_task(app)
    return app
