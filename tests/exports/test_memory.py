"""An export's memory does not grow with its row count: each path writes N rows and then
5N rows in one fresh process, and the process's peak RSS may grow by a bounded amount
only, where holding the rows would grow it by all the added data.

- CSV by COPY (a 256 MB DuckDB memory limit: its ordered writer needs a few hundred MB
  whatever the row count), under 64 MB (where copy_csv leaves the file to the Arrow
  batches: COPY would run out of memory), and from Arrow batches under 64 MB, all
  sorted by DuckDB: its sort spills to disk past its limit (QUARRY_DUCKDB_MEMORY_LIMIT in
  a real run) and the writers stream, so the growth stays bounded while 100-400 MB of
  text is added. The script reports which parts COPY wrote, so a silent fallback cannot
  pass for the COPY path. (DuckDB 2.0 cannot spill a sort of rows holding text of ~500
  characters or more: such an export needs the memory limit to hold its text; noted in
  docs/exports.md.)
- XLSX, over fewer rows (xlsxwriter is slow): the growth is a few MB.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

NOTE_CHARS = 100
# path -> (N, 5N rows, sorted by DuckDB, DuckDB memory limit MB, MB the peak may grow).
# DuckDB's COPY needs a few hundred MB whatever the row count (its ordered CSV writer);
# with less, copy_csv falls back to the Arrow batches ("csv-low-memory").
CASES = {
    "csv": (750_000, 3_750_000, True, 256, 64),
    "csv-low-memory": (150_000, 750_000, True, 64, 64),
    "csv-batches": (200_000, 1_000_000, True, 64, 64),
    "xlsx": (40_000, 200_000, False, 64, 24),
}

SCRIPT = r"""
import json, resource, sys
from functools import partial
from pathlib import Path

import duckdb

from exports.files.csv_copy import CopySource, copy_csv
from exports.configs.options import FormatOptions
from exports.files.produce import Table, rows_of, stream_batches, write_file
from exports.files.xlsx_writer import MAX_DATA_ROWS

file_format, small, large, note, limit, sort, folder = sys.argv[1:8]
folder = Path(folder)
con = duckdb.connect(config={"memory_limit": f"{int(limit)}MB", "threads": 2,
                             "temp_directory": str(folder / "spill")})
con.execute("SET enable_progress_bar = false")  # it would write to stdout
con.execute(
    "CREATE VIEW big AS SELECT i AS n, 'o' || i AS name, repeat(chr(65 + (i % 26)::INTEGER), "
    f"{int(note)}) AS note, (i * 1.25)::DECIMAL(18, 2) AS price, "
    "TIMESTAMPTZ '2024-01-01 00:00:00+00' + i * INTERVAL 1 SECOND AS created_at "
    f"FROM range({int(large)}) t(i)"
)
columns = ['"name"', '"note"', '"price"', '"created_at"']
titles = ["Name", "Note", "Price", "Created at"]
peaks = []
copied = []


def copy(source, options, path):
    rows = copy_csv(con, source, titles, options, path)
    copied.append(rows is not None)
    return rows


for count in (int(small), int(large)):
    # Sorted by a hash, DuckDB must sort every row before the first leaves.
    source = CopySource(columns, f"FROM big WHERE n < {count}", "hash(n)" if sort == "1" else "n")
    sql = source.select(columns)
    # Lazy, as in exports.files.produce: an Arrow reader opened now would hold a result open on
    # the connection, and the COPY could not run beside it.
    batches = stream_batches(con, sql)
    by_copy = partial(copy, source) if file_format in ("csv", "csv-low-memory") else None
    table = Table("big", titles, rows_of(batches), batches, by_copy)
    target = folder / f"out-{count}.{'xlsx' if file_format == 'xlsx' else 'csv'}"
    kind = "csv" if file_format.startswith("csv") else file_format
    rows, _ = write_file(kind, FormatOptions(), iter([table]), target, MAX_DATA_ROWS)
    assert rows == count, (rows, count)
    peaks.append(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    target.unlink()
print(json.dumps({"peaks": peaks, "copied": copied}))
"""


@pytest.mark.parametrize("file_format", sorted(CASES))
def test_peak_memory_does_not_grow_with_the_rows(file_format: str, tmp_path: Path) -> None:
    small, large, sort, limit_mb, max_growth_mb = CASES[file_format]
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, file_format, str(small), str(large), str(NOTE_CHARS),
         str(limit_mb), "1" if sort else "0", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    small_kb, large_kb = report["peaks"]
    expected = {"csv": [True, True], "csv-low-memory": [False, False]}.get(file_format, [])
    assert report["copied"] == expected, report
    growth_mb = (large_kb - small_kb) / 1024
    print(f"{file_format}: peak RSS {small_kb // 1024} MB, then {large_kb // 1024} MB")
    assert growth_mb < max_growth_mb, f"{file_format}: peak RSS grew by {growth_mb:.1f} MB"
