"""Modelled tables, as plain Python and DuckDB: `sales` (sale events from orders) and
`exchange_rates` (daily rates from a pluggable provider). pipelines/ runs them."""
