"""Checking a cached kernel build before trusting it: what the build wrote must still be there,
whole.

At build time the stamp records (under "verify") the boot image's size, modification time and
SHA-256, and the size of every installed module file and of the .config. Every use checks the
sizes and the image's time: stat() calls, 0.2 ms for the main UML build's 29 files (measured
on a 2-core Xeon). A changed time with the same size (a copied cache) costs one checksum,
0.05 s for UML's 68 MB vmlinux, and is then written down. `roadtest build` also checks the
checksum. A truncated image or module, the way a full disk or an interrupted copy leaves one,
is caught by its size.

Stamps from before these records: the image's own structure is checked (an ELF file's
headers and segments lie within it, a bzImage is as long as its setup header says), and the
records are written then, from what is there.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

# The stamp's key for these records.
STAMP_KEY = "verify"


@dataclass(frozen=True)
class Found:
    """What checking an entry found: `damage` (None: whole) and the damaged file, relative to
    the entry (`where`), or the records to write back to its stamp (`update`: the stamp had
    none, or the image's time changed, its content not)."""

    damage: str | None
    where: str | None = None
    update: dict[str, object] | None = None


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _files(entry_path: Path, install_dir: Path, config: Path) -> dict[str, int]:
    """The installed modules' files and the .config, by path relative to the entry: sizes."""
    sizes: dict[str, int] = {}
    for top, _dirs, names in os.walk(install_dir):
        for name in names:
            path = Path(top) / name
            st = path.lstat()
            if not path.is_symlink():
                sizes[path.relative_to(entry_path).as_posix()] = st.st_size
    sizes[config.relative_to(entry_path).as_posix()] = config.stat().st_size
    return sizes


def record(entry_path: Path, image: Path, install_dir: Path, config: Path) -> dict[str, object]:
    """The records of a build just made (for its stamp)."""
    st = image.stat()
    return {
        "image": image.relative_to(entry_path).as_posix(),
        "image_size": st.st_size,
        "image_mtime_ns": st.st_mtime_ns,
        "image_sha256": _sha256(image),
        "files": _files(entry_path, install_dir, config),
    }


def check(
    entry_path: Path,
    image: Path,
    install_dir: Path,
    config: Path,
    recorded: object,
    *,
    thorough: bool,
) -> Found:
    """Whether the build in `entry_path` is still what its stamp's records say it was;
    `thorough`: checksum the image too."""
    if not isinstance(recorded, Mapping):
        return _adopt(entry_path, image, install_dir, config)
    name = image.relative_to(entry_path).as_posix()
    try:
        st = image.stat()
    except OSError as err:
        return Found(f"{image.name}: {err.strerror}", name)
    size, mtime, digest = (
        recorded.get("image_size"),
        recorded.get("image_mtime_ns"),
        recorded.get("image_sha256"),
    )
    if recorded.get("image") != name or not isinstance(digest, str):
        return _adopt(entry_path, image, install_dir, config)
    if st.st_size != size:
        return Found(f"{name} is {_bytes(st.st_size)}, it was built {_bytes(size)}", name)
    files = _check_files(entry_path, recorded.get("files"))
    if files.damage is not None:
        return files
    if st.st_mtime_ns == mtime and not thorough:
        return Found(None)
    if _sha256(image) != digest:
        return Found(f"{name} is not what was built: its SHA-256 differs", name)
    if st.st_mtime_ns != mtime:
        return Found(None, update={**recorded, "image_mtime_ns": st.st_mtime_ns})
    return Found(None)


def _check_files(entry_path: Path, recorded: object) -> Found:
    if not isinstance(recorded, Mapping):
        return Found("no record of its modules' sizes")
    for rel, size in recorded.items():
        try:
            now = (entry_path / rel).stat().st_size
        except OSError:
            return Found(f"{rel} is missing", rel)
        if now != size:
            return Found(f"{rel} is {_bytes(now)}, it was built {_bytes(size)}", rel)
    return Found(None)


def _adopt(entry_path: Path, image: Path, install_dir: Path, config: Path) -> Found:
    """A stamp without records (older roadtest): check the image's structure, then record."""
    damage = image_structure(image)
    if damage is not None:
        return Found(damage, image.relative_to(entry_path).as_posix())
    try:
        return Found(None, update=record(entry_path, image, install_dir, config))
    except OSError as err:
        return Found(f"{err.filename}: {err.strerror}")


def _bytes(n: object) -> str:
    return f"{n} bytes" if isinstance(n, int) else "of unrecorded size"


def image_structure(image: Path) -> str | None:
    """Why `image` is not a whole ELF file or bzImage (None: it is one): what a truncation
    leaves is caught here, as an ELF file's section headers come last."""
    try:
        size = image.stat().st_size
        with open(image, "rb") as f:
            head = f.read(0x300)
            if head[:4] == b"\x7fELF":
                return _elf(f, head, size, image.name)
    except OSError as err:
        return f"{image.name}: {err.strerror}"
    if len(head) >= 0x206 and head[0x202:0x206] == b"HdrS":
        setup_sects = head[0x1F1] or 4
        (syssize,) = struct.unpack_from("<I", head, 0x1F4)
        wanted = (setup_sects + 1) * 512 + syssize * 16
        if size < wanted:
            return f"{image.name} is {size} bytes, its header says at least {wanted}"
        return None
    if size == 0:
        return f"{image.name} is empty"
    return f"{image.name} is neither an ELF file nor a bzImage"


def _elf(f: BinaryIO, head: bytes, size: int, name: str) -> str | None:
    if len(head) < 64 or head[4] != 2:  # ELFCLASS64: both targets are 64-bit
        return f"{name}: a truncated ELF header"
    order = "<" if head[5] == 1 else ">"
    phoff, shoff = struct.unpack_from(order + "QQ", head, 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from(order + "HHHH", head, 0x36)
    if shoff + shnum * shentsize > size:
        return f"{name} is {size} bytes, its section headers end at {shoff + shnum * shentsize}"
    if phoff + phnum * phentsize > size:
        return f"{name} is {size} bytes, its program headers end at {phoff + phnum * phentsize}"
    f.seek(phoff)
    table = f.read(phnum * phentsize)
    for i in range(phnum):
        p_offset, _vaddr, _paddr, p_filesz = struct.unpack_from(
            order + "QQQQ", table, i * phentsize + 8
        )
        if p_offset + p_filesz > size:
            return f"{name} is {size} bytes, its segment {i} ends at {p_offset + p_filesz}"
    return None
