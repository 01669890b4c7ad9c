"""ShopifyQL's own API shape: the Admin GraphQL field `shopifyqlQuery`, answered by the same
engine and figures as POST /v1/query, across every store the key reads.

A real GraphQL schema (graphql-core) with the part of Shopify's Admin schema (2026-10) that
ShopifyQL clients use: `shopifyqlQuery(query:)` returning `ShopifyqlQueryResponse`
(`parseErrors`, `tableData { columns { ... } rows rowMetadata { ... } }`), and
`currentAppInstallation { accessScopes { handle } }`, which Shopify's `shopifyql` SDK asks
for when a query has no table. Anything else is a GraphQL validation error.

tableData follows Shopify's reference (ShopifyqlTableData, ShopifyqlTableDataColumn,
ShopifyqlRowMetadata, ColumnDataType): rows are objects keyed by column name whose values
are strings as Shopify writes them (money and other numbers as plain decimals, time buckets
as local dates or local times without offset), `dataType` comes from the column's catalog
type and name; generated columns (comparisons, percent changes, totals, running totals)
are GENERATED with their dynamicColumnMetadata, and WITH TOTALS adds `{column}__totals`
columns as ShopifyQL does (the contract's /v1/query keeps its `totals` object).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from graphql import GraphQLError, GraphQLResolveInfo, GraphQLScalarType, build_schema, graphql_sync

from quarry.errors import InvalidQuery, RateLimited
from warehouse.query import QueryResult

# ColumnDataType as of 2026-10 (shopify.dev/docs/api/admin-graphql/2026-10/enums/ColumnDataType).
COLUMN_DATA_TYPES = (
    "ARRAY",
    "BOOLEAN",
    "COLOR",
    "CUMULATIVE",
    "DAY_DURATION",
    "DAY_OF_WEEK",
    "DAY_TIMESTAMP",
    "DECIMAL",
    "ENTITY",
    "FLOAT",
    "GEO_COORDINATE",
    "HOUR_DURATION",
    "HOUR_OF_DAY",
    "HOUR_TIMESTAMP",
    "IDENTITY",
    "INTEGER",
    "MILLISECOND_DURATION",
    "MINUTE_DURATION",
    "MINUTE_TIMESTAMP",
    "MONEY",
    "MONTH_OF_YEAR",
    "MONTH_TIMESTAMP",
    "MULTIPLIER",
    "PERCENT",
    "QUARTER_TIMESTAMP",
    "RATING",
    "SECOND_DURATION",
    "SECOND_TIMESTAMP",
    "STRING",
    "STRING_IDENTITY",
    "TIMESTAMP",
    "UNITLESS_SCALAR",
    "UNSPECIFIED",
    "WEEK_OF_YEAR",
    "WEEK_TIMESTAMP",
    "YEAR_TIMESTAMP",
)

# ShopifyqlDynamicColumnType as of 2026-10.
DYNAMIC_COLUMN_TYPES = (
    "ATTRIBUTION",
    "ATTRIBUTION_COMPARISON",
    "ATTRIBUTION_COMPARISON_CUMULATIVE",
    "ATTRIBUTION_COMPARISON_TOTALS",
    "ATTRIBUTION_CUMULATIVE",
    "ATTRIBUTION_PERCENT_CHANGE",
    "ATTRIBUTION_TOTALS",
    "BENCHMARK_TOTALS",
    "BENCHMARKS",
    "COMPARISON",
    "COMPARISON_CUMULATIVE",
    "COMPARISON_TOTALS",
    "CUMULATIVE",
    "PERCENT_CHANGE",
    "ROLLOUT_RESULTS",
    "TOTALS",
    "UNSPECIFIED",
)

SDL = f"""
scalar JSON

enum ColumnDataType {{ {" ".join(COLUMN_DATA_TYPES)} }}

enum ShopifyqlColumnOrigin {{ GENERATED REQUESTED UNSPECIFIED }}

enum ShopifyqlDynamicColumnType {{ {" ".join(DYNAMIC_COLUMN_TYPES)} }}

type ShopifyqlDynamicColumnMetadata {{
  aggregatedBy: [String!]!
  comparisonReference: String
  originalColumnName: String
  type: ShopifyqlDynamicColumnType!
}}

