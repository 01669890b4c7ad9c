"""The aggregate functions are declared once (warehouse.query.aggregates); the Literals
that spell their names again for mypy and OpenAPI must list the same."""

from __future__ import annotations

from typing import Literal, get_args, get_origin

from api.schemas import DatasetField
from warehouse.catalog import Aggregation
from warehouse.query.aggregates import BY_NAME, NAMES
from warehouse.query.parser import AGGREGATES


def _literal_values(annotation: object) -> tuple[object, ...]:
    """The values of a Literal, or of the Literal in `Literal[...] | None`."""
    if get_origin(annotation) is Literal:
        return get_args(annotation)
    (literal,) = [a for a in get_args(annotation) if get_origin(a) is Literal]
    return get_args(literal)


def test_catalog_literal_lists_the_table() -> None:
    assert _literal_values(Aggregation) == NAMES


def test_openapi_literal_lists_the_table() -> None:
    annotation = DatasetField.model_fields["default_aggregation"].annotation
    assert _literal_values(annotation) == NAMES
    schema = DatasetField.model_json_schema()["properties"]["default_aggregation"]
    assert [s.get("enum") for s in schema["anyOf"] if "enum" in s] == [list(NAMES)]


def test_the_parser_names_the_table() -> None:
    assert AGGREGATES == NAMES


def test_titles_and_wording() -> None:
    assert [BY_NAME[n].title for n in NAMES] == [
        "Sum",
        "Average",
        "Minimum",
        "Maximum",
        "Count",
        "Distinct count",
        "Median",
    ]
    assert BY_NAME["sum"].needs() == "a number or money field"
    assert BY_NAME["max"].needs() == "a number, money or date field"
    assert [n for n in NAMES if BY_NAME[n].additive] == ["sum", "count"]
