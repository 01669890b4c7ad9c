"""Invariants every demo store's tables hold, after seeding and after any advance. Written
against the tables alone (pandas), independent of the generator's own arithmetic."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa

from warehouse.schemas import TABLES

URL_SAFE = re.compile(r"^[A-Za-z0-9_-]+$")
MONEY_COLUMNS = {
    name: [f.name for f in spec.schema if pa.types.is_decimal(f.type)]
    for name, spec in TABLES.items()
}


def frame(table: pa.Table) -> pd.DataFrame:
    """The table as pandas, money in hundredths as int64 (exact for these magnitudes); a
    money column with nulls (a cost not recorded) as nullable Int64."""
    df = table.drop_columns(MONEY_COLUMNS[_name(table)]).to_pandas()
    for column in MONEY_COLUMNS[_name(table)]:
        values = table[column].cast(pa.float64()).to_numpy(zero_copy_only=False)
        if table[column].null_count:
            df[column] = pd.array(np.rint(values * 100), dtype="Int64")
        else:
            df[column] = np.rint(values * 100).astype(np.int64)
    return df


def _name(table: pa.Table) -> str:
    return next(name for name, spec in TABLES.items() if spec.schema.equals(table.schema))


def check_schemas(tables: dict[str, pa.Table]) -> None:
    for name, table in tables.items():
        assert table.schema.equals(TABLES[name].schema), name


def check_ids(tables: dict[str, pa.Table], store_id: str) -> None:
    for name, table in tables.items():
        ids = table["id"].to_pylist()
        assert len(ids) == len(set(ids)), f"{name}: duplicate ids"
        assert all(URL_SAFE.match(i) and i.startswith(f"{store_id}-") for i in ids), name
        assert set(table["store_id"].to_pylist()) <= {store_id}, name


def check_references(tables: dict[str, pa.Table]) -> None:
    orders = set(tables["orders"]["id"].to_pylist())
    customers = set(tables["customers"]["id"].to_pylist())
    lines = set(tables["order_lines"]["id"].to_pylist())
    refunds = set(tables["refunds"]["id"].to_pylist())
    assert set(tables["order_lines"]["order_id"].to_pylist()) <= orders
    assert set(tables["refunds"]["order_id"].to_pylist()) <= orders
    assert set(tables["refund_lines"]["order_id"].to_pylist()) <= orders
    assert set(tables["refund_lines"]["refund_id"].to_pylist()) <= refunds
    assert set(tables["refund_lines"]["line_id"].to_pylist()) <= lines
    assert set(tables["orders"]["customer_id"].drop_null().to_pylist()) <= customers
    assert set(tables["draft_orders"]["customer_id"].drop_null().to_pylist()) <= customers
    assert set(tables["draft_orders"]["order_id"].drop_null().to_pylist()) <= orders
    products = set(tables["products"]["id"].to_pylist())
    assert set(tables["product_variants"]["product_id"].to_pylist()) <= products


def check_amounts(tables: dict[str, pa.Table], whole_units: bool) -> None:
    orders = frame(tables["orders"]).set_index("id")
    lines = frame(tables["order_lines"])
    lines["net"] = lines["price"] * lines["quantity"] - lines["discount"]
    per_order = lines.groupby("order_id").agg(
        net=("net", "sum"),
        discount=("discount", "sum"),
        tax=("tax", "sum"),
        count=("id", "size"),
        units=("quantity", "sum"),
    )
    joined = orders.join(per_order, how="left")
    assert (joined["count"] >= 1).all()
    assert (joined["subtotal_price"] == joined["net"]).all()
    assert (joined["total_discounts"] == joined["discount"]).all()
    assert (joined["line_item_count"] == joined["count"]).all()
    assert (joined["item_quantity"] == joined["units"]).all()
    # Tax is the lines' tax plus tax on shipping, which only shipped orders have.
    shipping_tax = joined["total_tax"] - joined["tax"]
    assert (shipping_tax >= 0).all()
    assert (shipping_tax[joined["total_shipping"] == 0] == 0).all()
    assert (
        joined["total_price"]
        == joined["subtotal_price"]
        + joined["total_shipping"]
        + joined["total_duties"]
        + joined["total_additional_fees"]
        + joined["total_tax"]
    ).all()

    refunds = frame(tables["refunds"])
    refund_lines = frame(tables["refund_lines"])
    refunded = (
        refund_lines.groupby("order_id")[["subtotal", "tax"]]
        .sum()
        .sum(axis=1)
        .add(
            refunds.groupby("order_id")[["shipping", "shipping_tax", "duties"]].sum().sum(axis=1),
            fill_value=0,
        )
        .reindex(orders.index, fill_value=0)
    )
    assert (orders["total_refunded"] == refunded).all()
    status = orders["financial_status"]
    assert (
        orders.loc[status == "refunded", "total_refunded"]
        == orders.loc[status == "refunded", "total_price"]
    ).all()
    partly = orders[status == "partially_refunded"]
    assert (
        (partly["total_refunded"] > 0) & (partly["total_refunded"] < partly["total_price"])
    ).all()
    assert (
        orders.loc[~status.isin(["refunded", "partially_refunded"]), "total_refunded"] == 0
    ).all()
    # A refund never returns more units than the line had.
    returned = refund_lines.groupby("line_id")["quantity"].sum()
    ordered = lines.set_index("id")["quantity"].reindex(returned.index)
    assert (returned <= ordered).all()

    if whole_units:
        for name, table in tables.items():
            df = frame(table)
            for column in MONEY_COLUMNS[name]:
                assert (df[column] % 100 == 0).all(), f"{name}.{column}"


def check_times(tables: dict[str, pa.Table], clock: pd.Timestamp) -> None:
    orders = tables["orders"].to_pandas().set_index("id")
    assert (orders["updated_at"] >= orders["created_at"]).all()
    assert (orders["updated_at"] <= clock).all()
    refunds = tables["refunds"].to_pandas()
    placed = orders["created_at"].reindex(refunds["order_id"]).to_numpy()
    assert (refunds["created_at"].to_numpy() > placed).all()
    assert (refunds["created_at"] <= clock).all()
    last_refund = refunds.groupby("order_id")["created_at"].max()
    assert (orders["updated_at"].reindex(last_refund.index) >= last_refund).all()
    for name in ("customers", "products", "draft_orders"):
        df = tables[name].to_pandas()
        assert (df["updated_at"] >= df["created_at"]).all(), name
        assert (df["updated_at"] <= clock).all(), name


def check_customer_totals(tables: dict[str, pa.Table]) -> None:
    customers = frame(tables["customers"]).set_index("id")
    orders = frame(tables["orders"])
    counts = orders.groupby("customer_id").size().reindex(customers.index, fill_value=0)
    assert (customers["orders_count"] == counts).all()
    spending = orders[orders["financial_status"].isin(["paid", "partially_refunded", "refunded"])]
    spent = (
        (spending["total_price"] - spending["total_refunded"])
        .groupby(spending["customer_id"])
        .sum()
        .reindex(customers.index, fill_value=0)
    )
    assert (customers["total_spent"] == spent).all()


def check_products(tables: dict[str, pa.Table]) -> None:
    products = frame(tables["products"]).set_index("id")
    variants = frame(tables["product_variants"])
    summary = (
        variants.groupby("product_id")
        .agg(
            count=("id", "size"),
            low=("price", "min"),
            high=("price", "max"),
            stock=("inventory_quantity", "sum"),
        )
        .reindex(products.index)
    )
    assert (summary["count"].between(1, 5)).all()
    assert (products["variant_count"] == summary["count"]).all()
    assert (products["min_price"] == summary["low"]).all()
    assert (products["max_price"] == summary["high"]).all()
    assert (products["total_inventory"] == summary["stock"]).all()


def check_drafts(tables: dict[str, pa.Table]) -> None:
    drafts = frame(tables["draft_orders"])
    orders = frame(tables["orders"]).set_index("id")
    done = drafts[drafts["status"] == "completed"]
    assert done["order_id"].notna().all() and done["completed_at"].notna().all()
    assert drafts.loc[drafts["status"] != "completed", "order_id"].isna().all()
    placed = orders.reindex(done["order_id"])
    assert (placed["sales_channel"].to_numpy() == "Draft Orders").all()
    assert (done["completed_at"].to_numpy() == placed["created_at"].to_numpy()).all()
    assert (done["created_at"].to_numpy() < placed["created_at"].to_numpy()).all()
    assert (done["subtotal_price"].to_numpy() == placed["subtotal_price"].to_numpy()).all()


def check_costs_and_addresses(tables: dict[str, pa.Table]) -> None:
    """Variants cost less than they sell for, or have no cost recorded; a line costs what
    its variant does (costs never change); an order ships to its billing address unless
    sold at the counter; a discount code goes with a discount."""
    variants = frame(tables["product_variants"]).set_index("id")
    costed = variants[variants["cost"].notna()]
    assert ((costed["cost"] > 0) & (costed["cost"] < costed["price"])).all()
    assert variants["cost"].isna().any() or len(variants) < 12
    lines = frame(tables["order_lines"])
    known = lines[lines["variant_id"].isin(variants.index)]
    expected = variants["cost"].reindex(known["variant_id"]).to_numpy()
    assert (pd.Series(known["cost"].to_numpy()).fillna(-1) == pd.Series(expected).fillna(-1)).all()
    orders = tables["orders"].to_pandas()
    counter = orders["sales_channel"] == "Point of Sale"
    assert orders.loc[counter, "shipping_country"].isna().all()
    shipped = orders[~counter]
    assert (shipped["shipping_country"].fillna("") == shipped["billing_country"].fillna("")).all()
    assert (shipped["shipping_city"].fillna("") == shipped["billing_city"].fillna("")).all()
    coded = orders["discount_codes"].notna()
    discounted = frame(tables["orders"])["total_discounts"] > 0
    assert (coded.to_numpy() == discounted.to_numpy()).all()


def check_all(
    tables: dict[str, pa.Table], store_id: str, whole_units: bool, clock: pd.Timestamp
) -> None:
    check_schemas(tables)
    check_ids(tables, store_id)
    check_references(tables)
    check_amounts(tables, whole_units)
    check_times(tables, clock)
    check_customer_totals(tables)
    check_products(tables)
    check_drafts(tables)
    check_costs_and_addresses(tables)
