"""Benchmark harness (placeholder: a later issue builds it)."""
