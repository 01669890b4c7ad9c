"""The benchmark harness end to end at 10,000 orders, so it cannot rot: every section
either has its figures, with numbers, or says why it is not available."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUERIES = (
    "monthly_trend", "store_breakdown", "top_products", "weekly_customers",
    "compare_previous_period", "store_membership", "dst_week", "jpy_store",
    "minutes_30_days", "hours_year", "country_top_products_daily", "customers_by_first_order",
    "returning_customers_monthly",
    "monthly_by_store", "store_month_days",
)  # fmt: skip
EXPECTED = {
    "fleet": [
        f"fleet.3.{name}"
        for name in (
            "first_sync_seconds", "no_change_tick_seconds", "changed_tick_seconds",
            "no_change_cpu_per_store",
        )
    ],
    "sync": ["sync.full.orders_per_second", "sync.incremental.merge_seconds"],
    "query": [
        *(f"query.{name}.{p}" for name in QUERIES for p in ("p50", "p95", "facts_only.p50")),
        "rollups.size_share",
        # Issue 29's bar, held for each shape a rollup answered (this one always is).
        "query.monthly_trend.rollup_target",
    ],
    "records": [
        "records.page_filtered.p50", "records.deep_page.p50", "records.by_id.p50",
        "records.throughput_16",
    ],
    "exports": [
        "exports.trivial_run_seconds", "exports.csv_all_orders_seconds",
        "exports.xlsx_all_orders_seconds", "exports.small_100_rows_seconds",
        "exports.parquet_all_orders_seconds", "exports.changed_rows_1pct_seconds",
    ],
}  # fmt: skip


@pytest.mark.slow
def test_harness_runs_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "results" / "latest.json"
    command = [
        sys.executable, "-m", "bench", "--orders", "10000", "--stores", "1",
        "--home", str(tmp_path / "home"), "--out", str(out),
        "--repeats", "3", "--load-seconds", "2", "--quick", "--fleet-stores", "3",
    ]  # fmt: skip
    completed = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=540, check=False
    )
    assert completed.returncode == 0, completed.stderr[-3000:]

    results = json.loads(out.read_text())
    sections = results["sections"]
    assert set(sections) == set(EXPECTED)
    for name, expected in EXPECTED.items():
        section = sections[name]
        if not section["available"]:
            # Only exports may be missing, and then with the reason.
            assert name == "exports", f"{name}: {section['reason']}"
            assert section["reason"].startswith("not available: ")
            continue
        figures = {f["name"]: f for f in section["figures"]}
        for figure_name in expected:
            assert figure_name in figures, f"{figure_name} missing from {name}"
        for figure in figures.values():
            assert isinstance(figure["ours"], int | float) and math.isfinite(figure["ours"])
            if figure["target"] is not None:
                assert isinstance(figure["met"], bool), figure
                assert figure["floor"] is None or math.isfinite(figure["floor"])
    machine = results["machine"]
    assert machine["cores"] and machine["python"] and machine["duckdb"]

    markdown = out.with_suffix(".md").read_text()
    assert markdown.startswith("# Quarry benchmark")
    assert machine["cpu"] in markdown and "DuckDB" in markdown
    for title in ("## Sync", "## Query", "## Records", "## Exports"):
        assert title in markdown
    assert "# Quarry benchmark" in completed.stdout

    # The profiler runs on the home the harness left: one store's change, by kind of work.
    prof = tmp_path / "change.prof"
    profiled = subprocess.run(
        [sys.executable, "-m", "bench.profile_sync", "--home", str(tmp_path / "home"),
         "--change", "100", "--out", str(prof)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert profiled.returncode == 0, profiled.stderr[-3000:]
    lines = profiled.stdout.splitlines()
    assert "change of 100 orders" in lines[0] and "'orders': 100" in lines[0]
    seconds = {
        line.rsplit(" ", 2)[0].strip(): float(line.split()[-2])
        for line in lines[1:]
        if line.endswith(" s")
    }
    assert seconds["asset checks (key_health)"] > 0 and seconds["sales model"] > 0
    assert seconds["Dagster event writes"] > 0 and prof.stat().st_size > 0

    # The query profiler on the same home: the floor's one statement and the engine's, each
    # with its time and DuckDB's operators, and the whole profiles as JSON.
    report = tmp_path / "query.json"
    queried = subprocess.run(
        [sys.executable, "-m", "bench.profile_query", "--home", str(tmp_path / "home"),
         "--query", "store_breakdown", "--repeats", "1", "--out", str(report)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert queried.returncode == 0, queried.stderr[-3000:]
    assert queried.stdout.startswith("Breakdown by store with totals (10,000 orders)")
    assert "TABLE_SCAN sales" in queried.stdout and "outside DuckDB" in queried.stdout
    profiles = json.loads(report.read_text())
    [floor] = profiles["floor"]["statements"]
    assert floor["seconds"] > 0 and floor["profile"]["children"]
    engine = profiles["engine"]["statements"]
    assert any("GROUPING SETS" in s["sql"] and s["profile"]["children"] for s in engine)
