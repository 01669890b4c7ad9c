"""File-name templates and the Content-Disposition of downloads."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from api.job_files import content_disposition
from exports.configs.naming import render_file_name, template_errors

CREATED = datetime(2024, 1, 1, 3, 30, tzinfo=UTC)


def render(template: str, **kwargs: object) -> str:
    values: dict = {
        "name": "Orders",
        "job_id": "job_abc",
        "created_at": CREATED,
        "zone": "America/New_York",
        "store_names": ["Main Street"],
        "file_format": "csv",
    }
    values.update(kwargs)
    return render_file_name(template, **values)


def test_tokens_resolve_in_the_account_zone() -> None:
    assert render("{name}-{date}") == "Orders-2023-12-31.csv"  # 03:30 UTC is the 31st there
    assert render("{date:%Y%m%d-%H%M}_{job_id}") == "20231231-2230_job_abc.csv"
    assert render("{store}", store_names=["A", "B"]) == "2-stores.csv"
    assert render("{{literal}} {store}") == "{literal} Main Street.csv"


def test_the_extension_is_added_once_and_names_are_safe() -> None:
    assert render("x.csv") == "x.csv"
    assert render("x", file_format="xlsx") == "x.xlsx"
    assert render("../{name}/a:b") == "_Orders_a_b.csv"
    assert render("{name}", name="\x00\n") == "__.csv"
    assert render("{name}", name=" . ") == "export.csv"
    assert len(render("{name}", name="n" * 500)) == 200


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("{nme}", "unknown token {nme}"),
        ("{name:>10}", "takes no format"),
        ("{name", "not a valid template"),
        ("", "non-empty"),
    ],
)
def test_template_errors(template: str, problem: str) -> None:
    assert any(problem in p for p in template_errors(template))


def test_content_disposition() -> None:
    assert content_disposition("orders.csv") == (
        "attachment; filename=\"orders.csv\"; filename*=UTF-8''orders.csv"
    )
    assert content_disposition("Café «x».xlsx") == (
        "attachment; filename=\"Cafe x.xlsx\"; filename*=UTF-8''Caf%C3%A9%20%C2%ABx%C2%BB.xlsx"
    )
    assert content_disposition('東京 "q".zip') == (
        "attachment; filename=\"_q_.zip\"; filename*=UTF-8''%E6%9D%B1%E4%BA%AC%20%22q%22.zip"
    )
    assert content_disposition("東京.csv").split(";")[1] == ' filename="export.csv"'
