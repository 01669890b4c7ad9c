"""Files every role must reach: export files and the demo platform's files.

They live where the warehouse data lives (docs/configuration.md): under QUARRY_HOME by
default, and under QUARRY_DATA_URL when it is set, beside the lake's own folder:

    <QUARRY_DATA_URL>/lake/      DuckLake's Parquet files (nothing else: DuckLake's
                                 cleanup deletes any file there that it does not track)
    <QUARRY_DATA_URL>/exports/   export files, one folder per job
    <QUARRY_DATA_URL>/demo/      the demo platform's stores

A FileStore is one such folder through pyarrow's filesystems (local or S3), so the same
code runs on one machine and on several. A file is written under a temporary name and
moved to its own, so a reader sees a whole file or none; temporary names end with
TEMPORARY_MARK and a random suffix, and `remove_temporaries` sweeps what a killed writer
left.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.fs as pafs

from quarry.settings import Settings

TEMPORARY_MARK = ".partial-"
CHUNK_BYTES = 1024 * 1024


@dataclass(frozen=True)
class FileStore:
    """Files under one folder of a filesystem; keys are '/'-separated paths below it."""

    filesystem: pafs.FileSystem
    base: str  # the folder's path in `filesystem`, no trailing slash
    url: str  # the folder as people write it, for messages

    def path(self, key: str) -> str:
        parts = [p for p in key.split("/") if p]
        if not parts or any(p in (".", "..") for p in parts):
            raise ValueError(f"not a file key: {key!r}")
        return "/".join([self.base, *parts])

    def local_path(self, key: str) -> Path | None:
        """The file's path when the store is a local folder (None on S3)."""
        if isinstance(self.filesystem, pafs.LocalFileSystem):
            return Path(self.path(key))
        return None

    def put_file(self, source: Path, key: str) -> None:
        """Copy a local file to `key`: under a temporary name first, then moved."""
        temporary = f"{key}{TEMPORARY_MARK}{uuid.uuid4().hex}"
        self.make_parent(temporary)
        try:
            pafs.copy_files(
                str(source),
                self.path(temporary),
                source_filesystem=pafs.LocalFileSystem(),
                destination_filesystem=self.filesystem,
            )
            self.filesystem.move(self.path(temporary), self.path(key))
        except BaseException:
            self._delete_file(temporary)
            raise

    def put_bytes(self, key: str, data: bytes) -> None:
        """Write `data` to `key`: under a temporary name first, then moved."""
        temporary = f"{key}{TEMPORARY_MARK}{uuid.uuid4().hex}"
        self.make_parent(temporary)
        try:
            with self.filesystem.open_output_stream(self.path(temporary)) as out:
                out.write(data)
            self.filesystem.move(self.path(temporary), self.path(key))
        except BaseException:
            self._delete_file(temporary)
            raise

    def open_input(self, key: str) -> pa.NativeFile:
        """The file for random access, every read seeing one version of it: a local open
        file keeps its version when another is moved over it; an S3 object is read whole in
        one request, since ranged reads of an object replaced meanwhile would mix two.
        FileNotFoundError when there is no such file."""
        if isinstance(self.filesystem, pafs.LocalFileSystem):
            return self.filesystem.open_input_file(self.path(key))
        with self.filesystem.open_input_file(self.path(key)) as remote:
            return pa.BufferReader(remote.read_buffer())

    def get_bytes(self, key: str) -> bytes | None:
        """The whole file, or None when there is none."""
        if self.size(key) is None:
            return None
        with self.filesystem.open_input_stream(self.path(key)) as stream:
            return bytes(stream.read())

    def size(self, key: str) -> int | None:
        """The file's size in bytes, or None when there is no such file."""
        info = self.filesystem.get_file_info(self.path(key))
        return info.size if info.type == pafs.FileType.File else None

    def chunks(self, key: str, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
        """The file's bytes, a chunk at a time (a download streams them)."""
        with self.filesystem.open_input_stream(self.path(key)) as stream:
            while chunk := stream.read(chunk_bytes):
                yield bytes(chunk)

    def keys(self, prefix: str = "") -> list[str]:
        """Keys of the files under `prefix` (a folder key, or "" for all), sorted."""
        folder = self.path(prefix) if prefix.strip("/") else self.base
        selector = pafs.FileSelector(folder, recursive=True, allow_not_found=True)
        found = self.filesystem.get_file_info(selector)
        return sorted(
            info.path[len(self.base) + 1 :] for info in found if info.type == pafs.FileType.File
        )

    def remove(self, prefix: str) -> None:
        """Remove the file or folder `prefix` and everything under it; no error if absent."""
        path = self.path(prefix)
        info = self.filesystem.get_file_info(path)
        if info.type == pafs.FileType.Directory:
            self.filesystem.delete_dir(path)
        elif info.type == pafs.FileType.File:
            self.filesystem.delete_file(path)

    def move(self, source: str, target: str) -> None:
        """Move the file or folder `source` to `target` (replacing a file there). A folder
        moves in one rename on a local disk, file by file on S3."""
        info = self.filesystem.get_file_info(self.path(source))
        if info.type == pafs.FileType.Directory and not isinstance(
            self.filesystem, pafs.LocalFileSystem
        ):
            for key in self.keys(source):
                self.filesystem.move(self.path(key), self.path(target + key[len(source) :]))
            # pyarrow leaves a marker object for each folder it moved the last file out of.
            self.remove(source)
            return
        self.make_parent(target)
        self.filesystem.move(self.path(source), self.path(target))

    def remove_temporaries(self, prefix: str = "") -> list[str]:
        """Remove the temporary files under `prefix` that writers left; returns their keys.
        Only for folders no writer is using (a job that ended, a store being replaced)."""
        left = [k for k in self.keys(prefix) if TEMPORARY_MARK in k.rsplit("/", 1)[-1]]
        for key in left:
            self._delete_file(key)
        return left

    def make_parent(self, key: str) -> None:
        """Create the folder `key` goes in (a local folder; nothing to do on S3, where a
        folder would be a marker object, a request or two per level on every write)."""
        if isinstance(self.filesystem, pafs.LocalFileSystem):
            parent = self.path(key).rsplit("/", 1)[0]
            self.filesystem.create_dir(parent, recursive=True)

    def _delete_file(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.filesystem.delete_file(self.path(key))


def staging_dir(settings: Settings) -> Path:
    """This role's own folder for files on their way to a store (an export run writes its
    file there when the store is not a local folder)."""
    return settings.home / "staging"


def export_files(settings: Settings) -> FileStore:
    """Where export files live: QUARRY_HOME/exports, or <QUARRY_DATA_URL>/exports."""
    return _store(settings, "exports", settings.exports_dir)


def demo_files(settings: Settings) -> FileStore:
    """Where the demo platform keeps its stores: QUARRY_HOME/demo, or <QUARRY_DATA_URL>/demo."""
    return _store(settings, "demo", settings.demo_dir)


def run_files(settings: Settings) -> FileStore:
    """Where Dagster runs hand values from step to step: QUARRY_HOME/runs, or
    <QUARRY_DATA_URL>/runs, so that a step on another worker host reads what the step
    before it wrote."""
    return _store(settings, "runs", settings.home / "runs")


def _store(settings: Settings, folder: str, local: Path) -> FileStore:
    if settings.data_url is None:
        local.mkdir(parents=True, exist_ok=True)
        return FileStore(pafs.LocalFileSystem(), str(local), str(local))
    root = settings.data_url.rstrip("/")
    url = f"{root}/{folder}"
    parts = urlsplit(url)
    if parts.scheme == "s3":
        filesystem = s3_filesystem(settings.s3_endpoint_url, settings.s3_region)
        return FileStore(filesystem, f"{parts.netloc}{parts.path}", url)
    path = Path(url).expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return FileStore(pafs.LocalFileSystem(), str(path), str(path))


@cache
def s3_filesystem(endpoint_url: str | None, region: str | None) -> pafs.S3FileSystem:
    """pyarrow's S3 client for the configured endpoint; credentials come from the standard
    AWS variables, profiles or instance roles, as for the lake."""
    options: dict[str, object] = {}
    if region:
        options["region"] = region
    if endpoint_url:
        endpoint = urlsplit(endpoint_url)
        options["endpoint_override"] = endpoint.netloc or endpoint.path
        options["scheme"] = endpoint.scheme or "https"
    return pafs.S3FileSystem(**options)
