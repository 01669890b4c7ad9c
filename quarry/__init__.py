"""Quarry core: settings, the domain error hierarchy, secrets, and the CLI."""
