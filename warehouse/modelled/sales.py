"""The `sales` model: one row per sale event, from orders and their lines and refunds.

Names and meanings follow ShopifyQL's `sales` schema (warehouse.catalog.SALES):

- An order line, when ordered (event_type `order`, line_type `product`, at the order's
  processed_at, else created_at): gross_sales = price x quantity, discounts = -discount,
  taxes = the line's tax, ordered_item_quantity = quantity.
- A refund line, when refunded (event_type `return`, at the refund's created_at):
  returns = -subtotal (the refunded value, net of discounts), taxes = -tax,
  returned_item_quantity = -quantity.
- Order-level lines with no product: `shipping` (the shipping charged, with any tax that is
  on no line, i.e. the shipping tax), `duty` and `fee` when ordered; `shipping` (refunded
  shipping and its tax) and `duty` when refunded.
- net_sales = gross_sales + discounts + returns; total_sales = net_sales + shipping_charges
  + duties + additional_fees + taxes; net_items_sold = ordered + returned quantities.
- cost_of_goods_sold: the line's unit cost (recorded when ordered) times the units ordered,
  less the units returned; null, with cost_is_recorded false, when the variant had no cost
  and on lines without a product. The order's shipping address, discount codes and whether
  it was cancelled are on every event of the order.

- A cancelled order, when cancelled (event_type `return`, at its cancelled_at): what its
  refunds did not reverse, line by line (units, value net of discounts, tax, cost) and for
  shipping with its tax, duties and fees, as Shopify's sales reports count a cancellation
  (quoted at _LINE_CANCELLED).

So the total_sales of all of an order's events is total_price - total_refunded, and zero
for a cancelled order.

Ids are deterministic per event: `<line id>.o`, `<refund line id>.r`,
`<order id>.shipping.o`, `<refund id>.shipping.r`, `<order id>.duty.o`, `<refund id>.duty.r`,
`<order id>.fee.o`, and a cancellation's `<line id>.c`, `<order id>.shipping.c`,
`<order id>.duty.c`, `<order id>.fee.c`. Timestamps are UTC; happened_at_store and
happened_at_account are the same instant as local times in the store's and the account's
zones, computed here once rather than at every query.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

import duckdb
import pyarrow as pa

from warehouse.lake import Lake
from warehouse.rollups import build as rollups
from warehouse.schemas import SALES, SOURCE_DATASETS
from warehouse.tables import (
    inserted_after,
    qualified,
    quote_literal,
    select_columns,
    store_predicate,
)

ORDER_TABLES = SOURCE_DATASETS["orders"]  # orders, order_lines, refunds, refund_lines

_ZERO = "0::DECIMAL(18, 2)"
_NO_PRODUCT = ", ".join(
    f"NULL::VARCHAR AS {c}"
    for c in (
        "product_id", "product_title", "product_type", "product_vendor",
        "product_variant_title", "product_variant_sku",
    )
)  # fmt: skip


def _event(
    *,
    id_: str,
    event_type: str,
    line_type: str,
    happened_at: str,
    product: str = _NO_PRODUCT,
    ordered: str = "0",
    returned: str = "0",
    gross: str = _ZERO,
    discounts: str = _ZERO,
    returns: str = _ZERO,
    shipping: str = _ZERO,
    duties: str = _ZERO,
    fees: str = _ZERO,
    taxes: str = _ZERO,
    cost: str = "NULL",
    cost_recorded: str = "FALSE",
) -> str:
    """The select list of one kind of event, in the column order every branch shares."""
    return f"""
        {id_} AS id, o.id AS order_id, '{event_type}' AS event_type,
        '{line_type}' AS line_type, {happened_at} AS happened_at, {product},
        ({ordered})::BIGINT AS ordered_item_quantity,
        ({returned})::BIGINT AS returned_item_quantity,
        ({gross})::DECIMAL(18, 2) AS gross_sales, ({discounts})::DECIMAL(18, 2) AS discounts,
        ({returns})::DECIMAL(18, 2) AS returns, ({shipping})::DECIMAL(18, 2) AS shipping_charges,
        ({duties})::DECIMAL(18, 2) AS duties, ({fees})::DECIMAL(18, 2) AS additional_fees,
        ({taxes})::DECIMAL(18, 2) AS taxes, ({cost})::DECIMAL(18, 2) AS cost_of_goods_sold,
        ({cost_recorded}) AS cost_is_recorded"""


_LINE_PRODUCT = """l.product_id, l.product_title, l.product_type, l.product_vendor,
        l.variant_title AS product_variant_title, l.sku AS product_variant_sku"""
_ORDERED_AT = "coalesce(o.processed_at, o.created_at)"

_LINE_ORDERED = _event(
    id_="l.id || '.o'",
    event_type="order",
    line_type="product",
    happened_at=_ORDERED_AT,
    product=_LINE_PRODUCT,
    ordered="l.quantity",
    gross="l.price * l.quantity",
    discounts="-l.discount",
    taxes="l.tax",
    cost="l.cost * l.quantity",
    cost_recorded="l.cost IS NOT NULL",
)
_LINE_RETURNED = _event(
    id_="rl.id || '.r'",
    event_type="return",
    line_type="product",
    happened_at="r.created_at",
    product=_LINE_PRODUCT,
    returned="-rl.quantity",
    returns="-rl.subtotal",
    taxes="-rl.tax",
    cost="-(l.cost * rl.quantity)",
    cost_recorded="l.cost IS NOT NULL",
)
_SHIPPING_ORDERED = _event(
    id_="o.id || '.shipping.o'",
    event_type="order",
    line_type="shipping",
    happened_at=_ORDERED_AT,
    shipping="o.total_shipping",
    taxes="o.total_tax - coalesce(t.tax, 0)",
)
_DUTY_ORDERED = _event(
    id_="o.id || '.duty.o'",
    event_type="order",
    line_type="duty",
    happened_at=_ORDERED_AT,
    duties="o.total_duties",
)
_FEE_ORDERED = _event(
    id_="o.id || '.fee.o'",
    event_type="order",
    line_type="fee",
    happened_at=_ORDERED_AT,
    fees="o.total_additional_fees",
)
_SHIPPING_RETURNED = _event(
    id_="r.id || '.shipping.r'",
    event_type="return",
    line_type="shipping",
    happened_at="r.created_at",
    shipping="-r.shipping",
    taxes="-r.shipping_tax",
)
_DUTY_RETURNED = _event(
    id_="r.id || '.duty.r'",
    event_type="return",
    line_type="duty",
    happened_at="r.created_at",
    duties="-r.duties",
)

# A cancelled order is reversed on the day it was cancelled, as Shopify's sales reports
# count it: "When you cancel an order, it appears as a sale for the day that it was placed
# and a return for the day that it was canceled, so your sales numbers are zero for that
# order overall." (help.shopify.com/manual/reports-and-analytics/shopify-reports/
# report-types/sales-report, "Canceled orders"). Its refunds reverse what they refund on
# their own days; the cancellation reverses the rest, whether or not it was ever refunded.
_LINE_CANCELLED = _event(
    id_="l.id || '.c'",
    event_type="return",
    line_type="product",
    happened_at="o.cancelled_at",
    product=_LINE_PRODUCT,
    returned="-(l.quantity - coalesce(rl.quantity, 0))",
    returns="-(l.price * l.quantity - l.discount - coalesce(rl.subtotal, 0))",
    taxes="-(l.tax - coalesce(rl.tax, 0))",
    cost="-(l.cost * (l.quantity - coalesce(rl.quantity, 0)))",
    cost_recorded="l.cost IS NOT NULL",
)
_SHIPPING_CANCELLED = _event(
    id_="o.id || '.shipping.c'",
    event_type="return",
    line_type="shipping",
    happened_at="o.cancelled_at",
    shipping="-(o.total_shipping - coalesce(r.shipping, 0))",
    taxes="-(o.total_tax - coalesce(t.tax, 0) - coalesce(r.shipping_tax, 0))",
)
_DUTY_CANCELLED = _event(
    id_="o.id || '.duty.c'",
    event_type="return",
    line_type="duty",
    happened_at="o.cancelled_at",
    duties="-(o.total_duties - coalesce(r.duties, 0))",
)
_FEE_CANCELLED = _event(
    id_="o.id || '.fee.c'",
    event_type="return",
    line_type="fee",
    happened_at="o.cancelled_at",
    fees="-o.total_additional_fees",
)

SALES_SQL = f"""
WITH line_tax AS (
    SELECT order_id, sum(tax) AS tax FROM order_lines GROUP BY order_id
),
line_refunded AS (
    SELECT line_id, sum(quantity) AS quantity, sum(subtotal) AS subtotal, sum(tax) AS tax
    FROM refund_lines GROUP BY line_id
),
order_refunded AS (
    SELECT order_id, sum(shipping) AS shipping, sum(shipping_tax) AS shipping_tax,
        sum(duties) AS duties
    FROM refunds GROUP BY order_id
),
events AS (
    SELECT {_LINE_ORDERED}
    FROM order_lines l JOIN orders o ON o.id = l.order_id
    UNION ALL
    SELECT {_LINE_RETURNED}
    FROM refund_lines rl
    JOIN refunds r ON r.id = rl.refund_id
    JOIN orders o ON o.id = rl.order_id
    LEFT JOIN order_lines l ON l.id = rl.line_id
    UNION ALL
    -- Tax that is on no line is the shipping's tax: it goes with the shipping line.
    SELECT {_SHIPPING_ORDERED}
    FROM orders o LEFT JOIN line_tax t ON t.order_id = o.id
    WHERE o.total_shipping <> 0 OR o.total_tax <> coalesce(t.tax, 0)
    UNION ALL
    SELECT {_DUTY_ORDERED}
    FROM orders o WHERE o.total_duties <> 0
    UNION ALL
    SELECT {_FEE_ORDERED}
    FROM orders o WHERE o.total_additional_fees <> 0
    UNION ALL
    SELECT {_SHIPPING_RETURNED}
    FROM refunds r JOIN orders o ON o.id = r.order_id
    WHERE r.shipping <> 0 OR r.shipping_tax <> 0
    UNION ALL
    SELECT {_DUTY_RETURNED}
    FROM refunds r JOIN orders o ON o.id = r.order_id
    WHERE r.duties <> 0
    UNION ALL
    -- A cancellation reverses what the order's refunds left (see _LINE_CANCELLED).
    SELECT {_LINE_CANCELLED}
    FROM order_lines l JOIN orders o ON o.id = l.order_id
    LEFT JOIN line_refunded rl ON rl.line_id = l.id
    WHERE o.cancelled_at IS NOT NULL AND (l.quantity <> coalesce(rl.quantity, 0)
        OR l.price * l.quantity - l.discount <> coalesce(rl.subtotal, 0)
        OR l.tax <> coalesce(rl.tax, 0))
    UNION ALL
    SELECT {_SHIPPING_CANCELLED}
    FROM orders o LEFT JOIN line_tax t ON t.order_id = o.id
    LEFT JOIN order_refunded r ON r.order_id = o.id
    WHERE o.cancelled_at IS NOT NULL AND (o.total_shipping <> coalesce(r.shipping, 0)
        OR o.total_tax - coalesce(t.tax, 0) <> coalesce(r.shipping_tax, 0))
    UNION ALL
    SELECT {_DUTY_CANCELLED}
    FROM orders o LEFT JOIN order_refunded r ON r.order_id = o.id
    WHERE o.cancelled_at IS NOT NULL AND o.total_duties <> coalesce(r.duties, 0)
    UNION ALL
    SELECT {_FEE_CANCELLED}
    FROM orders o WHERE o.cancelled_at IS NOT NULL AND o.total_additional_fees <> 0
)
SELECT
    e.id, o.store_id, e.order_id, o.order_name, e.event_type, e.line_type, e.happened_at,
    timezone(:store_zone:, e.happened_at) AS happened_at_store,
    timezone(:account_zone:, e.happened_at) AS happened_at_account,
    o.currency, o.customer_id, e.product_id, e.product_title, e.product_type,
    e.product_vendor, e.product_variant_title, e.product_variant_sku, o.sales_channel,
    o.billing_country, o.billing_region, o.billing_city,
    o.shipping_country, o.shipping_region, o.shipping_city, o.discount_codes AS discount_code,
    o.cancelled_at IS NOT NULL AS order_cancelled, e.cost_is_recorded,
    e.ordered_item_quantity, e.returned_item_quantity,
    e.ordered_item_quantity + e.returned_item_quantity AS net_items_sold,
    e.gross_sales, e.discounts, e.returns,
    (e.gross_sales + e.discounts + e.returns)::DECIMAL(18, 2) AS net_sales,
    e.shipping_charges, e.duties, e.additional_fees, e.taxes,
    (e.gross_sales + e.discounts + e.returns + e.shipping_charges + e.duties
        + e.additional_fees + e.taxes)::DECIMAL(18, 2) AS total_sales,
    e.cost_of_goods_sold
