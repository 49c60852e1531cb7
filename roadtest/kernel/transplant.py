"""A kernel build directory carried to another place: a copy of a cache entry's build for
a new entry (the same source, another build path; or the same tarball with another patch
series: `retime_for`), or for a bisection's clone (another copy of the same source).

kbuild decides what to remake from two things, and a copy must keep both true:
- the command lines in each object's .cmd file, which name the source tree (and, for the
  host tools under `tools/`, the build directory) by absolute path: `repoint` rewrites
  them, or every object's command "changed";
- file times: an object is remade when a prerequisite is newer. A clone's checkout gives
  every file the time of the checkout, newer than every object: `align_times` gives each
  file whose content is the seed's source's the time that file has there, so only what
  differs is newer than its objects.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

from roadtest.kernel.runner import Runner

# The text files of a build directory that name paths: kbuild's command and dependency
# records, the host tools' dependency files, and the Makefile `make O=` writes there.
_RECORDS = (".cmd", ".d")


def repoint(build: Path, moves: Mapping[Path, Path]) -> int:
    """Rewrite the absolute paths recorded in `build`'s command and dependency files
    (each key of `moves` to its value), times kept, and re-aim its `source` link.
    Returns how many files changed."""
    pairs = sorted(
        ((str(old).encode(), str(new).encode()) for old, new in moves.items() if old != new),
        key=lambda p: len(p[0]),
        reverse=True,  # a longer path first: one may lie inside another
    )
    if not pairs:
        return 0
    changed = 0
    for dirpath, _, files in os.walk(build):
        for name in files:
            if not (name.endswith(_RECORDS) or (name == "Makefile" and dirpath == str(build))):
                continue
            path = Path(dirpath, name)
            if path.is_symlink():
                continue
            data = path.read_bytes()
            new = data
            for before, after in pairs:
                new = new.replace(before, after)
            if new != data:
                times = path.stat()
                path.write_bytes(new)
                os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))
                changed += 1
    link = build / "source"
    if link.is_symlink():
        target = Path(os.readlink(link))
        if target in moves:
            link.unlink()
            link.symlink_to(moves[target])
    return changed


def same_files(old_src: Path, new_src: Path, names: Iterable[str]) -> list[str]:
    """The files of `names` (relative paths) whose content is the same in both trees."""
    same = []
    for name in names:
        a, b = old_src / name, new_src / name
        try:
            if a.is_symlink() or b.is_symlink():
                continue
            if a.stat().st_size != b.stat().st_size:
                continue
            if a.read_bytes() == b.read_bytes():
                same.append(name)
        except OSError:
            continue  # absent from one tree, or unreadable: not the same
    return same


def align_times(old_src: Path, new_src: Path, names: Iterable[str]) -> None:
    """Give each of `names` in `new_src` the modification time it has in `old_src`."""
    for name in names:
        times = (old_src / name).stat()
        os.utime(new_src / name, ns=(times.st_atime_ns, times.st_mtime_ns))


def retime_for(old_src: Path, new_src: Path) -> tuple[int, int]:
    """Make the file times of `new_src`, the same tarball as `old_src` with another patch
    series, tell kbuild what differs, so that `old_src`'s build carried over recompiles
    only that: a file whose content is the old one's gets the old one's time (patched
    alike by both series, it is not newer than its objects), and one whose content
    differs, or that the old tree lacks, the time now (one only the old series patched
    keeps the tarball's time otherwise: older than the objects of the old content). A
    file of the same size and time in both is the tarball's, and is not read. Returns
    (files given the old time, files given the time now)."""
    aligned = touched = 0
    for directory, _, files in os.walk(new_src):
        for name in files:
            new = Path(directory, name)
            old = old_src / new.relative_to(new_src)
            try:
                if new.is_symlink():
                    continue
                here = new.stat()
                try:
                    there = old.stat()
                except FileNotFoundError:
                    there = None
                if there is not None and (here.st_size, here.st_mtime_ns) == (
                    there.st_size,
                    there.st_mtime_ns,
                ):
                    continue
                if there is not None and here.st_size == there.st_size:
                    if new.read_bytes() == old.read_bytes():
                        os.utime(new, ns=(there.st_atime_ns, there.st_mtime_ns))
                        aligned += 1
                        continue
                os.utime(new)
                touched += 1
            except OSError:
                os.utime(new)  # unreadable on one side: rebuilt, not trusted
                touched += 1
    return aligned, touched


def copy_build(
    seed_build: Path,
    build: Path,
    moves: Mapping[Path, Path],
    runner: Runner,
) -> bool:
    """Copy `seed_build` to `build` (which must not exist), repointed by `moves` (the
    seed's build directory to `build` is added). All or nothing: False if the copy
    failed, and then `build` is absent."""
    tmp = build.with_name(build.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    result = runner.run(["cp", "-a", "--reflink=auto", str(seed_build), str(tmp)], cwd=build.parent)
    if result.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        return False
    repoint(tmp, {**moves, seed_build: build})
    tmp.rename(build)  # the copy is complete or absent, never partial
    return True
