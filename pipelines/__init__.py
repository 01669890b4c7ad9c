"""Dagster code location (workspace.yaml -> pipelines.definitions): sync assets, the sales
model, exchange rates, checks, jobs, schedules and sensors."""
