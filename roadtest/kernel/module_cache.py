"""Out-of-tree modules already built, kept beside the kernel build they were built against.

A module build (external.py) takes about a second, most of it kbuild's own start, and
patches-check builds some seventy of them each make test, the same ones each time: the
module with one patch taken back out, against the same cached kernel. So a module is
kept under its kernel's cache entry, in `external/<key>/<name>.ko`, where the key is a
digest of everything the build reads that can differ between two builds against that
entry:

- the entry (its directory: the kernel's source, series and configuration) and the build
  in it: its stamp (written by each build, with its image's checksum: a --tree entry,
  whose source can change, is built again in place) and what the build made that a module
  compiles against (include/generated/autoconf.h, with the compiler's version in it;
  include/config/kernel.release; Module.symvers, the CRCs a module's imports are checked
  with);
- kbuild's arguments;
- every file of the module's tree (the sources as patched, local headers, the Kbuild
  file), by path and content.

A module kept is copied to where its build would have put it. What it does not cover:
the compiler's absolute path of a source is compiled into the module (WARN()'s file
name): a module taken from here names the directory of the build that made it.

A kept module is written whole or not at all (a temporary directory renamed into place);
two builds of the same key at once both build, and the second keeps the first's. The
newest KEEP of an entry are kept: each store drops the oldest beyond that.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from roadtest.kernel.build import Kernel

KEEP = 400  # modules an entry keeps (a few hundred KiB to a few MiB each)
# What a module is compiled and checked against in the kernel's build directory.
_BUILD_INPUTS = (
    "include/generated/autoconf.h",
    "include/config/kernel.release",
    "Module.symvers",
)
_ENTRY_MARK = "entry.json"  # a kernel cache entry's (cache.Entry.info)
_STAMP = "stamp.json"  # written by each build of the entry (cache.Entry.stamp)


def cache_dir(kernel: Kernel) -> Path | None:
    """Where modules built against `kernel` are kept: its cache entry's `external/`; None
    for a build outside the kernel cache."""
    entry = kernel.build_dir.parent
    return entry / "external" if (entry / _ENTRY_MARK).is_file() else None


def key(kernel: Kernel, make_args: Sequence[str], tree: Path) -> str:
    """The digest of a module build against `kernel` of the files under `tree`."""
    digest = hashlib.sha256()

    def part(data: bytes) -> None:
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)

    entry = kernel.build_dir.parent
    part(str(entry.resolve()).encode())
    part((entry / _STAMP).read_bytes() if (entry / _STAMP).is_file() else b"(none)")
    for name in _BUILD_INPUTS:
        path = kernel.build_dir / name
        part(name.encode())
        part(path.read_bytes() if path.is_file() else b"(none)")
    for arg in make_args:
        part(arg.encode())
    for path in sorted(p for p in tree.rglob("*") if p.is_file()):
        part(path.relative_to(tree).as_posix().encode())
        part(path.read_bytes())
    return digest.hexdigest()[:32]


def fetch(store: Path, digest: str, ko: Path) -> bool:
    """Copy the module kept under `digest` to `ko`; False if none is kept."""
    kept = store / digest / ko.name
    if not kept.is_file():
        return False
    shutil.copyfile(kept, ko)
    os.utime(kept.parent)  # recently used: pruned last
    return True


def keep(store: Path, digest: str, ko: Path) -> None:
    """Keep the module `ko` under `digest`, whole or not at all; then prune the store."""
    store.mkdir(parents=True, exist_ok=True)
    final = store / digest
    if final.is_dir():
        return
    staging = Path(tempfile.mkdtemp(prefix=f".{digest}-", dir=store))
    try:
        shutil.copyfile(ko, staging / ko.name)
        try:
            staging.rename(final)
        except OSError:
            return  # another build kept the same key meanwhile
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _prune(store)


def _prune(store: Path) -> None:
    """The oldest beyond KEEP, and staging left by a store that was killed (an hour old)."""
    now = time.time()
    for staging in store.glob(".*"):
        try:
            if now - staging.stat().st_mtime > 3600:
                shutil.rmtree(staging, ignore_errors=True)
        except FileNotFoundError:
            pass
    kept = [p for p in store.iterdir() if p.is_dir() and not p.name.startswith(".")]
    if len(kept) <= KEEP:
        return
    kept.sort(key=lambda p: p.stat().st_mtime)
    for old in kept[: len(kept) - KEEP]:
        shutil.rmtree(old, ignore_errors=True)
