"""`python -m bench.cube_compare`: issue 29's side-by-side with Cube 0.33 on DuckDB.

The three shapes the issue names (monthly total by store over a year, top 10 products, a
month of one store's days in its zone) are asked of Quarry's API (uvicorn, the query cache
off, as the query section asks them) and of Cube's REST API (`bench/cube`: Cube 0.33's
server core on DuckDB, no pre-aggregations), one request of each in turn per round so that
the machine's load weighs on both alike. Cube keeps results in memory and `renewQuery`
still answers from there while its refresh key holds, so each Cube request carries a filter
that keeps every row with a value of its own (`store_id != 'nonce-N'`): a new cache key,
a query run. Before timing, each shape's answers are compared (the same groups, every
amount within a cent: Cube sums doubles) and a disagreement stops the run.

Cube reads a plain DuckDB file holding the bench home's sales facts and exchange rates
(copied at the published snapshot, under the home's `cube/`), not the lake: a native table
is Cube's best case. Cube is installed into `bench/cube/node_modules` on first use with the
machine's `npm` (`--ignore-scripts`: the scripts fetch Cube Store's binaries, which a query
without pre-aggregations does not use; no lock file is written).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import click
import duckdb
import httpx

from bench.dataset import ACCOUNT_TIMEZONE, Dataset, create_key, open_synced
from bench.queries import bench_queries, own_store
from bench.server import LOOPBACK, ApiServer, Service, free_port
from bench.stats import Timings
from warehouse.reader import WarehouseReader

CUBE_DIR = Path(__file__).resolve().parent / "cube"
# The targets: faster than Cube, and at least this many times (p50 over p50).
TARGETS = {"monthly_by_store": 4.0, "top_products": 1.0, "store_month_days": 1.0}
YEAR = ["2024-07-01", "2025-06-30"]
CENT = Decimal("0.01")
CONTINUE_WAIT = "Continue wait"
# A shape's answer as {group: amounts}, in Quarry's terms.
Keyed = dict[tuple[Any, ...], tuple[Decimal, ...]]


def ensure_installed() -> None:
    """Cube's packages in bench/cube/node_modules (package.json pins them)."""
    if (CUBE_DIR / "node_modules" / "@cubejs-backend" / "server-core").is_dir():
        return
    npm = shutil.which("npm")
    if npm is None:
        raise click.ClickException("the Cube comparison needs Node.js and npm on the PATH")
    subprocess.run(
        [npm, "install", "--ignore-scripts", "--no-audit", "--no-fund", "--no-package-lock"],
        cwd=CUBE_DIR,
        check=True,
    )


def copy_facts(dataset: Dataset, target: Path) -> None:
    """The sales facts and exchange rates of the published snapshot, as plain tables. Written
    through a connection of its own, closed before Cube opens the file: a database the lake's
    connection had attached stays locked by this process."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    reader = WarehouseReader(dataset.settings, dataset.registry)
    try:
        with reader.read(dataset.store_ids) as cursor:
            sales = cursor.execute(
                "SELECT store_id, currency, order_id, event_type, product_title, happened_at, "
                "happened_at_store, total_sales FROM sales"
            ).to_arrow_table()
            rates = cursor.execute("SELECT * FROM exchange_rates").to_arrow_table()
    finally:
        reader.close()
    with duckdb.connect(str(target)) as database:
        database.register("sales_rows", sales)
        database.register("rate_rows", rates)
        database.execute("CREATE TABLE sales AS SELECT * FROM sales_rows")
        database.execute("CREATE TABLE exchange_rates AS SELECT * FROM rate_rows")


@contextmanager
def cube_server(database: Path, log_dir: Path) -> Iterator[str]:
    """Cube's REST API on a free loopback port, reading `database`; its base URL."""
    port = free_port()
    node = shutil.which("node") or "node"
    env = {**os.environ, "CUBE_DUCKDB_PATH": str(database.resolve()), "CUBE_PORT": str(port)}
    env.update({"NODE_ENV": "production", "CUBEJS_DEV_MODE": "false"})
    service = Service("cube", [node, str(CUBE_DIR / "server.js")], env, log_dir / "cube.log")
    url = f"http://{LOOPBACK}:{port}"
    service.start()
    try:
        service.wait_until(
            lambda: httpx.get(f"{url}/readyz", timeout=2).status_code < 500, 60, "/readyz"
        )
        yield url
    finally:
        service.stop()


