"""The demo platform's files: children read by parent id skip row groups that cannot hold
them, and return exactly the children of those parents; an advance's staged files are
published children first, deletions last (the order a concurrent sync tolerates)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from platforms.demo import storage
from quarry.files import FileStore
from warehouse.schemas import TABLES


def _lines(count: int) -> pa.Table:
    schema = TABLES["order_lines"].schema
    columns = {field.name: pa.nulls(count, field.type) for field in schema}
    columns["id"] = pa.array([f"l{i:05d}" for i in range(count)])
    columns["order_id"] = pa.array([f"o{i // 3:05d}" for i in range(count)])
    return pa.table(columns, schema=schema)


def test_children_by_parent_read_only_matching_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(storage, "ROW_GROUP_ROWS", 30)
    folder = storage.Folder(FileStore(pafs.LocalFileSystem(), str(tmp_path), str(tmp_path)), "s")
    storage.publish(storage.stage_tables(folder, {"order_lines": _lines(300)}))
    assert pq.ParquetFile(tmp_path / "s" / "order_lines.parquet").metadata.num_row_groups == 10

    wanted = pa.array(["o00002", "o00095", "o99999"])  # in the first and last groups, absent
    read: list[list[int]] = []
    real = pq.ParquetFile.read_row_groups

    def counting(self: pq.ParquetFile, groups: list[int], **kwargs: object) -> pa.Table:
        read.append(list(groups))
        return real(self, groups, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", counting)
    rows = storage.read_children(folder, "order_lines", "order_id", wanted)

    assert read == [[0, 9]]
    assert sorted(rows["id"].to_pylist()) == [
        "l00006",
        "l00007",
        "l00008",
        *(f"l{i:05d}" for i in range(285, 288)),
    ]
    assert pc.all(pc.is_in(rows["order_id"], value_set=wanted)).as_py()


def test_publish_moves_children_then_parents_then_deletions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = FileStore(pafs.LocalFileSystem(), str(tmp_path), str(tmp_path))
    names = (storage.DELETIONS, "orders", "order_lines", "customers", "refunds")
    staged = [
        item
        for store in ("acc/st_a", "acc/st_b")
        for item in storage.stage_tables(
            storage.Folder(files, store),
            {name: storage.schema_of(name).empty_table() for name in names},
        )
    ]
    moved: list[str] = []
    real = FileStore.move

    def recording(self: FileStore, source: str, target: str) -> None:
        moved.append(target)
        real(self, source, target)

    monkeypatch.setattr(FileStore, "move", recording)
    storage.publish(staged)

    tables = [key.rsplit("/", 1)[1].removesuffix(".parquet") for key in moved]
    children, parents = ["order_lines", "refunds"], ["orders", "customers"]
    assert tables == [*children, *children, *parents, *parents, "deletions", "deletions"]
    assert files.keys() == sorted(
        f"{s}/{n}.parquet" for s in ("acc/st_a", "acc/st_b") for n in names
    )
