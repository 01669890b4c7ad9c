"""Dagster code location (workspace.yaml -> pipelines.definitions): sync assets, the sales
model, exchange rates, checks, jobs, schedules and sensors.

A Dagster run worker starts opening the lake here, before the location's imports
(pipelines.run_worker); in every other process this does nothing."""

from pipelines.run_worker import open_the_lake_early

open_the_lake_early()
