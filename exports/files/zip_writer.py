"""The zip writer: several files in one archive, written member by member.

Member names are sanitised: no directories (`/`, `\\`, `..`), no control characters or
characters Windows refuses, at most 100 characters, unique (case-insensitively). CSV members
are streamed straight into the archive with zip64 headers (their size is unknown until
written); other members are copied from a finished file, and zipfile switches to zip64 for
them when they need it, as it does for archives of more than 65,535 members.
"""

from __future__ import annotations

import io
import re
import unicodedata
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import TextIO

MAX_MEMBER_NAME = 100
_UNSAFE = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|]')


def member_name(name: str) -> str:
    """`name` as a safe, flat member name (without the uniqueness of ZipWriter)."""
    cleaned = _UNSAFE.sub("_", unicodedata.normalize("NFC", name)).strip(" .")
    if not cleaned:
        cleaned = "file"
    stem, suffix = PurePosixPath(cleaned).stem, PurePosixPath(cleaned).suffix
    if len(suffix) > 10:
        stem, suffix = cleaned, ""
    return stem[: MAX_MEMBER_NAME - len(suffix)].rstrip(" .") + suffix or "file"


class ZipWriter:
    """An archive at `path`; members are added one at a time, in order."""

    def __init__(self, path: Path) -> None:
        self._zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True)
        self._names: set[str] = set()
        self.members: list[str] = []

    def _unique(self, name: str) -> str:
        candidate = member_name(name)
        stem, suffix = PurePosixPath(candidate).stem, PurePosixPath(candidate).suffix
        number = 1
        while candidate.lower() in self._names:
            number += 1
            tail = f" ({number}){suffix}"
            candidate = stem[: MAX_MEMBER_NAME - len(tail)] + tail
        self._names.add(candidate.lower())
        self.members.append(candidate)
        return candidate

    @contextmanager
    def text_member(self, name: str) -> Iterator[TextIO]:
        """A UTF-8 text stream (newline="") writing member `name` as it goes."""
        info = zipfile.ZipInfo(self._unique(name))
        info.compress_type = zipfile.ZIP_DEFLATED
        with self._zip.open(info, "w", force_zip64=True) as raw:
            text = io.TextIOWrapper(raw, encoding="utf-8", newline="", write_through=False)
            try:
                yield text
            finally:
                text.flush()
                text.detach()

    def add_file(self, path: Path, name: str) -> None:
        """Copy a finished file in as member `name`."""
        self._zip.write(path, self._unique(name))

    def close(self) -> None:
        self._zip.close()