type ShopifyqlTableDataColumn {{
  name: String!
  dataType: ColumnDataType!
  displayName: String!
  shortDisplayName: String
  subType: ColumnDataType
  columnOrigin: ShopifyqlColumnOrigin!
  dynamicColumnMetadata: ShopifyqlDynamicColumnMetadata
}}

type ShopifyqlNullCellTranslation {{
  columnName: String!
  displayText: String!
}}

type ShopifyqlRowMetadata {{
  nullCellTranslations: [ShopifyqlNullCellTranslation!]!
  rawResourceIds: [[String!]!]!
  topNRemainderColumnNames: [String!]!
}}

type ShopifyqlTableData {{
  columns: [ShopifyqlTableDataColumn!]!
  rows: JSON!
  rowMetadata: [ShopifyqlRowMetadata!]!
}}

type ShopifyqlQueryResponse {{
  parseErrors: [String!]!
  tableData: ShopifyqlTableData
}}

type AccessScope {{
  handle: String!
}}

type AppInstallation {{
  accessScopes: [AccessScope!]!
}}

type QueryRoot {{
  shopifyqlQuery(query: String!): ShopifyqlQueryResponse
  currentAppInstallation: AppInstallation!
}}

schema {{
  query: QueryRoot
}}
"""

SCHEMA = build_schema(SDL)
_json = SCHEMA.type_map["JSON"]
assert isinstance(_json, GraphQLScalarType)
# JSON passes through as it is (rows are already plain dicts of strings).
_json.serialize = lambda value: value  # type: ignore[method-assign]

_TIMESTAMPS = ("second", "minute", "hour", "day", "week", "month", "quarter", "year")
_CLOCK_VALUES = {
    "hour_of_day": "HOUR_OF_DAY",
    "day_of_week": "DAY_OF_WEEK",
    "month_of_year": "MONTH_OF_YEAR",
    "week_of_year": "WEEK_OF_YEAR",
}
_BY_CATALOG_TYPE = {"money": "MONEY", "percent": "PERCENT", "boolean": "BOOLEAN"}
_DYNAMIC_TYPES = {
    "comparison": "COMPARISON",
    "percent": "PERCENT_CHANGE",
    "group_total": "TOTALS",
    "cumulative": "CUMULATIVE",
}
# What a null cell reads as (rowMetadata.nullCellTranslations): Quarry's wording.
NULL_TEXT = "No value"
# The scope Shopify requires for shopifyqlQuery, and Quarry's that grants it.
SHOPIFY_SCOPE = {"read_data": "read_reports"}


def data_type(column: Mapping[str, str], values: list[Any]) -> str:
    """The ColumnDataType of a result column."""
    name, catalog_type = column["name"], column["type"]
    if name in _TIMESTAMPS:
        return f"{name.upper()}_TIMESTAMP"
    if name in _CLOCK_VALUES:
        numeric = all(isinstance(v, int) for v in values if v is not None)
        return _CLOCK_VALUES[name] if numeric else "STRING"
    if catalog_type in _BY_CATALOG_TYPE:
        return _BY_CATALOG_TYPE[catalog_type]
    if catalog_type == "number":
        whole = all(isinstance(v, int) for v in values if v is not None)
        return "INTEGER" if whole else "FLOAT"
    if catalog_type == "date":
        return "TIMESTAMP"
    return "STRING"


def cell(value: Any) -> str | None:
    """A row value as Shopify writes it: a string, numbers as plain decimals, times local
    and without offset."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, str) and "T" in value and value[:4].isdigit():
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return value
        return moment.replace(tzinfo=None).isoformat()
    return str(value)