FROM events e JOIN orders o ON o.id = e.order_id
"""


def connect() -> duckdb.DuckDBPyConnection:
    """A DuckDB connection fit for the model: UTC session, so Arrow output is UTC too."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    return con


def sales_events(
    con: duckdb.DuckDBPyConnection, *, store_timezone: str, account_timezone: str
) -> pa.Table:
    """The sale events of the orders visible in `con` as `orders`, `order_lines`, `refunds`
    and `refund_lines` (tables or views in those tables' schemas), in SALES's schema."""
    sql = _sales_sql(store_timezone=store_timezone, account_timezone=account_timezone)
    return con.sql(sql).to_arrow_table().cast(SALES.schema)


def _sales_sql(*, store_timezone: str, account_timezone: str) -> str:
    return _zoned_sql({"": (store_timezone, account_timezone)})


def _zoned_sql(zones: Mapping[str, tuple[str, str]]) -> str:
    """SALES_SQL for stores in their zones (store id -> store's zone, account's zone).

    The zones are literals, not bound parameters or a joined column: DuckDB 1.5 then looks
    the zone up for every row, which cost 5 s of a 360,000-event store (0.5 s as
    literals). Stores in different zones get a CASE over their zones, each branch still a
    literal (a fleet batch's stores, in a handful of zones)."""
    for pair in zones.values():
        for zone in pair:
            ZoneInfo(zone)  # an unknown zone fails here, before any SQL
    sql = SALES_SQL
    for index, placeholder in enumerate((":store_zone:", ":account_zone:")):
        by_zone: dict[str, list[str]] = {}
        for store_id, pair in zones.items():
            by_zone.setdefault(pair[index], []).append(store_id)
        local = [f"timezone({quote_literal(zone)}, e.happened_at)" for zone in sorted(by_zone)]
        if len(by_zone) > 1:
            branches = " ".join(
                f"WHEN {store_predicate(by_zone[zone], 'o')} THEN {expression}"
                for zone, expression in zip(sorted(by_zone), local, strict=True)
            )
            local = [f"CASE {branches} END"]
        sql = sql.replace(f"timezone({placeholder}, e.happened_at)", local[0])
    return sql


