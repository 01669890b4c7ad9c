"""Store partitions: one dynamic partition per store of the registry, and asset checks
partitioned by them."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from dagster import (
    AddDynamicPartitionsRequest,
    AssetCheckSpec,
    DagsterInstance,
    DeleteDynamicPartitionsRequest,
    DynamicPartitionsDefinition,
    PreviewWarning,
)

STORES_PARTITIONS = "stores"
STORES = DynamicPartitionsDefinition(name=STORES_PARTITIONS)


def store_check_spec(name: str, **kwargs: Any) -> AssetCheckSpec:
    """An asset check evaluated per store: the UI shows each store's result and history
    (and plots its metadata per store), not one line across stores. Partitioned checks
    are a Dagster preview; the version is pinned (constraints.txt), so a change of theirs
    arrives only with an upgrade we test."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=PreviewWarning)
        return AssetCheckSpec(name, partitions_def=STORES, **kwargs)


@dataclass(frozen=True)
class PartitionChanges:
    """What brings the `stores` partitions in step with a list of store ids."""

    added: tuple[str, ...]
    removed: tuple[str, ...]

    def requests(self) -> list[AddDynamicPartitionsRequest | DeleteDynamicPartitionsRequest]:
        """The changes as a sensor returns them."""
        requests: list[AddDynamicPartitionsRequest | DeleteDynamicPartitionsRequest] = []
        if self.added:
            requests.append(STORES.build_add_request(list(self.added)))
        if self.removed:
            requests.append(STORES.build_delete_request(list(self.removed)))
        return requests


def partition_changes(instance: DagsterInstance, store_ids: Iterable[str]) -> PartitionChanges:
    """Partitions to add for stores without one and to remove for stores that are gone."""
    wanted = set(store_ids)
    existing = set(instance.get_dynamic_partitions(STORES_PARTITIONS))
    return PartitionChanges(tuple(sorted(wanted - existing)), tuple(sorted(existing - wanted)))


def sync_store_partitions(instance: DagsterInstance, store_ids: Iterable[str]) -> PartitionChanges:
    """Apply partition_changes now (for callers that are not sensors)."""
    changes = partition_changes(instance, store_ids)
    if changes.added:
        instance.add_dynamic_partitions(STORES_PARTITIONS, list(changes.added))
    for store_id in changes.removed:
        instance.delete_dynamic_partition(STORES_PARTITIONS, store_id)
    return changes
