"""Local folder delivery, for the sample configurations and single-machine setups.

The file is put under a temporary name in the target folder, made durable with fsync and
moved into place with os.replace, which is atomic on one file system. The folder must lie
inside QUARRY_HOME so a configuration cannot write over files elsewhere on the machine.

On the job's own file system the delivered file is a hard link to the job's file, not a
copy: a large export is not written to disk twice. A job's file is read-only
(exports.files.produce), so the link cannot be edited in place by accident, which would change
what the job's download serves; a person who wants to edit it saves a copy. Across file
systems (or where links are not allowed) the file is copied.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

from destinations.base import (
    BaseDestination,
    Delivery,
    DeliveryError,
    Receipt,
    call_quietly,
    temporary_name,
)
from destinations.fields import FieldReader
from quarry.settings import Settings

DEFAULT_FOLDER = "deliveries"


class LocalDestination(BaseDestination):
    kind: ClassVar[str] = "local"

    @classmethod
    def _read_settings(cls, fields: FieldReader, app_settings: Settings) -> dict[str, Any]:
        folder = fields.text("folder", default=DEFAULT_FOLDER) or DEFAULT_FOLDER
        path = PurePosixPath(folder)
        if not fields.has_error("folder"):
            if path.is_absolute():
                if not _inside(Path(folder), app_settings.home):
                    fields.error("folder", "must be inside QUARRY_HOME")
            elif ".." in path.parts:
                fields.error("folder", "must not contain '..'")
        return {"folder": folder}

    def folder(self) -> Path:
        folder = Path(self.settings["folder"])
        return folder if folder.is_absolute() else self.app_settings.home / folder

    def target(self) -> str:
        return str(self.folder())

    def _deliver_once(self, delivery: Delivery, size: int, sha256: str) -> Receipt:
        folder = self.folder()
        # Checked again here: a symlink made after the configuration was applied must not
        # lead outside QUARRY_HOME.
        if not _inside(folder, self.app_settings.home):
            raise DeliveryError("folder is not inside QUARRY_HOME")
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / temporary_name(delivery)
        final = folder / delivery.file_name
        try:
            # A retry's partial file from an earlier attempt: a link cannot replace it.
            partial.unlink(missing_ok=True)
            if not _link(delivery.path, partial):
                shutil.copyfile(delivery.path, partial)
            descriptor = os.open(partial, os.O_RDONLY)
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
            os.replace(partial, final)
            # Renaming a link over another link of the same file (this job's file delivered
            # again) leaves both names: the partial one goes.
            partial.unlink(missing_ok=True)
        except BaseException:
            call_quietly(lambda: partial.unlink(missing_ok=True))
            raise
        return Receipt(kind=self.kind, location=str(final), bytes=size, sha256=sha256)

    def _failure(self, exc: Exception) -> DeliveryError:
        if isinstance(exc, PermissionError):
            return DeliveryError("permission denied writing to the folder")
        if isinstance(exc, OSError):
            return DeliveryError(f"cannot write the file ({exc.strerror or exc})")
        return super()._failure(exc)


# Why a hard link could not be made, when a copy will do instead: another file system, a
# file system without links, or a file at its link limit.
_NO_LINK = {errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP}


def _link(source: Path, link: Path) -> bool:
    """Hard-link `link` to `source`; False when only a copy can deliver the file."""
    try:
        os.link(source, link)
    except OSError as exc:
        if exc.errno in _NO_LINK:
            return False
        raise
    return True


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True
