"""Everything exports contribute to the code location (resources come from the merge in
pipelines.definitions)."""

from __future__ import annotations

from dagster import Definitions

from pipelines.exports.jobs import export
from pipelines.exports.sensors import SENSORS

defs = Definitions(jobs=[export], sensors=SENSORS)
