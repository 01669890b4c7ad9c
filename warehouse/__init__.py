"""Data plane: the catalog, Delta tables, the DuckDB reader, record reads and the query
language. Shared by api/ and pipelines/."""