def cube_queries(dataset: Dataset) -> dict[str, dict[str, Any]]:
    """Cube's form of each shape, as bench.queries asks it of Quarry."""
    own = own_store(dataset)
    return {
        "monthly_by_store": {
            "measures": ["sales.total_sales"],
            "dimensions": ["sales.store_id"],
            "timeDimensions": [
                {"dimension": "sales.happened_at", "granularity": "month", "dateRange": YEAR}
            ],
            "timezone": ACCOUNT_TIMEZONE,
        },
        "top_products": {
            "measures": ["sales.total_sales"],
            "dimensions": ["sales.product_title"],
            "timeDimensions": [{"dimension": "sales.happened_at", "dateRange": YEAR}],
            "order": {"sales.total_sales": "desc"},
            "limit": 10,
            "timezone": ACCOUNT_TIMEZONE,
        },
        "store_month_days": {
            "measures": ["sales.total_sales", "sales.orders"],
            "filters": [{"member": "sales.store_id", "operator": "equals", "values": [own.id]}],
            "timeDimensions": [
                {
                    "dimension": "sales.happened_at",
                    "granularity": "day",
                    "dateRange": ["2025-05-01", "2025-05-31"],
                }
            ],
            "timezone": own.timezone,
        },
    }


class CubeClient:
    """Cube's /load, a new cache key per request."""

    def __init__(self, url: str) -> None:
        self._client = httpx.Client(base_url=url, headers={"Authorization": "bench"}, timeout=300)
        self._asked = 0

    def load(self, query: Mapping[str, Any]) -> list[dict[str, Any]]:
        self._asked += 1
        fresh = {
            "member": "sales.store_id",
            "operator": "notEquals",
            "values": [f"nonce-{self._asked}"],
        }
        asked = {**query, "filters": [*query.get("filters", []), fresh]}
        params = {"query": json.dumps(asked)}
        # A query still running after Cube's continueWaitTimeout (a few seconds: a 10M-order
        # scan) is answered "Continue wait"; its client asks again and is answered from the
        # same run, as Cube's own client does.
        while True:
            response = self._client.get("/cubejs-api/v1/load", params=params)
            body = response.json()
            if response.status_code != 200 or body.get("error") != CONTINUE_WAIT:
                break
        if response.status_code != 200 or "error" in body:
            raise RuntimeError(f"Cube answered {response.status_code}: {str(body)[:500]}")
        return list(body["data"])


def _cube_keyed(name: str, rows: list[dict[str, Any]], names: Mapping[str, str]) -> Keyed:
    """Cube's rows as {group: (amounts...)}, in Quarry's terms (store names, ISO dates)."""
    out: Keyed = {}
    for row in rows:
        total = Decimal(row["sales.total_sales"]).quantize(CENT)
        if name == "monthly_by_store":
            key = (names[row["sales.store_id"]], row["sales.happened_at.month"][:10])
            out[key] = (total,)
        elif name == "top_products":
            out[(row["sales.product_title"],)] = (total,)
        else:
            out[(row["sales.happened_at.day"][:10],)] = (total, Decimal(row["sales.orders"]))
    return out


def _quarry_keyed(name: str, rows: list[dict[str, Any]]) -> Keyed:
    out: Keyed = {}
    for row in rows:
        if row.get("total_sales") is None:
            continue  # a filled bucket without sales: Cube lists no such group
        total = Decimal(str(row["total_sales"]))
        if name == "monthly_by_store":
            out[(row["store"], row["month"])] = (total,)
        elif name == "top_products":
            out[(row["product_title"],)] = (total,)
        else:
            out[(row["day"],)] = (total, Decimal(row["orders"]))
    return out


