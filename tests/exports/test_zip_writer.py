"""The zip writer: several members, names sanitised and unique, zip64 for streamed ones."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

from exports.files.zip_writer import MAX_MEMBER_NAME, ZipWriter, member_name


def test_member_names_are_flat_and_safe() -> None:
    assert member_name("../../etc/passwd") == "_.._etc_passwd"
    assert member_name("a\\b/c.csv") == "a_b_c.csv"
    assert member_name("ctrl\x00\x1f.csv") == "ctrl__.csv"
    assert member_name("  ...  ") == "file"
    assert member_name('what?<>|*:".csv') == "what_______.csv"
    long_name = member_name("y" * 300 + ".csv")
    assert len(long_name) == MAX_MEMBER_NAME and long_name.endswith(".csv")
    assert member_name("東京.csv") == "東京.csv"


def test_members_stream_with_zip64_and_names_are_unique(tmp_path: Path) -> None:
    path = tmp_path / "b.zip"
    archive = ZipWriter(path)
    for name in ("orders.csv", "ORDERS.csv", "orders.csv"):
        with archive.text_member(name) as stream:
            stream.write("a,b\r\n1,2\r\n")
    extra = tmp_path / "x.bin"
    extra.write_bytes(b"\x00" * 10)
    archive.add_file(extra, "../x.bin")
    archive.close()
    with zipfile.ZipFile(path) as read:
        assert read.testzip() is None
        names = read.namelist()
        assert names == ["orders.csv", "ORDERS (2).csv", "orders (3).csv", "_x.bin"]
        assert read.read("orders.csv") == b"a,b\r\n1,2\r\n"
        offset = read.getinfo("orders.csv").header_offset
    # Streamed members carry a zip64 extra field in their local header (their size was
    # unknown when it was written).
    header = path.read_bytes()[offset : offset + 100]
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    assert header[30 + name_length : 30 + name_length + 2] == b"\x01\x00"
    assert extra_length >= 20
