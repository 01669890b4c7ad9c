"""The side-by-side's answer check: a timing of Cube counts only where both answered alike."""

from __future__ import annotations

from decimal import Decimal

import pytest

from bench.cube_compare import _cube_keyed, _quarry_keyed, check_same

NAMES = {"st_1": "Harbour"}


def test_the_same_answer_in_both_shapes_passes() -> None:
    quarry = _quarry_keyed(
        "monthly_by_store",
        [
            {"store": "Harbour", "month": "2025-01-01", "total_sales": 10.05},
            {"store": "Harbour", "month": "2025-02-01", "total_sales": None},  # filled
        ],
    )
    cube = _cube_keyed(
        "monthly_by_store",
        [
            {
                "sales.store_id": "st_1",
                "sales.happened_at.month": "2025-01-01T00:00:00.000",
                "sales.total_sales": "10.049999999998",
            }
        ],
        NAMES,
    )
    assert quarry == cube == {("Harbour", "2025-01-01"): (Decimal("10.05"),)}
    check_same("monthly_by_store", quarry, cube)


@pytest.mark.parametrize(
    ("cube_rows", "message"),
    [
        ([("2025-05-01", "45.69", "3")], "Quarry (Decimal('45.67'), Decimal('3'))"),
        ([("2025-05-01", "45.67", "4")], "Cube (Decimal('45.67'), Decimal('4'))"),
        ([("2025-05-02", "45.67", "3")], "different groups"),
    ],
)
def test_a_different_answer_stops_the_run(
    cube_rows: list[tuple[str, str, str]], message: str
) -> None:
    quarry = _quarry_keyed(
        "store_month_days", [{"day": "2025-05-01", "total_sales": 45.67, "orders": 3}]
    )
    cube = _cube_keyed(
        "store_month_days",
        [
            {
                "sales.happened_at.day": f"{day}T00:00:00.000",
                "sales.total_sales": total,
                "sales.orders": orders,
            }
            for day, total, orders in cube_rows
        ],
        NAMES,
    )
    with pytest.raises(RuntimeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_same("store_month_days", quarry, cube)
