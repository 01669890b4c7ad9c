"""The data files of a table version, per store, cached.

A Delta version never changes, so its file list is cached for the life of the process;
opening a version replays the log from its checkpoint and costs milliseconds, a cache hit
microseconds. Only the reader calls this; vacuum keeps every file of the versions that
the newest snapshots reference (warehouse.maintenance).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

from quarry.settings import Settings
from warehouse.tables import STORE_COLUMN, open_table, spec

# (table, version, store or None for a global table) -> absolute file paths
FileKey = tuple[str, int, str | None]


class FileListCache:
    """Thread-safe LRU of file lists; `max_entries` bounds memory for many stores."""

    def __init__(self, settings: Settings, max_entries: int = 4096) -> None:
        self._settings = settings
        self._max = max_entries
        self._lists: OrderedDict[FileKey, tuple[str, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def files(
        self, table: str, version: int, stores: Iterable[str | None]
    ) -> dict[str | None, tuple[str, ...]]:
        """Files of `table` at `version` for each store (None: the whole global table)."""
        found: dict[str | None, tuple[str, ...]] = {}
        missing: list[str | None] = []
        with self._lock:
            for store in stores:
                key = (table, version, store)
                if key in self._lists:
                    self._lists.move_to_end(key)
                    found[store] = self._lists[key]
                else:
                    missing.append(store)
        if missing:
            loaded = self._load(table, version, missing)
            with self._lock:
                for store, files in loaded.items():
                    self._lists[(table, version, store)] = files
                while len(self._lists) > self._max:
                    self._lists.popitem(last=False)
            found.update(loaded)
        return found

    def _load(
        self, table: str, version: int, stores: list[str | None]
    ) -> dict[str | None, tuple[str, ...]]:
        delta = open_table(self._settings, table, version)
        partitioned = spec(table).partitioned
        out: dict[str | None, tuple[str, ...]] = {}
        for store in stores:
            if store is None or not partitioned:
                out[store] = tuple(delta.file_uris())
            else:
                predicate = [(STORE_COLUMN, "=", store)]
                out[store] = tuple(delta.file_uris(file_pruning_predicate=predicate))
        return out
