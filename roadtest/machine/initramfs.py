"""The x86_64 guest's initramfs: the files its Python reads before its root is mounted.

Under QEMU the guest's root is the host's over 9p, and under TCG reading the interpreter,
its libraries and init's modules over 9p was most of Python's start (0.5 s cold against
0.13 s for a second start in the same guest). The initramfs holds those files
(guest_python.py lists them) at their host paths, with the symbolic links on the way to
them, and /dev/console: the kernel runs init from it (`rdinit=`), init imports from memory,
then mounts the 9p root over it (roadtest/guest/init.py's switch_root) and goes on as on a
9p root. An uncompressed cpio (the kernel's "newc" format,
Documentation/driver-api/early-userspace/buffer-format.rst), kept in the cache by content.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import time
from collections.abc import Iterable
from pathlib import Path

from roadtest.atomic import replacing
from roadtest.kernel import default_cache_dir

_MAGIC = b"070701"
_CONSOLE = (5, 1)  # /dev/console's device number (Documentation/admin-guide/devices.txt)


class _Archive:
    """A newc archive under construction: each path once, parents before children."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.names: set[str] = set()

    def add(
        self,
        name: str,
        mode: int,
        data: bytes = b"",
        rdev: tuple[int, int] = (0, 0),
        mtime: int = 0,
    ) -> None:
        name = name.lstrip("/")
        if not name or name in self.names:
            return
        self.names.add(name)
        fields = (len(self.names), mode, 0, 0, 1, mtime, len(data), 0, 0, *rdev, len(name) + 1, 0)
        header = _MAGIC + b"".join(b"%08X" % v for v in fields) + name.encode() + b"\0"
        self.parts += [header, _pad(len(header)), data, _pad(len(data))]

    def directories(self, path: str) -> None:
        parent = os.path.dirname(path)
        if parent not in ("/", ""):
            self.directories(parent)
            self.add(parent, stat.S_IFDIR | 0o755)

    def host_path(self, path: str) -> None:
        """`path` as the host has it: each symbolic link on the way, then the file."""
        parts = Path(path).parts[1:]
        current = "/"
        for i, part in enumerate(parts):
            current = os.path.join(current, part)
            if os.path.islink(current):
                target = os.readlink(current)
                self.directories(current)
                self.add(current, stat.S_IFLNK | 0o777, target.encode())
                resolved = os.path.normpath(os.path.join(os.path.dirname(current), target))
                self.host_path(os.path.join(resolved, *parts[i + 1 :]))
                return
        info = os.stat(current)
        if stat.S_ISREG(info.st_mode):
            self.directories(current)
            # Its time, as Python's bytecode records its source's: or each is stale.
            data = Path(current).read_bytes()
            self.add(current, stat.S_IFREG | (info.st_mode & 0o777), data, mtime=int(info.st_mtime))

    def bytes(self) -> bytes:
        trailer = _Archive()
        trailer.add("TRAILER!!!", 0)
        return b"".join(self.parts + trailer.parts)


def _pad(length: int) -> bytes:
    return bytes(-length % 4)


def archive(files: Iterable[str]) -> bytes:
    """A newc archive of `files` (absolute host paths; missing ones are left out), the
    links on the way to them, and /dev/console."""
    out = _Archive()
    out.add("dev", stat.S_IFDIR | 0o755)
    out.add("dev/console", stat.S_IFCHR | 0o600, rdev=_CONSOLE)
    for path in files:
        if os.path.isabs(path) and os.path.exists(path):
            out.host_path(path)
    return out.bytes()


# An archive no process has used for this long goes when another is made (each edit of
# roadtest's guest modules makes a new one, about 14 MB).
UNUSED_FOR = 24 * 3600.0


@functools.cache
def initramfs(files: tuple[str, ...]) -> Path:
    """The cached initramfs of `files` (made if absent; keyed by its content)."""
    data = archive(files)
    directory = default_cache_dir() / "guest-initramfs"
    path = directory / f"{hashlib.sha256(data).hexdigest()[:16]}.cpio"
    if path.is_file():
        os.utime(path)  # in use: see UNUSED_FOR
        return path
    directory.mkdir(parents=True, exist_ok=True)
    with replacing(path) as tmp:
        tmp.write_bytes(data)
    now = time.time()
    for old in directory.glob("*.cpio"):
        try:
            if now - old.stat().st_mtime > UNUSED_FOR:
                old.unlink()
        except FileNotFoundError:
            pass  # another process removed it first
    return path
