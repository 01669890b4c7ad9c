"""Change pages made ready for the writer: checked against the table schemas, and combined.

A lake commit costs milliseconds of catalog work whatever its size, so a sync that commits every
connector page (250 orders on Shopify) spends its time committing. `batched` folds
consecutive pages into one page per ~`max_rows` parent rows with the meaning of applying
them one after the other: the last version of a parent wins, with its children from that
same page, and a deletion wins over earlier versions and loses to later ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from warehouse.schemas import SOURCE_DATASETS, TableSpec
from warehouse.tables import STORE_COLUMN, spec


@dataclass(frozen=True)
class ChangePage:
    """One committed unit of a sync.

    `tables` maps a table name of the dataset to rows in that table's Arrow schema
    (warehouse.schemas.TABLES[name].schema). Child rows are complete for every parent
    listed in the parent table: the sync replaces a parent's children with exactly these.
    `deleted_ids` are parent ids removed on the platform; their children go with them.
    """

    tables: dict[str, pa.Table]
    deleted_ids: list[str] = field(default_factory=list)
    cursor: str | None = None


_SEQ = "_quarry_seq"
_PAGE = "_quarry_page"


def conform(name: str, rows: pa.Table, store_id: str | None) -> pa.Table:
    """`rows` in the exact schema of table `name` (columns reordered, types cast), checked
    to belong to `store_id` when the table holds per-store rows. Raises ValueError otherwise."""
    table_spec = spec(name)
    schema = table_spec.schema
    if not rows.schema.equals(schema):
        missing = [f.name for f in schema if f.name not in rows.column_names]
        if missing:
            raise ValueError(f"{name}: rows lack columns {missing}")
        rows = rows.select(schema.names).cast(schema)
    for key in table_spec.primary_key:
        if rows[key].null_count:
            raise ValueError(f"{name}: {rows[key].null_count} rows without {key}")
    if table_spec.per_store and store_id is not None and rows.num_rows:
        stores = pc.unique(rows[STORE_COLUMN])
        if len(stores) != 1 or stores[0].as_py() != store_id:
            raise ValueError(f"{name}: rows of stores {stores.to_pylist()}, expected {store_id}")
    return rows


def parent_table(page: ChangePage) -> str | None:
    """The one parent (non-child) table of the page, or None for a page of children only.
    A page with a parent holds only tables of that parent's dataset (no sales with orders:
    derived tables are written by their model)."""
    parents = [n for n in page.tables if spec(n).parent_key is None]
    if len(parents) > 1:
        raise ValueError(f"a page holds one parent table, got {parents}")
    parent = parents[0] if parents else None
    for name in page.tables:
        child = spec(name)
        if child.parent_key is not None and parent is not None and child.parent_table != parent:
            raise ValueError(f"{name} is a child of {child.parent_table}, not of {parent}")
    if parent is not None:
        outside = sorted(set(page.tables) - set(dataset_tables(parent, page.tables)))
        if outside:
            raise ValueError(f"{outside} are not tables of the {parent} dataset")
    return parent


def dataset_tables(parent: str | None, names: Iterable[str]) -> tuple[str, ...]:
    """The tables a full sync of this page's dataset replaces: every table of the source
    dataset led by `parent` (so a child stream absent from the page is emptied too), else
    just `names`."""
    for tables in SOURCE_DATASETS.values():
        if parent is not None and tables[0] == parent:
            return tables
    return tuple(names)


def child_specs(parent: str, among: Iterable[str]) -> list[TableSpec]:
    """The specs of the tables in `among` whose parent table is `parent`."""
    return [spec(n) for n in among if spec(n).parent_table == parent]


def normalize(page: ChangePage) -> ChangePage:
    """The page with duplicate parents reduced to their last row, and parents that are
    also deleted dropped (a deletion reported with an update happened after it)."""
    return combine_pages([page])


def combine_pages(pages: Sequence[ChangePage]) -> ChangePage:
    """One page meaning the same as applying `pages` in order. The cursor is the last one."""
    if not pages:
        raise ValueError("no pages to combine")
    names = list(dict.fromkeys(n for p in pages for n in p.tables))
    parents = {name for p in pages if (name := parent_table(p)) is not None}
    if len(parents) > 1:
        raise ValueError(f"pages of different datasets: {sorted(parents)}")
    parent = parents.pop() if parents else None
    cursor = pages[-1].cursor
    if parent is None:
        if any(p.deleted_ids for p in pages):
            raise ValueError("deleted ids need their parent table in the page")
        return ChangePage(_concat_all(pages, names), [], cursor)
    merged = _concat_all(pages, names)
    ids = merged[parent]["id"]
    deleted = [i for p in pages for i in p.deleted_ids]
    if not deleted and pc.count_distinct(ids).as_py() == len(ids):
        return ChangePage(merged, [], cursor)
    return _resolve(pages, names, parent, cursor)


def _concat_all(pages: Sequence[ChangePage], names: list[str]) -> dict[str, pa.Table]:
    out: dict[str, pa.Table] = {}
    for name in names:
        schema = spec(name).schema
        parts = [p.tables[name] for p in pages if name in p.tables]
        out[name] = pa.concat_tables(parts).cast(schema) if parts else schema.empty_table()
    return out


def _tagged(pages: Sequence[ChangePage], name: str) -> pa.Table:
    """Rows of `name` across pages with their page index and global row order."""
    parts = []
    for index, page in enumerate(pages):
        rows = page.tables.get(name)
        if rows is None or not rows.num_rows:
            continue
        parts.append(rows.append_column(_PAGE, pa.array([index] * rows.num_rows, pa.int64())))
    if not parts:
        empty = spec(name).schema.empty_table()
        return empty.append_column(_PAGE, pa.array([], pa.int64())).append_column(
            _SEQ, pa.array([], pa.int64())
        )
    table = pa.concat_tables(parts)
    return table.append_column(_SEQ, pa.array(range(table.num_rows), pa.int64()))


def _resolve(
    pages: Sequence[ChangePage], names: list[str], parent: str, cursor: str | None
) -> ChangePage:
    parents = _tagged(pages, parent)
    last = parents.group_by("id", use_threads=False).aggregate([(_SEQ, "max")])
    parents = parents.join(
        last, keys=["id", _SEQ], right_keys=["id", f"{_SEQ}_max"], join_type="left semi"
    )
    deletions = pa.table(
        {
            "id": pa.array([i for p in pages for i in p.deleted_ids], pa.string()),
            _PAGE: pa.array([n for n, p in enumerate(pages) for _ in p.deleted_ids], pa.int64()),
        }
    )
    last_deletion = deletions.group_by("id", use_threads=False).aggregate([(_PAGE, "max")])
    # A parent survives unless deleted on its own page or later.
    joined = parents.join(last_deletion, keys="id", join_type="left outer")
    deleted_at = joined[f"{_PAGE}_max"]
    kept = pc.or_kleene(pc.is_null(deleted_at), pc.less(deleted_at, joined[_PAGE]))
    survivors = joined.filter(kept).sort_by(_SEQ)
    survivor_ids = survivors["id"]
    still_deleted = pc.invert(pc.is_in(last_deletion["id"], value_set=survivor_ids))
    deleted_ids = last_deletion.filter(still_deleted)["id"].to_pylist()

    tables = {parent: survivors.select(spec(parent).schema.names)}
    keys = survivors.select(["id", _PAGE])
    for name in names:
        if name == parent:
            continue
        child = spec(name)
        rows = _tagged(pages, name)
        assert child.parent_key is not None
        rows = rows.join(
            keys, keys=[child.parent_key, _PAGE], right_keys=["id", _PAGE], join_type="left semi"
        ).sort_by(_SEQ)
        tables[name] = rows.select(child.schema.names)
    return ChangePage(tables, deleted_ids, cursor)


def batched(pages: Iterable[ChangePage], max_rows: int = 50_000) -> Iterator[ChangePage]:
    """Consecutive pages combined until they hold at least `max_rows` parent rows and
    deleted ids (all rows, for pages of children only). Store the yielded page's cursor
    only after the writer applied it."""
    pending: list[ChangePage] = []
    size = 0
    for page in pages:
        pending.append(page)
        parent = parent_table(page)
        if parent is None:
            size += sum(rows.num_rows for rows in page.tables.values())
        else:
            size += len(page.deleted_ids) + page.tables[parent].num_rows
        if size >= max_rows:
            yield combine_pages(pending)
            pending, size = [], 0
    if pending:
        yield combine_pages(pending)