def sales_from_tables(
    tables: dict[str, pa.Table], *, store_timezone: str, account_timezone: str
) -> pa.Table:
    """sales_events over Arrow tables keyed by table name (orders and its children)."""
    con = connect()
    try:
        for name in ORDER_TABLES:
            con.register(name, tables[name])
        return sales_events(con, store_timezone=store_timezone, account_timezone=account_timezone)
    finally:
        con.close()


def store_sales(
    lake: Lake,
    store_id: str,
    *,
    store_timezone: str,
    account_timezone: str,
    order_ids: Iterable[str] | None = None,
) -> pa.Table:
    """The sale events of a store's orders as the lake's newest snapshot holds them: of
    every order when `order_ids` is None, else of those orders only (ids no longer in the
    orders table simply yield nothing)."""
    cursor = lake.cursor()
    try:
        wanted = None if order_ids is None else {store_id: list(order_ids)}
        _order_views(cursor, [store_id], wanted)
        return sales_events(
            cursor, store_timezone=store_timezone, account_timezone=account_timezone
        )
    finally:
        cursor.close()


@dataclass(frozen=True)
class SalesWork:
    """One store's sales to rebuild: every order's (`order_ids` None) or these orders'.
    `since`, with `order_ids`: a lake version before which none of these orders' rows were
    written (the store's published snapshot, for orders its sync changed after it), so
    their rows are read from the files written after it (_order_views)."""

    store_id: str
    store_timezone: str
    account_timezone: str
    order_ids: Sequence[str] | None = None
    since: int | None = None


