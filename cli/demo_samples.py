"""The sample configurations `quarry demo seed` creates: one per format on the `local`
destination, a scheduled one, and a live sheet sync that runs only on its schedule (its
credentials are an environment reference the demo does not set, so a run fails with a
reason that says which variable to set). The live sheet sync is created with its schedule
paused unless QUARRY_DEMO_GOOGLE_SERVICE_ACCOUNT is set: a stock demo with alerts on must
not fail, and alert, every hour. They go through the same validation as `quarry exports
apply`, so they double as a worked example of the YAML schema."""

from __future__ import annotations

import os
from collections.abc import Mapping

import yaml
from sqlalchemy.orm import Session

from exports.configs.document import validate_document
from exports.configs.saved import (
    Applied,
    account_context,
    apply_definitions,
    set_schedule_paused,
)
from quarry.settings import Settings

SAMPLES_YAML = """
exports:
  - name: Orders (CSV)
    entity_type: orders
    format: csv
    columns:
      - order_name
      - created_at
      - financial_status
      - fulfillment_status
      - customer_name
      - {field: total_price, title: Total}
      - currency
      - store_id
    format_options: {bom: true}
    file_name: "orders-{date:%Y-%m-%d}-{job_id}"
    destination: {kind: local, settings: {folder: deliveries}}

  - name: Paid orders, daily (CSV)
    entity_type: orders
    format: csv
    rows: changed
    filters: {financial_status: [paid, partially_refunded]}
    format_options: {delimiter: ";", date_format: "%d.%m.%Y %H:%M", time_zone: Europe/Berlin}
    schedule: {cron: "0 6 * * *"}
    destination: {kind: local, settings: {folder: deliveries/daily}}

  - name: Customers (Excel)
    entity_type: customers
    format: xlsx
    format_options: {date_format: "%Y-%m-%d %H:%M", time_zone: America/New_York}
    destination: {kind: local}

  - name: Catalog and sales (zip)
    entity_type: bundle
    format: zip
    parts:
      - {entity_type: products}
      - {entity_type: draft_orders}
      - name: monthly sales
        entity_type: query
        query: "FROM sales SHOW total_sales, orders TIMESERIES month SINCE -12m UNTIL today"
    file_name: "catalog-{store}-{date}"
    destination: {kind: local}

  - name: Live orders sheet
    entity_type: orders
    format: csv
    columns: [order_name, created_at, financial_status, total_price, currency]
    schedule: {cron: "0 * * * *"}
    destination:
      kind: google_sheets
      settings: {spreadsheet_id: REPLACE_WITH_YOUR_SPREADSHEET_ID, sheet: Orders}
      credentials: {service_account: {env: QUARRY_DEMO_GOOGLE_SERVICE_ACCOUNT}}
"""


GOOGLE_VARIABLE = "QUARRY_DEMO_GOOGLE_SERVICE_ACCOUNT"
LIVE_SHEET = "Live orders sheet"


def create_sample_configs(
    session: Session,
    settings: Settings,
    account_id: str,
    environ: Mapping[str, str] | None = None,
) -> list[Applied]:
    """Create (or update) the sample configurations of `account_id`. A new live sheet
    sync is paused unless the Google credential's variable is set in `environ`."""
    environ = os.environ if environ is None else environ
    context = account_context(session, settings, account_id)
    definitions = validate_document(yaml.safe_load(SAMPLES_YAML), context, source="samples")
    applied = apply_definitions(session, settings, account_id, definitions)
    for item in applied:
        if item.name == LIVE_SHEET and item.created and not environ.get(GOOGLE_VARIABLE):
            set_schedule_paused(session, item.id, True)
    return applied
