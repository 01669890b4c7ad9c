"""Exports: saved configurations (the recipe), jobs (one run of it), the files they write
and the Dagster runs that execute them. Plain Python: pipelines/exports and the API call it."""