def write_store_sales(
    lake: Lake,
    store_id: str,
    *,
    store_timezone: str,
    account_timezone: str,
    order_ids: Iterable[str] | None = None,
    since: int | None = None,
) -> int:
    """write_sales for one store; returns the events written."""
    ids = None if order_ids is None else list(order_ids)
    work = SalesWork(store_id, store_timezone, account_timezone, ids, since)
    return write_sales(lake, [work])[store_id]


def write_sales(lake: Lake, work: Sequence[SalesWork]) -> dict[str, int]:
    """Replace the sale events of each store of `work` (all of them, or those of its
    orders) with the model's, all in one transaction; returns the events written per store.

    Many stores cost about what one does (a fleet batch): the model runs once for the
    stores rebuilt whole and once for those with some orders changed. A whole store's
    events go from DuckDB's query straight into the table (INSERT ... SELECT): no copy of
    them, in Arrow or in DuckDB. The stores' rollups (warehouse.rollups) change in the same
    transaction: rebuilt from the written rows, or for some orders changed by those orders'
    old and new events."""
    written: dict[str, int] = {}
    if not work:
        return written
    table = qualified(SALES.name)
    with lake.transaction(author=[w.store_id for w in work], message="sales") as cursor:
        whole = [w for w in work if w.order_ids is None]
        if whole:
            stores = [w.store_id for w in whole]
            cursor.execute(f"DELETE FROM {table} WHERE {store_predicate(stores)}")
            _order_views(cursor, stores, None)
            written.update(_model_into(cursor, whole, table))
            rollups.write_store(cursor, stores)
        some = [w for w in work if w.order_ids is not None]
        if some:
            written.update(_write_orders(cursor, some))
    return {w.store_id: written.get(w.store_id, 0) for w in work}


