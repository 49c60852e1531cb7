"""Files a user owns (a golden trace, a results database, a report, a cache file) are
replaced whole or not at all, even on SIGKILL: written under a temporary name beside
them, fsynced, renamed over them, and the rename fsynced too. One piece for every writer.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def replacing(path: Path, *, companions: tuple[str, ...] = ()) -> Iterator[Path]:
    """A temporary path beside `path`, created empty with the mode a plain open() would
    give (umask applied). When the block ends normally it is fsynced and renamed over
    `path`, and the directory fsynced; when it raises (KeyboardInterrupt too) it is
    removed, with the files named like it plus each of `companions` (SQLite's "-wal"
    and "-shm"), and `path` is untouched."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        for suffix in companions:
            Path(f"{tmp}{suffix}").unlink(missing_ok=True)
    fsync_directory(path.parent)


def write_atomically(path: Path, text: str) -> None:
    """`path` holds the old text or the whole new one, even after SIGKILL."""
    with replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def fsync_directory(directory: Path) -> None:
    """A rename in `directory` on disk, not only the renamed file's data."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
