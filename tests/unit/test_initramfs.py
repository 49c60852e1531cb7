"""The x86_64 guest's initramfs (roadtest.machine.initramfs), read back as the kernel's
buffer format (Documentation/driver-api/early-userspace/buffer-format.rst) defines it:
"newc" headers of 13 eight-digit hex fields after 070701, names and data 4-byte aligned,
ended by TRAILER!!!."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import pytest

from roadtest.machine.initramfs import archive, initramfs


@dataclass
class Member:
    name: str
    mode: int
    data: bytes
    rdev: tuple[int, int]
    mtime: int


def read_newc(blob: bytes) -> list[Member]:
    members: list[Member] = []
    offset = 0
    while True:
        assert offset % 4 == 0
        assert blob[offset : offset + 6] == b"070701"
        fields = [int(blob[offset + 6 + 8 * i : offset + 14 + 8 * i], 16) for i in range(13)]
        _ino, mode, _uid, _gid, _nlink, mtime, size = fields[:7]
        rdev = (fields[9], fields[10])
        namesize = fields[11]
        start = offset + 110
        name = blob[start : start + namesize - 1].decode()
        assert blob[start + namesize - 1] == 0
        data_at = start + namesize + (-(110 + namesize) % 4)
        if name == "TRAILER!!!":
            assert blob[data_at:].strip(b"\0") == b""
            return members
        members.append(Member(name, mode, blob[data_at : data_at + size], rdev, mtime))
        offset = data_at + size + (-size % 4)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A merged-/usr shape: lib -> usr/lib, and a library reached through it."""
    (tmp_path / "usr/lib/arch").mkdir(parents=True)
    (tmp_path / "usr/lib/arch/libc.so.6").write_bytes(b"\x7fELF libc")
    os.chmod(tmp_path / "usr/lib/arch/libc.so.6", 0o755)
    (tmp_path / "lib").symlink_to("usr/lib")
    (tmp_path / "usr/bin").mkdir()
    (tmp_path / "usr/bin/python").write_bytes(b"#!python")
    return tmp_path


def test_files_reached_through_links_keep_the_links_and_their_targets(tree: Path) -> None:
    members = read_newc(archive([f"{tree}/lib/arch/libc.so.6", f"{tree}/usr/bin/python"]))
    by_name = {m.name: m for m in members}
    root = str(tree).lstrip("/")
    link = by_name[f"{root}/lib"]
    assert stat.S_ISLNK(link.mode) and link.data == b"usr/lib"
    libc = by_name[f"{root}/usr/lib/arch/libc.so.6"]
    assert stat.S_ISREG(libc.mode) and libc.data == b"\x7fELF libc"
    assert stat.S_IMODE(libc.mode) == 0o755
    # A file's time is its host file's: Python's bytecode is checked against its source's.
    assert libc.mtime == int((tree / "usr/lib/arch/libc.so.6").stat().st_mtime)
    assert by_name[f"{root}/usr/bin/python"].data == b"#!python"
    # Every member's directory comes before it, once.
    names = [m.name for m in members]
    assert len(names) == len(set(names))
    for i, name in enumerate(names):
        parent = os.path.dirname(name)
        if parent:
            assert parent in names[:i] and stat.S_ISDIR(by_name[parent].mode), name


def test_it_has_the_console_the_kernel_opens_for_init() -> None:
    console = {m.name: m for m in read_newc(archive([]))}["dev/console"]
    assert stat.S_ISCHR(console.mode) and console.rdev == (5, 1)


def test_missing_files_are_left_out(tree: Path) -> None:
    names = {m.name for m in read_newc(archive([f"{tree}/usr/bin/none", "relative"]))}
    assert names == {"dev", "dev/console"}


def test_it_is_cached_by_content(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROADTEST_CACHE", str(tree / "cache"))
    first = initramfs((f"{tree}/usr/bin/python",))
    assert first.read_bytes() == archive([f"{tree}/usr/bin/python"])
    (tree / "usr/bin/python").write_bytes(b"#!python3")
    initramfs.cache_clear()
    second = initramfs((f"{tree}/usr/bin/python",))
    assert second != first and first.is_file()


def test_archives_unused_for_a_day_go_when_another_is_made(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROADTEST_CACHE", str(tree / "cache"))
    first = initramfs((f"{tree}/usr/bin/python",))
    day_old = first.stat().st_mtime - 25 * 3600
    os.utime(first, (day_old, day_old))
    recent = first.with_name("recent.cpio")
    recent.write_bytes(b"")
    (tree / "usr/bin/python").write_bytes(b"#!python3")
    initramfs.cache_clear()
    second = initramfs((f"{tree}/usr/bin/python",))
    assert second.is_file() and recent.is_file()
    assert not first.exists()