def _write_orders(cursor: duckdb.DuckDBPyConnection, work: Sequence[SalesWork]) -> dict[str, int]:
    """The events of some orders of each store of `work` replaced, and the stores' rollups
    changed by those orders' old and new events (a few orders' rows: the model already reads
    them into temporary tables)."""
    table = qualified(SALES.name)
    wanted = {w.store_id: list(w.order_ids or ()) for w in work}
    _register_wanted(cursor, wanted)
    try:
        changed = (
            f"{store_predicate(wanted)} AND (store_id, order_id) IN "
            f"(SELECT store_id, id FROM {_WANTED})"
        )
        cursor.execute(
            f"CREATE OR REPLACE TEMP TABLE {_OLD_EVENTS} AS SELECT * FROM {table} WHERE {changed}"
        )
        cursor.execute(f"CREATE OR REPLACE TEMP TABLE {_NEW_EVENTS} AS FROM {table} LIMIT 0")
        versions = [w.since for w in work]
        since = None if None in versions else min(v for v in versions if v is not None)
        _order_views(cursor, list(wanted), wanted, since, registered=True)
        written = _model_into(cursor, work, _NEW_EVENTS)
        cursor.execute(f"DELETE FROM {table} WHERE {changed}")
        columns = select_columns(SALES.name)
        cursor.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {_NEW_EVENTS}")
        rollups.apply_change(cursor, _OLD_EVENTS, _NEW_EVENTS)
        for name in (_OLD_EVENTS, _NEW_EVENTS):
            cursor.execute(f"DROP TABLE {name}")
    finally:
        cursor.unregister(_WANTED)
    return written


