"""The benchmark harness: `python -m bench` (`make bench`). See docs/benchmark.md."""
