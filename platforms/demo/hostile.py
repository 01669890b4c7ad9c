"""Hostile text: the values the hostile demo store (the third, JPY, Asia/Tokyo) mixes into
about 5% of its text fields, so every export, API and query feature meets them.

Other tests import HOSTILE_VALUES to check their own handling (CSV quoting, spreadsheet
formula injection, XLSX control characters, JSON escaping, very long cells).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


@dataclass(frozen=True)
class HostileValue:
    kind: str
    text: str


LONG_TEXT_LENGTH = 40_000


def _long_text() -> str:
    # Quotes, commas and a newline repeat through it, so a truncating or splitting writer
    # is caught too.
    unit = 'Lorem ipsum, "dolor" sit amet; consectetur\nadipiscing elit. '
    return (unit * (LONG_TEXT_LENGTH // len(unit) + 1))[:LONG_TEXT_LENGTH]


_CONTROL_ALL = "".join(chr(c) for c in range(1, 32)) + "\x7f"

HOSTILE_VALUES: tuple[HostileValue, ...] = (
    HostileValue("formula_equals", '=HYPERLINK("http://x","y")'),
    HostileValue("formula_equals", "=1+2"),
    HostileValue("formula_equals", "=cmd|' /C calc'!A0"),
    HostileValue("formula_plus", "+1-555-0100"),
    HostileValue("formula_plus", "+SUM(1,2)"),
    HostileValue("formula_minus", "-2+3"),
    HostileValue("formula_minus", "-@A1"),
    HostileValue("formula_at", "@SUM(A1)"),
    HostileValue("tab_prefix", "\tTabbed value"),
    HostileValue("cr_prefix", "\rCarriage return first"),
    HostileValue("newline", "Line one\nLine two"),
    HostileValue("newline", "Windows\r\nline ending"),
    HostileValue("control_chars", f"ctrl{_CONTROL_ALL}end"),
    HostileValue("control_chars", "bell\x07 escape\x1b[31mred\x1b[0m del\x7f"),
    HostileValue("nul", "nul\x00byte"),
    HostileValue("quotes", 'She said "hello"'),
    HostileValue("quotes", "It's O'Brien's"),
    HostileValue("quotes", '"""triple"""'),
    HostileValue("commas", "Smith, Jr., Esq."),
    HostileValue("commas", "a,b;c\td|e"),
    # Full-width digits and hyphens on purpose: they look like ASCII and are not.
    HostileValue("japanese", "東京都渋谷区神宮前\uff11\uff0d\uff12\uff0d\uff13"),
    HostileValue("japanese", "ｶﾀｶﾅ半角テスト"),
    HostileValue("arabic", "مرحبا بالعالم"),
    HostileValue("bidi", "\u202eevil\u202c reversed"),
    HostileValue("cyrillic", "Привет, мир"),
    HostileValue("emoji", "🎉🛒 Party 👩\u200d👩\u200d👧\u200d👦"),
    HostileValue("emoji", "🇯🇵🇺🇸"),
    HostileValue("html", '<script>alert("x")</script>'),
    HostileValue("html", "&amp; &lt;b&gt;"),
    HostileValue("sql", "Robert'); DROP TABLE students;--"),
    HostileValue("backslash", "C:\\path\\to\\file"),
    HostileValue("whitespace", "  padded  "),
    HostileValue("whitespace", "\u00a0nbsp\u200bzero-width"),
    HostileValue("empty", ""),
    HostileValue("null_word", "NULL"),
    HostileValue("numeric_looking", "00123"),
    HostileValue("numeric_looking", "1e5"),
    HostileValue("numeric_looking", "1,234.56"),
    HostileValue("date_looking", "2024-01-02"),
    HostileValue("combining", "e\u0301 vs \u00e9"),
)

# Long values go only into columns no other table copies (tags, notes), so one 40,000-char
# product title is not repeated on a million order lines.
LONG_VALUES: tuple[HostileValue, ...] = (HostileValue("long_text", _long_text()),)

HOSTILE_KINDS: frozenset[str] = frozenset(v.kind for v in HOSTILE_VALUES + LONG_VALUES)
HOSTILE_RATE = 0.05
# Long values per store and generation run: a few, not thousands.
MAX_LONG_VALUES = 8


class HostileInjector:
    """Replaces a share of each text column's values with hostile ones, cycling through every
    kind across all the columns it touches, so even a small store holds each kind. Disabled
    (the identity) for stores that are not hostile."""

    def __init__(
        self, rng: np.random.Generator, *, enabled: bool, rate: float = HOSTILE_RATE
    ) -> None:
        self._rng = rng
        self.enabled = enabled
        self._rate = rate
        self._next = 0
        self._long_slots = 0
        self._longs = 0

    def apply(self, values: pa.Array, *, allow_long: bool = False) -> pa.Array:
        """`values` with about `rate` of them (never nulls) replaced by hostile text."""
        if not self.enabled or len(values) == 0:
            return values
        chosen = (self._rng.random(len(values)) < self._rate) & ~np.asarray(
            values.is_null().to_numpy(zero_copy_only=False)
        )
        picks = np.flatnonzero(chosen)
        if len(picks) == 0:
            return values
        texts = [self._take(allow_long) for _ in range(len(picks))]
        return pc.replace_with_mask(values, pa.array(chosen), pa.array(texts, pa.string()))

    def _take(self, allow_long: bool) -> str:
        if allow_long:
            # One hostile value in twenty is a long one where allowed: "a few" per store.
            slot = self._long_slots
            self._long_slots += 1
            if slot % 20 == 0 and self._longs < MAX_LONG_VALUES:
                self._longs += 1
                return LONG_VALUES[self._longs % len(LONG_VALUES)].text
        value = HOSTILE_VALUES[self._next % len(HOSTILE_VALUES)]
        self._next += 1
        return value.text
