"""The third store carries hostile text of every kind, survives Parquet, and keeps numbers
numeric; the other stores carry none of it."""

from __future__ import annotations

import pyarrow as pa

from platforms.demo.hostile import HOSTILE_KINDS, HOSTILE_VALUES, LONG_TEXT_LENGTH, LONG_VALUES
from platforms.demo.templates import HOSTILE_STORE_INDEX
from tests.platforms.demo.conftest import SeededAccount

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _texts(tables: dict[str, pa.Table]) -> dict[str, list[str]]:
    """Every non-null string value, by table.column."""
    return {
        f"{name}.{field.name}": table[field.name].drop_null().to_pylist()
        for name, table in tables.items()
        for field in table.schema
        if pa.types.is_string(field.type)
    }


def test_the_hostile_store_is_the_third_and_its_name_has_quotes(seeded: SeededAccount) -> None:
    store = seeded.stores[HOSTILE_STORE_INDEX]
    assert (store.currency, store.timezone) == ("JPY", "Asia/Tokyo")
    assert '"' in store.name and "'" in store.name
    assert any(ord(c) > 0x3000 for c in store.name)


def test_every_kind_of_hostile_value_is_present(seeded: SeededAccount) -> None:
    store = seeded.stores[HOSTILE_STORE_INDEX]
    values = {v for column in _texts(seeded.tables(store.id)).values() for v in column}
    found = {
        hostile.kind
        for hostile in HOSTILE_VALUES + LONG_VALUES
        if hostile.text in values or (hostile.text and any(hostile.text in v for v in values))
    }
    assert found == HOSTILE_KINDS
    assert any("\x00" in v for v in values)
    assert any(chr(c) in v for v in values for c in (1, 0x1F, 0x7F))


def test_about_one_in_twenty_text_values_is_hostile(seeded: SeededAccount) -> None:
    store = seeded.stores[HOSTILE_STORE_INDEX]
    hostile = {h.text for h in HOSTILE_VALUES}
    names = seeded.tables(store.id)["customers"]["first_name"].to_pylist()
    share = sum(name in hostile for name in names) / len(names)
    assert 0.02 < share < 0.09


def test_long_values_only_where_nothing_copies_them(seeded: SeededAccount) -> None:
    store = seeded.stores[HOSTILE_STORE_INDEX]
    texts = _texts(seeded.tables(store.id))
    long_columns = {
        c for c, values in texts.items() if any(len(v) >= LONG_TEXT_LENGTH for v in values)
    }
    assert long_columns
    assert long_columns <= {"orders.tags", "customers.tags", "products.tags", "refunds.note"}
    longest = max(len(v) for c in long_columns for v in texts[c])
    assert longest == LONG_TEXT_LENGTH


def test_copies_of_hostile_text_match_their_source(seeded: SeededAccount) -> None:
    tables = seeded.tables(seeded.stores[HOSTILE_STORE_INDEX].id)
    products = tables["products"].to_pandas().set_index("id")
    lines = tables["order_lines"].to_pandas()
    assert (
        lines["product_title"].to_numpy()
        == products["title"].reindex(lines["product_id"]).to_numpy()
    ).all()
    customers = tables["customers"].to_pandas().set_index("id")
    orders = tables["orders"].to_pandas().dropna(subset=["customer_id"])
    assert (
        orders["customer_name"].to_numpy()
        == customers["customer_name"].reindex(orders["customer_id"]).to_numpy()
    ).all()


def test_other_stores_are_plain(seeded: SeededAccount) -> None:
    for index, store in enumerate(seeded.stores):
        if index == HOSTILE_STORE_INDEX:
            continue
        for column, values in _texts(seeded.tables(store.id)).items():
            for value in values:
                assert not value.startswith(FORMULA_STARTS), (column, value)
                assert not any(ord(c) < 32 or ord(c) == 127 for c in value), (column, value)
                assert len(value) < 200, column
