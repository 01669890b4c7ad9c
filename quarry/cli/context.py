"""What every command shares: settings read at start-up, a registry migrated on first use."""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any

import click

from quarry.settings import Settings, load_settings
from registry.db import Registry


class AppContext:
    """Built once per invocation; settings are read here, not at import."""

    @cached_property
    def settings(self) -> Settings:
        return load_settings()

    @cached_property
    def registry(self) -> Registry:
        return Registry(self.settings)


pass_app = click.make_pass_decorator(AppContext, ensure=True)


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, default=str, ensure_ascii=False))
