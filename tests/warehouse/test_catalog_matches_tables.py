"""The catalog (what Quarry serves) and the table schemas (what the lake holds) agree: a
field that names a column has the column's type, every field a record carries is a
column, and every column is either served or listed here as internal, so a column added to
a table is a decision about the catalog too."""

from __future__ import annotations

import pyarrow as pa
import pytest

from warehouse.catalog import DATASETS, Dataset, FieldType
from warehouse.schemas import TABLES

# Columns a table holds for Quarry's own use, not served as fields of its dataset.
INTERNAL = {
    "orders": {"platform_id"},
    "customers": {"platform_id"},
    "products": {"platform_id"},
    "draft_orders": {"platform_id"},
    "sales": {
        "id",
        "event_type",
        "line_type",
        "happened_at",
        "happened_at_store",
        "happened_at_account",
        "currency",
    },
}


def _matches(field_type: FieldType, arrow: pa.DataType) -> bool:
    if field_type == "string":
        return pa.types.is_string(arrow)
    if field_type == "money":
        return arrow == pa.decimal128(18, 2)
    if field_type == "date":
        return pa.types.is_timestamp(arrow) or pa.types.is_date(arrow)
    if field_type == "boolean":
        return pa.types.is_boolean(arrow)
    return pa.types.is_integer(arrow) or pa.types.is_decimal(arrow) or pa.types.is_floating(arrow)


@pytest.mark.parametrize("dataset", DATASETS, ids=lambda d: d.name)
def test_fields_that_name_a_column_have_its_type(dataset: Dataset) -> None:
    schema = TABLES[dataset.table].schema
    wrong = {
        f.name: (f.type, str(schema.field(f.source).type))
        for f in dataset.fields
        if f.source in schema.names and not _matches(f.type, schema.field(f.source).type)
    }
    assert wrong == {}


@pytest.mark.parametrize(
    "dataset", [d for d in DATASETS if d.kind == "records"], ids=lambda d: d.name
)
def test_every_field_of_a_record_is_a_column(dataset: Dataset) -> None:
    schema = TABLES[dataset.table].schema
    assert [f.name for f in dataset.record_fields if f.source not in schema.names] == []


@pytest.mark.parametrize("dataset", DATASETS, ids=lambda d: d.name)
def test_every_column_is_served_or_internal(dataset: Dataset) -> None:
    served = {f.source for f in dataset.fields}
    columns = set(TABLES[dataset.table].schema.names)
    assert columns - served - INTERNAL.get(dataset.table, set()) == set()
    # An internal column that became a field is served: the list above is kept honest.
    assert INTERNAL.get(dataset.table, set()) & served == set()
    assert INTERNAL.get(dataset.table, set()) <= columns
