"""Where a fleet run's steps execute, chosen per run in its run config: in the run's own
process (one host; the default), or as Celery tasks that the Celery workers of every worker
host take from Redis (dagster-celery).

The Celery settings are what make a worker's death lose nothing (measured: with
dagster-celery's defaults the steps of a killed worker were lost and the run hung):
- task_acks_late: a task is acknowledged when it ends, not when a worker takes it;
- task_reject_on_worker_lost: a task whose worker process died goes back to the queue;
- worker_prefetch_multiplier 1: a worker holds one task beyond the one it runs, so a dead
  host strands few;
- the Redis transport's visibility_timeout: a task taken and not acknowledged within it is
  given to another worker. A killed *host* never rejects anything, so this is what brings
  its tasks back; a step must end well within it (a batch is sized for that,
  pipelines.fleet.batches), or it is delivered twice while it still runs. Steps are
  idempotent: a store's pages are upserts and its cursor moves after each commit.
"""

from __future__ import annotations

from typing import Any

from dagster import (
    Executor,
    Field,
    InitExecutorContext,
    Permissive,
    Selector,
    executor,
    in_process_executor,
    multiple_process_executor_requirements,
)
from dagster._core.definitions.executor_definition import ExecutorConfig, ExecutorRequirement

from quarry.settings import Settings

# Seconds a taken task may stay unacknowledged before Redis gives it to another worker.
VISIBILITY_TIMEOUT_SECONDS = 600


def celery_settings(visibility_timeout: int = VISIBILITY_TIMEOUT_SECONDS) -> dict[str, Any]:
    """Celery's settings for the orchestrating side and the workers alike."""
    return {
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "broker_transport_options": {
            "visibility_timeout": visibility_timeout,
            # Look for abandoned tasks often enough that one is back soon after the
            # timeout (kombu's default looks every 100 s).
            "unacked_restore_interval": max(1, min(10, visibility_timeout // 10)),
            "unacked_restore_throttle": 1,
        },
        "result_backend_transport_options": {"visibility_timeout": visibility_timeout},
        "broker_connection_retry_on_startup": True,
        "worker_hijack_root_logger": False,
    }


def execution_config(
    settings: Settings, *, visibility_timeout: int | None = None
) -> dict[str, Any]:
    """The `execution` part of a fleet run's config: Celery when QUARRY_FLEET_EXECUTOR is
    `celery` (broker and results on QUARRY_REDIS_URL), in process otherwise."""
    if settings.fleet_executor != "celery":
        return {"config": {"in_process": {}}}
    timeout = visibility_timeout or settings.fleet_visibility_timeout
    return {
        "config": {
            "celery": {
                "broker": settings.require_redis_url(),
                "backend": settings.require_redis_url(),
                "config_source": celery_settings(timeout),
            }
        }
    }


def _requirements(config: ExecutorConfig) -> list[ExecutorRequirement]:
    return list(multiple_process_executor_requirements()) if "celery" in config else []


@executor(
    name="fleet",
    config_schema=Field(
        Selector(
            {
                "in_process": Field(Permissive(), is_required=False),
                "celery": Field(Permissive(), is_required=False),
            }
        ),
        default_value={"in_process": {}},
    ),
    requirements=_requirements,
)
def fleet_executor(init_context: InitExecutorContext) -> Executor:
    """In process, or on Celery workers (dagster-celery), as the run config says."""
    kind, config = next(iter(init_context.executor_config.items()))
    options: dict[str, Any] = dict(config or {})  # type: ignore[call-overload]
    if kind == "celery":
        from dagster_celery import celery_executor

        target = celery_executor
    else:
        target = in_process_executor
    context = InitExecutorContext(
        job=init_context.job,
        executor_def=target,
        executor_config=_with_defaults(target, options),
        instance=init_context.instance,
    )
    return target.executor_creation_fn(context)  # type: ignore[misc]


def _with_defaults(target: Any, config: dict[str, Any]) -> dict[str, Any]:
    """`config` with the defaults of `target`'s schema filled in (Dagster fills them only
    for the executor the job names)."""
    from dagster._config import process_config

    result = process_config(target.config_schema.config_type, config)
    if not result.success:
        raise ValueError(f"fleet executor config: {result.errors}")
    return dict(result.value or {})
