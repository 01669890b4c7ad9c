"""The version of quarry-client (pyproject.toml reads it from here)."""

__version__ = "2.0.0"
