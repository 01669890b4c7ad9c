"""Tokens of the query language, with the position of each for diagnostics.

Keywords are not a token kind: every word is an IDENT and the parser decides, case-
insensitively, whether it is a keyword where it stands. That keeps field names such as
`orders` or `day` usable without quoting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from warehouse.query.diagnostics import Diagnostic, Pos


class Kind(Enum):
    IDENT = "identifier"
    QUOTED = "quoted name"
    STRING = "string"
    NUMBER = "number"
    DATE = "date"
    DATETIME = "timestamp"
    OFFSET = "offset"
    OP = "operator"
    EOF = "end of query"


@dataclass(frozen=True)
class Token:
    kind: Kind
    text: str
    pos: Pos
    # The decoded value: a string's content, a quoted name, or the raw text otherwise.
    value: str

    def is_word(self, *words: str) -> bool:
        return self.kind is Kind.IDENT and self.text.lower() in words


# Order matters: a date must win over a number, an offset over a minus sign.
_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:\d{2})?"
)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?![\w:])")
# Offset units: s, min, h, d, w, m (month), q, y. An unsigned offset (0m) is one a date
# function takes (startOfMonth(0m)); "min" is tried before "m".
_OFFSET = re.compile(r"-?\d+(?:min|[shdwmqy])(?!\w)")
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?![\w])")
# A number run into letters (-7D, 30days, 10abc): neither a number nor an offset. Lexed
# whole, so the diagnostic names it once instead of a stray '-' and '7'.
_GLUED = re.compile(r"-?\d+(?:\.\d+)?[^\W\d]\w*")
# Letters of any script: a misspelt name such as `sälës` is then an unknown name the
# checker can suggest a known one for, not a character-by-character complaint.
_IDENT = re.compile(r"[^\W\d]\w*")
_OFFSET_UNITS = "s, min, h, d, w, m (month), q, y"
_OPS = ("!=", "<>", "<=", ">=", "=", "<", ">", "+", "-", "*", "/", "(", ")", ",")


def lex(text: str) -> tuple[list[Token], list[Diagnostic]]:
    """Split `text` into tokens (ending with EOF). Bad characters and unterminated strings
    become diagnostics and lexing goes on, so the parser can report later errors too."""
    tokens: list[Token] = []
    errors: list[Diagnostic] = []
    i, line, line_start = 0, 1, 0
    n = len(text)

    def pos_at(index: int) -> Pos:
        return Pos(line, index - line_start + 1)

    while i < n:
        ch = text[i]
        if ch == "\n":
            i += 1
            line, line_start = line + 1, i
            continue
        if ch.isspace():
            i += 1
            continue
        if text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                errors.append(Diagnostic(pos_at(i), "Unterminated comment: add */."))
                break
            # Keep line numbers right after a multi-line comment.
            for k in range(i, end + 2):
                if text[k] == "\n":
                    line, line_start = line + 1, k + 1
            i = end + 2
            continue
        start = pos_at(i)
        if ch in "'\"":
            value, j, ok = _quoted(text, i, ch)
            if not ok:
                what = "string" if ch == "'" else "quoted name"
                errors.append(Diagnostic(start, f"Unterminated {what}: add the closing {ch}."))
                break
            kind = Kind.STRING if ch == "'" else Kind.QUOTED
            tokens.append(Token(kind, text[i:j], start, value))
            i = j
            continue
        matched = False
        for pattern, kind in (
            (_DATETIME, Kind.DATETIME),
            (_DATE, Kind.DATE),
            (_OFFSET, Kind.OFFSET),
            (_NUMBER, Kind.NUMBER),
            (_IDENT, Kind.IDENT),
        ):
            m = pattern.match(text, i)
            if m:
                tokens.append(Token(kind, m.group(), start, m.group()))
                i = m.end()
                matched = True
                break
        if matched:
            continue
        glued = _GLUED.match(text, i)
        if glued:
            word = glued.group()
            if _OFFSET.fullmatch(word.lower()):
                # Read as the offset it most likely means, so the parse goes on cleanly.
                tokens.append(Token(Kind.OFFSET, word.lower(), start, word.lower()))
                message = (
                    f"Offset units are lowercase ({_OFFSET_UNITS}): write '{word.lower()}' "
                    f"for '{word}'."
                )
            else:
                message = (
                    f"'{word}' is neither a number nor a date offset (a whole number and a "
                    f"lowercase unit: {_OFFSET_UNITS}, as in -30d)."
                )
            errors.append(Diagnostic(start, message))
            i = glued.end()
            continue
        op = next((o for o in _OPS if text.startswith(o, i)), None)
        if op:
            tokens.append(Token(Kind.OP, op, start, "!=" if op == "<>" else op))
            i += len(op)
            continue
        errors.append(Diagnostic(start, f"Unexpected character {ch!r}."))
        i += 1
    tokens.append(Token(Kind.EOF, "", pos_at(i) if i <= n else pos_at(n), ""))
    return tokens, errors


def _quoted(text: str, i: int, quote: str) -> tuple[str, int, bool]:
    """Content of the quoted token at i; a doubled quote or a backslash escapes one."""
    out: list[str] = []
    j = i + 1
    while j < len(text):
        ch = text[j]
        if ch == "\\" and j + 1 < len(text):
            out.append(text[j + 1])
            j += 2
            continue
        if ch == quote:
            if text.startswith(quote * 2, j):
                out.append(quote)
                j += 2
                continue
            return "".join(out), j + 1, True
        if ch == "\n":
            return "".join(out), j, False
        out.append(ch)
        j += 1
    return "".join(out), j, False
