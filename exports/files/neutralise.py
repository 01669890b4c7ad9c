"""Formula injection: text a spreadsheet would run as a formula is made inert.

A text value whose first character is `=`, `+`, `-`, `@`, TAB or CR is a formula (or starts
one) for Excel, LibreOffice and Google Sheets. CSV gets a leading apostrophe, which every
one of them reads as "this cell is text" (OWASP's advice); XLSX cells are always written as
strings and carry Excel's quote-prefix flag instead, so the value itself is unchanged.

Values that are real numbers never pass through here: numeric columns are written as
numbers. Text that is exactly a plain decimal number ("-12.30") is left alone too: a
spreadsheet reads it as that number, which cannot run anything.
"""

from __future__ import annotations

import re

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?")


def is_dangerous(text: str) -> bool:
    """True when a spreadsheet could read `text` as a formula."""
    return text.startswith(FORMULA_TRIGGERS) and not _PLAIN_NUMBER.fullmatch(text)


def neutralise(text: str) -> str:
    """`text` with a leading apostrophe when a spreadsheet could run it, else unchanged."""
    return "'" + text if is_dangerous(text) else text
