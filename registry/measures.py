"""quarry.measures' figures in the registry: a process adds its tally to the shared
counters (`write_tally`), the API reads them at each scrape (`read_series`), and a
store's labels stay bounded (`store_labels`)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence

from sqlalchemy import func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from quarry.measures import TALLY, SeriesKey, Tally
from registry.db import Registry
from registry.models import MetricSeries, Store, utcnow

log = logging.getLogger(__name__)

# How long a process trusts its count of the registry's stores.
_STORE_COUNT_SECONDS = 60.0
_store_count: tuple[float, int] | None = None


def encode_labels(pairs: tuple[tuple[str, str], ...]) -> str:
    return json.dumps([list(pair) for pair in pairs], ensure_ascii=False, separators=(",", ":"))


def decode_labels(text: str) -> dict[str, str]:
    return {str(name): str(value) for name, value in json.loads(text)}


def store_count(session: Session) -> int:
    """The registry's stores, counted at most once a minute per process."""
    global _store_count
    now = time.monotonic()
    if _store_count is None or now - _store_count[0] > _STORE_COUNT_SECONDS:
        _store_count = (now, int(session.scalar(select(func.count()).select_from(Store)) or 0))
    return _store_count[1]


def store_labels(registry: Registry, store_id: str, max_stores: int) -> dict[str, str]:
    """`account_id` and `store_id` of a store's figures; `store_id` empty (the same as no
    label to Prometheus) once the registry holds more than `max_stores` stores."""
    return stores_labels(registry, [store_id], max_stores)[store_id]


def stores_labels(
    registry: Registry, store_ids: Sequence[str], max_stores: int
) -> dict[str, dict[str, str]]:
    """store_labels of many stores, in one look at the registry."""
    try:
        with registry.session() as session:
            found = session.execute(
                select(Store.id, Store.account_id).where(Store.id.in_(list(store_ids)))
            )
            accounts: dict[str, str] = {store: account for store, account in found}
            per_store = store_count(session) <= max_stores
    except SQLAlchemyError:
        # Measuring never fails the work.
        return {s: {"account_id": "", "store_id": ""} for s in store_ids}
    return {
        s: {"account_id": accounts.get(s, ""), "store_id": s if per_store else ""}
        for s in store_ids
    }


def write_tally(registry: Registry, tally: Tally = TALLY) -> None:
    """Adds what `tally` holds to the registry's counters, in one transaction. A registry
    that cannot be written keeps the figures in the tally for the next write; measuring
    never fails the work it measures."""
    pending = tally.drain()
    if not pending:
        return
    try:
        with registry.session() as session:
            _add(session, pending)
    except SQLAlchemyError:
        log.warning("could not record %d metric series; kept for the next write", len(pending))
        tally.restore(pending)


def _add(session: Session, pending: Mapping[SeriesKey, float]) -> None:
    dialect = session.get_bind().dialect.name
    now = utcnow()
    for (name, pairs), amount in sorted(pending.items()):
        labels = encode_labels(pairs)
        values = {"name": name, "labels": labels, "value": amount, "updated_at": now}
        if dialect in ("sqlite", "postgresql"):
            insert = (sqlite if dialect == "sqlite" else postgresql).insert(MetricSeries)
            session.execute(
                insert.values(**values).on_conflict_do_update(
                    index_elements=["name", "labels"],
                    set_={"value": MetricSeries.value + amount, "updated_at": now},
                )
            )
            continue
        updated = session.execute(
            update(MetricSeries)
            .where(MetricSeries.name == name, MetricSeries.labels == labels)
            .values(value=MetricSeries.value + amount, updated_at=now)
        )
        if not updated.rowcount:  # type: ignore[attr-defined]
            session.add(MetricSeries(**values))
            session.flush()


def read_series(session: Session) -> list[tuple[str, dict[str, str], float]]:
    """Every counter: (series name, labels, value)."""
    rows = session.execute(select(MetricSeries.name, MetricSeries.labels, MetricSeries.value))
    return [(name, decode_labels(labels), float(value)) for name, labels, value in rows]
