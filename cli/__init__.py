"""The `quarry` command line: the top floor. It may import every other package; nothing
imports it."""
