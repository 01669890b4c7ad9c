"""Data plane: the catalog, the DuckLake tables, the DuckDB reader, record reads and the query
language. Shared by api/ and pipelines/."""
