""".env.example: every setting Quarry reads from the environment, with its default, written
from the settings classes themselves (quarry.settings.Settings and
platforms.shopify.settings.ShopifySettings) so that it cannot drift from them.

`python -m cli.env_example` rewrites the file; `--check` (run by `make lint`) exits 1 when
the file in the repository is not what the classes give.
"""

from __future__ import annotations

import inspect
import re
import sys
from enum import Enum
from pathlib import Path

from pydantic import AliasChoices
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from platforms.shopify.settings import ShopifySettings
from quarry.settings import Settings

FILE = Path(__file__).resolve().parent.parent / ".env.example"
CLASSES: tuple[type[BaseSettings], ...] = (Settings, ShopifySettings)
# Defaults computed where the process starts: what they are, in words. A new computed
# default without an entry here stops the generator (and `make lint`).
COMPUTED = {
    "role_id": "this host's name",
    "duckdb_threads": "the number of CPUs",
}
HEADER = """\
# Every setting Quarry reads from the environment, each commented out with its default.
# Generated from the settings classes (quarry/settings.py, platforms/shopify/settings.py)
# by `python -m cli.env_example`; `make lint` fails when this file is out of date.
# docs/configuration.md says what each one does. Quarry reads the process environment
# only, not this file: copy it into your service manager's environment file (systemd
# EnvironmentFile=, docker --env-file, `set -a; . ./.env; set +a`) and uncomment what you
# change. An empty value means the default wherever the setting can be unset.
"""
_FIELD_LINE = re.compile(r"^    (\w+): ")


def variable(cls: type[BaseSettings], name: str, field: FieldInfo) -> str:
    """The variable a field is read from: its first alias choice, else prefix + NAME."""
    alias = field.validation_alias
    if isinstance(alias, AliasChoices) and isinstance(alias.choices[0], str):
        return alias.choices[0]
    if isinstance(alias, str):
        return alias
    return str(cls.model_config.get("env_prefix", "")) + name.upper()


def default_text(name: str, field: FieldInfo) -> tuple[str, str | None]:
    """(the value to write, a note when the default is computed at start)."""
    if field.default_factory is not None:
        if name not in COMPUTED:
            raise SystemExit(f"{name}: a computed default; describe it in cli.env_example.COMPUTED")
        return "", COMPUTED[name]
    value = field.default
    if value is None:
        return "", None
    if isinstance(value, bool):
        return ("on" if value else "off"), None
    if isinstance(value, Enum):
        return str(value.value), None
    if isinstance(value, float) and value.is_integer():
        return str(int(value)), None
    return str(value), None


def comments(cls: type[BaseSettings]) -> dict[str, list[str]]:
    """The comment lines written right above each field in the class's source."""
    found: dict[str, list[str]] = {}
    pending: list[str] = []
    for line in inspect.getsource(cls).splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            pending.append(stripped.lstrip("#").strip())
            continue
        match = _FIELD_LINE.match(line)
        if match and match.group(1) in cls.model_fields:
            found[match.group(1)] = pending
        if not line.startswith("        "):  # a continuation line keeps the field's comment
            pending = []
    return found


def render() -> str:
    parts = [HEADER]
    for cls in CLASSES:
        notes = comments(cls)
        parts.append(f"\n# --- {cls.__name__} ({inspect.getmodule(cls).__name__}) ---\n")  # type: ignore[union-attr]
        for name, field in cls.model_fields.items():
            value, computed = default_text(name, field)
            lines = [f"# {text}".rstrip() for text in notes.get(name, [])]
            if computed is not None:
                lines.append(f"# Default: {computed}.")
            lines.append(f"#{variable(cls, name, field)}={value}")
            parts.append("\n" + "\n".join(lines) + "\n")
    return "".join(parts)


def main(argv: list[str]) -> int:
    wanted = render()
    if "--check" in argv:
        current = FILE.read_text() if FILE.exists() else ""
        if current != wanted:
            print(f"{FILE.name} is out of date: run `python -m cli.env_example`", file=sys.stderr)
            return 1
        return 0
    FILE.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
