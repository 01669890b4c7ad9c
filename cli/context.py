"""What every command shares: settings read at start-up, a registry migrated on first use,
and user errors rendered as one `error:` line."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from functools import cached_property
from typing import Any

import click
from sqlalchemy.exc import OperationalError

from quarry.errors import QuarryError
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


class QuarryGroup(click.Group):
    """Turns every QuarryError into `error: ...` on stderr and exit status 1, no traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except QuarryError as exc:
            click.echo(f"error: {exc.detail}", err=True)
            sys.exit(1)
        except OperationalError as exc:
            # The registry was reachable when the command started (migrations check that)
            # and went away during it: still one line, not a driver traceback.
            reason = str(exc.orig or exc).strip().splitlines()[0]
            click.echo(f"error: the registry database failed: {reason}", err=True)
            sys.exit(1)


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, default=str, ensure_ascii=False))


def echo_table(
    header: Sequence[str], rows: Iterable[Sequence[object]], *, indent: str = ""
) -> None:
    """Rows under a header row, in columns padded to their widest cell (the header is
    printed even when there are no rows; --json is the form for scripts)."""
    cells = [list(header)] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for row in cells:
        line = "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))
        click.echo(f"{indent}{line}".rstrip())
