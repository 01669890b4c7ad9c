"""The `quarry` command line."""
