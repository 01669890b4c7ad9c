"""Export jobs: a job's row (create, find, finish), its failure (recorded once and
alerted), its state as the API shows it, and its execution from claim to delivery (called
by the Dagster run in pipelines/exports)."""