def table_data(
    result: QueryResult, resource_ids: Mapping[str, Mapping[str, list[str]]] | None = None
) -> dict[str, Any]:
    """ShopifyqlTableData of a /v1/query result. `resource_ids`: for a column, the ids
    behind each of its values (the `store` column's store ids), for rowMetadata."""
    resource_ids = resource_ids or {}
    columns = [_column(column, result) for column in result.columns]
    rows = [{name: cell(value) for name, value in row.items()} for row in result.rows]
    for name, total in (result.totals or {}).items():
        source = next(c for c in columns if c["name"] == name)
        columns.append(_totals_column(source))
        for row in rows:
            row[f"{name}__totals"] = cell(total)
    metadata = [
        {
            "nullCellTranslations": [
                {"columnName": c["name"], "displayText": NULL_TEXT}
                for c in columns
                if row.get(c["name"]) is None
            ],
            "rawResourceIds": [
                list(resource_ids.get(c["name"], {}).get(row.get(c["name"]) or "", []))
                for c in columns
            ],
            "topNRemainderColumnNames": (
                [result.remainders[index]] if index in result.remainders else []
            ),
        }
        for index, row in enumerate(rows)
    ]
    return {"columns": columns, "rows": rows, "rowMetadata": metadata}


def _column(column: Mapping[str, str], result: QueryResult) -> dict[str, Any]:
    name = column["name"]
    derivation = result.derived.get(name)
    dynamic = None
    if derivation is not None:
        dynamic = {
            "type": _DYNAMIC_TYPES.get(derivation.kind, "UNSPECIFIED"),
            "originalColumnName": derivation.base,
            "comparisonReference": derivation.comparison,
            "aggregatedBy": list(derivation.grouped_by),
        }
    return {
        "name": name,
        "dataType": data_type(column, [row.get(name) for row in result.rows]),
        "displayName": column["title"],
        "shortDisplayName": None,
        "subType": None,
        "columnOrigin": "REQUESTED" if derivation is None else "GENERATED",
        "dynamicColumnMetadata": dynamic,
    }


def _totals_column(source: Mapping[str, Any]) -> dict[str, Any]:
    """WITH TOTALS' `{column}__totals`: the column over the whole result."""
    compared = source["dynamicColumnMetadata"] or {}
    return {
        **source,
        "name": f"{source['name']}__totals",
        "displayName": f"{source['displayName']} (total)",
        "columnOrigin": "GENERATED",
        "dynamicColumnMetadata": {
            "type": "COMPARISON_TOTALS" if compared.get("type") == "COMPARISON" else "TOTALS",
            "originalColumnName": source["name"],
            "comparisonReference": compared.get("comparisonReference"),
            "aggregatedBy": [],
        },
    }


def parse_errors(error: InvalidQuery) -> list[str]:
    """The diagnostics of an invalid query as Shopify's `parseErrors` strings."""
    found = [
        f"{item['message']} (line {item['line']}, column {item['column']})"
        if item.get("line") is not None
        else str(item.get("message", ""))
        for item in error.errors or []
    ]
    return found or [error.detail]


# Runs a ShopifyQL query for the caller; raises InvalidQuery like /v1/query.
Answer = Callable[[str], QueryResult]


def execute(
    document: str,
    variables: dict[str, Any] | None,
    operation_name: str | None,
    answer: Answer,
    scopes: tuple[str, ...],
    resource_ids: Mapping[str, Mapping[str, list[str]]] | None = None,
) -> dict[str, Any]:
    """A GraphQL response (`data` and/or `errors`) for `document`."""

    # graphql-core's default resolver calls a callable of the root value with (info, args).
    def shopifyql_query(info: GraphQLResolveInfo, query: str) -> dict[str, Any]:
        try:
            result = answer(query)
        except InvalidQuery as error:
            return {"parseErrors": parse_errors(error), "tableData": None}
        except RateLimited as limited:
            raise GraphQLError(
                f"Throttled: {limited.detail}", extensions={"code": "THROTTLED"}
            ) from None
        return {"parseErrors": [], "tableData": table_data(result, resource_ids)}

    def current_app_installation(info: GraphQLResolveInfo) -> dict[str, Any]:
        handles = [SHOPIFY_SCOPE.get(scope, scope) for scope in scopes]
        return {"accessScopes": [{"handle": handle} for handle in handles]}

    root = {
        "shopifyqlQuery": shopifyql_query,
        "currentAppInstallation": current_app_installation,
    }
    outcome = graphql_sync(
        SCHEMA,
        document,
        root_value=root,
        variable_values=variables,
        operation_name=operation_name,
    )
    return dict(outcome.formatted)
