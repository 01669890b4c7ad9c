"""Retries with exponential backoff (tenacity) for transient delivery failures.

A failure is retried when it carries `transient=True` (DeliveryError does); anything else
ends the delivery at once, because repeating a refused login or a missing bucket only
delays the reason the user needs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a delivery is retried. The defaults ride out a server
    restart or a dropped connection (about a minute in all) without holding a run for long."""

    attempts: int = 5
    initial_wait: float = 2.0
    max_wait: float = 30.0


def is_transient(exc: BaseException) -> bool:
    return bool(getattr(exc, "transient", False))


def run_with_retries(operation: Callable[[], T], policy: RetryPolicy, *, describe: str) -> T:
    """Run `operation`, retrying transient failures per `policy`; re-raise the last failure."""

    def log_retry(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        logger.warning(
            "%s failed (attempt %d of %d): %s; retrying in %.1f s",
            describe,
            state.attempt_number,
            policy.attempts,
            getattr(exc, "reason", type(exc).__name__),
            wait,
        )

    retrying = Retrying(
        stop=stop_after_attempt(max(1, policy.attempts)),
        wait=wait_exponential_jitter(
            initial=policy.initial_wait, max=policy.max_wait, jitter=policy.initial_wait / 2
        ),
        retry=retry_if_exception(is_transient),
        before_sleep=log_retry,
        reraise=True,
    )
    return retrying(operation)
