"""An export job's figures for /metrics (quarry.measures): its time by format, destination
kind and outcome, and its failure by kind, written to the registry as the job ends. Never
the job's id: that would be a series per job."""

from __future__ import annotations

from sqlalchemy.exc import SQLAlchemyError

from quarry.measures import TALLY
from registry.db import Registry
from registry.measures import write_tally
from registry.models import ExportConfig, ExportJob


def record_export(registry: Registry, job_id: str, seconds: float, failure: str | None) -> None:
    """`failure`: None for a completed job, else its kind (`export`, `export_delivery`)."""
    file_format = destination = "unknown"
    try:
        with registry.session() as session:
            job = session.get(ExportJob, job_id)
            config = session.get(ExportConfig, job.config_id) if job is not None else None
            if config is not None:
                file_format, destination = config.format, config.destination_kind
    except SQLAlchemyError:
        pass  # measuring never fails the job: its figures go under "unknown"
    labels = {
        "format": file_format,
        "destination": destination,
        "status": "failed" if failure else "completed",
    }
    TALLY.observe("quarry_export_duration_seconds", labels, seconds)
    if failure:
        TALLY.count("quarry_failures", {"kind": failure})
    write_tally(registry)