def _model_into(
    cursor: duckdb.DuckDBPyConnection, work: Sequence[SalesWork], target: str
) -> dict[str, int]:
    """Append the model's events of the order relations on `cursor` (the orders of the
    stores of `work`) to `target`; returns the events appended per store."""
    sql = _zoned_sql({w.store_id: (w.store_timezone, w.account_timezone) for w in work})
    columns = select_columns(SALES.name)
    row = cursor.execute(f"INSERT INTO {target} ({columns}) SELECT {columns} FROM ({sql})")
    total = int((row.fetchone() or (0,))[0])
    if len(work) == 1:
        return {work[0].store_id: total}
    stores = [w.store_id for w in work]
    counts = cursor.execute(
        f"SELECT store_id, count(*) FROM {target} WHERE {store_predicate(stores)} GROUP BY 1"
    ).fetchall()
    return {str(store): int(count) for store, count in counts}


_WANTED = "wanted_orders"
_OLD_EVENTS, _NEW_EVENTS = "quarry_old_sales", "quarry_new_sales"
_OLDER = "older_orders"
# The column naming each order table's order.
_ORDER_KEY = {name: "id" if name == "orders" else "order_id" for name in ORDER_TABLES}


def _register_wanted(
    cursor: duckdb.DuckDBPyConnection, wanted: Mapping[str, Sequence[str]]
) -> None:
    """Register the (store_id, id) pairs of `wanted` (store -> order ids) as _WANTED."""
    pairs = sorted({(store, order) for store, orders in wanted.items() for order in orders})
    stores, ids = [p[0] for p in pairs], [p[1] for p in pairs]
    cursor.register(
        _WANTED,
        pa.table({"store_id": pa.array(stores, pa.string()), "id": pa.array(ids, pa.string())}),
    )


def _order_views(
    cursor: duckdb.DuckDBPyConnection,
    stores: Sequence[str],
    wanted: Mapping[str, Sequence[str]] | None,
    since: int | None = None,
    *,
    registered: bool = False,
) -> None:
    """Temporary relations `orders`, `order_lines`, `refunds` and `refund_lines` on the
    cursor: the rows of `stores`; of the orders `wanted` lists per store only, unless it is
    None (registered as _WANTED already when `registered`).

    For some orders they are temporary tables, each read from the lake once: the model
    reads every table in several branches, and as views each branch would scan the
    stores' whole partitions again for the few orders wanted (a DuckLake table has no
    index). With `since` they are read from the rows written after it alone, which costs
    what changed: a sync rewrites a changed order with all of its children. Wanted orders
    with no row written after `since` are deleted ones, whose events simply go; any that
    still has an older row (nothing writes one, but the model must not lose it) is read
    whole from the table."""
    only, kind = "", "VIEW"
    if wanted is not None:
        if not registered:
            _register_wanted(cursor, wanted)
        only = f" AND (store_id, {{key}}) IN (SELECT store_id, id FROM {_WANTED})"
        kind = "TABLE"
    fresh = f" AND {inserted_after(since)}" if wanted is not None and since is not None else ""
    for name, key in _ORDER_KEY.items():
        cursor.execute(
            f"CREATE OR REPLACE TEMP {kind} {name} AS SELECT * FROM {qualified(name)} "
            f"WHERE {store_predicate(stores)}" + only.format(key=key) + fresh
        )
    if fresh:
        _add_older_orders(cursor, stores)


def _add_older_orders(cursor: duckdb.DuckDBPyConnection, stores: Sequence[str]) -> None:
    """Complete the temporary tables with every row of the wanted orders that are in the
    lake but not among the rows read (their order row is older than the version given)."""
    older = cursor.execute(
        f"SELECT store_id, id FROM {qualified('orders')} WHERE {store_predicate(stores)} "
        f"AND (store_id, id) IN (SELECT store_id, id FROM {_WANTED}) "
        "AND (store_id, id) NOT IN (SELECT store_id, id FROM orders)"
    ).fetch_arrow_table()
    if not older.num_rows:
        return
    cursor.register(_OLDER, older)
    try:
        for name, key in _ORDER_KEY.items():
            match = f"(store_id, {key}) IN (SELECT store_id, id FROM {_OLDER})"
            cursor.execute(f"DELETE FROM {name} WHERE {match}")
            cursor.execute(
                f"INSERT INTO {name} SELECT * FROM {qualified(name)} "
                f"WHERE {store_predicate(stores)} AND {match}"
            )
    finally:
        cursor.unregister(_OLDER)