def check_same(name: str, quarry: Keyed, cube: Keyed) -> None:
    """The same groups, each amount within a cent (Cube sums doubles)."""
    if set(quarry) != set(cube):
        raise RuntimeError(
            f"{name}: Quarry and Cube answer different groups: only Quarry "
            f"{sorted(set(quarry) - set(cube), key=str)[:5]}, only Cube "
            f"{sorted(set(cube) - set(quarry), key=str)[:5]}"
        )
    for key, values in quarry.items():
        if any(abs(q - c) > CENT for q, c in zip(values, cube[key], strict=True)):
            raise RuntimeError(f"{name}: {key}: Quarry {values}, Cube {cube[key]}")


def measure(
    quarry: Callable[[], httpx.Response], cube: Callable[[], Any], rounds: int
) -> tuple[Timings, Timings]:
    for _ in range(3):
        quarry().raise_for_status()
        cube()
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(rounds):
        started = time.perf_counter()
        quarry().raise_for_status()
        ours.append(time.perf_counter() - started)
        started = time.perf_counter()
        cube()
        theirs.append(time.perf_counter() - started)
    return Timings.of_seconds(ours), Timings.of_seconds(theirs)


def compare(home: Path, rounds: int) -> dict[str, Any]:
    ensure_installed()
    dataset = open_synced(home)
    key = create_key(dataset)
    database = dataset.home / "cube" / "sales.duckdb"
    copy_facts(dataset, database)
    texts = {q.name: q.text for q in bench_queries(dataset)[0]}
    names = {s.id: s.name for s in dataset.stores}
    out: dict[str, Any] = {"orders": dataset.orders, "load_at_start": os.getloadavg()}
    logs = dataset.home / "logs"
    with cube_server(database, logs) as cube_url, ApiServer(dict(os.environ), logs) as api:
        cube = CubeClient(cube_url)
        with httpx.Client(
            base_url=api.url, headers={"Authorization": f"Bearer {key}"}, timeout=300
        ) as client:
            for name, query in cube_queries(dataset).items():
                text = texts[name]
                answer = client.post("/v1/query", json={"query": text})
                answer.raise_for_status()
                check_same(
                    name,
                    _quarry_keyed(name, answer.json()["rows"]),
                    _cube_keyed(name, cube.load(query), names),
                )
                ours, theirs = measure(
                    lambda text=text: client.post("/v1/query", json={"query": text}),
                    lambda query=query: cube.load(query),
                    rounds,
                )
                speedup = theirs.p50 / ours.p50
                out[name] = {
                    "quarry": ours.to_json(),
                    "cube": theirs.to_json(),
                    "quarry_source": answer.headers.get("x-quarry-source"),
                    "cube_over_quarry": round(speedup, 2),
                    "target": f">= {TARGETS[name]:g}x",
                    "met": speedup > 1 and speedup >= TARGETS[name],
                }
    out["load_at_end"] = os.getloadavg()
    return out


@click.command()
@click.option("--home", type=click.Path(path_type=Path), default=Path(".quarry-bench"))
@click.option("--rounds", default=30, show_default=True, help="Timed requests of each.")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="JSON results.")
def main(home: Path, rounds: int, out: Path | None) -> None:
    """Issue 29's side-by-side with Cube 0.33 on a bench home `python -m bench` synced."""
    results = compare(home, rounds)
    if out is not None:
        out.write_text(json.dumps(results, indent=2) + "\n")
    click.echo("| Shape | Quarry p50 | Cube p50 | Cube / Quarry | target | met |")
    click.echo("|---|---:|---:|---:|---|---|")
    for name in TARGETS:
        row = results[name]
        click.echo(
            f"| {name} ({row['quarry_source']}) | {row['quarry']['p50_ms']:.2f} ms | "
            f"{row['cube']['p50_ms']:.2f} ms | {row['cube_over_quarry']:.2f}x | "
            f"{row['target']} | {'yes' if row['met'] else '**no**'} |"
        )


if __name__ == "__main__":
    main()
