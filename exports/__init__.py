"""Exports, plain Python (no Dagster, no HTTP): `configs` (the YAML recipe: read, validate,
save, schedule), `files` (writing CSV, XLSX and zip from one warehouse snapshot, and
removing them), `jobs` (one run of a recipe: its row, its state, and executing it).
pipelines/exports runs jobs in Dagster; api/ and cli/ call all three."""
