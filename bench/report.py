"""The results: bench/results/latest.json (every figure with its floor, ratio, target and
whether it was met) and the same as a markdown table with the machine's description,
written to latest.md and printed."""

from __future__ import annotations

import json
import os
import platform
import sys
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from bench.stats import Section

SECTION_TITLES = {"sync": "Sync", "query": "Query", "records": "Records", "exports": "Exports"}


def machine() -> dict[str, Any]:
    """What the figures were measured on; the load average shows how busy it was."""
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gb": _memory_gb(),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "duckdb": _version("duckdb"),
        "ducklake": _version("duckdb-extension-ducklake"),
        "dagster": _version("dagster"),
        "uvicorn": _version("uvicorn"),
        "load_average": list(os.getloadavg()),
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def build(
    sections: dict[str, Section],
    *,
    machine_at_start: dict[str, Any],
    dataset: dict[str, Any],
    config: dict[str, Any],
) -> dict[str, Any]:
    figures = [f for s in sections.values() if s.unavailable is None for f in s.figures]
    held = [f for f in figures if f.met is not None]
    return {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine_at_start | {"load_average_at_end": list(os.getloadavg())},
        "dataset": dataset,
        "config": config,
        "sections": {name: section.to_json() for name, section in sections.items()},
        "summary": {
            "targets_met": sum(1 for f in held if f.met),
            "targets_missed": sum(1 for f in held if not f.met),
            "sections_not_available": [n for n, s in sections.items() if s.unavailable],
        },
    }


def write(results: dict[str, Any], json_path: Path) -> str:
    """Write the JSON and the markdown beside it (same name, .md); returns the markdown."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(results, indent=2, default=str) + "\n")
    text = markdown(results)
    json_path.with_suffix(".md").write_text(text)
    return text


def markdown(results: dict[str, Any]) -> str:
    m = results["machine"]
    d = results["dataset"]
    lines = [
        "# Quarry benchmark",
        "",
        f"Run {results['generated_at']}. Machine: {m['cpu']}, {m['cores']} cores, "
        f"{m['memory_gb']} GB; {m['os']}; Python {m['python']}, DuckDB {m['duckdb']}, "
        f"DuckLake extension {m['ducklake']}, Dagster {m['dagster']}, uvicorn {m['uvicorn']}.",
        f"Load average (1/5/15 min) at start {_load(m['load_average'])}, at end "
        f"{_load(m['load_average_at_end'])}: other work on the machine adds noise.",
        "",
        "Dataset: " + ", ".join(_pair(k, v) for k, v in d.items()),
        "",
    ]
    for name, section in results["sections"].items():
        lines.append(f"## {SECTION_TITLES.get(name, name)}")
        lines.append("")
        if not section["available"]:
            lines += [section["reason"], ""]
            continue
        lines += [
            "| Figure | Ours | Floor | Ratio | Target | Met |",
            "|---|---:|---:|---:|---|---|",
        ]
        for f in section["figures"]:
            met = {True: "yes", False: "**no**", None: ""}[f["met"]]
            lines.append(
                f"| {f['label']} | {_num(f['ours'])} {f['unit']} | "
                f"{_num(f['floor'])} | {_num(f['ratio'], 'x')} | {f['target'] or ''} | {met} |"
            )
        lines.append("")
        for key, reason in section["not_available"].items():
            lines.append(f"- {key}: {reason}")
        for f in section["figures"]:
            if f["note"]:
                lines.append(f"- {f['label']}: {f['note']}")
        for note in section["notes"]:
            lines.append(f"- {note}")
        lines.append("")
    s = results["summary"]
    lines.append(
        f"Targets met: {s['targets_met']}, missed: {s['targets_missed']}; sections not "
        f"available: {', '.join(s['sections_not_available']) or 'none'}."
    )
    return "\n".join(lines) + "\n"


def _pair(key: str, value: object) -> str:
    return f"{key} {value:,}" if isinstance(value, int) else f"{key} {value}"


def _num(value: float | None, suffix: str = "") -> str:
    if value is None:
        return ""
    if abs(value) >= 100:
        return f"{value:,.0f}{suffix}"
    return f"{value:.2f}{suffix}"


def _load(values: list[float]) -> str:
    return " / ".join(f"{v:.2f}" for v in values)
