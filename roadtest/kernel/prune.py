"""Keeping the cache's size bounded: what goes, and when.

The policy, for the cache's kernel builds (kernels/<key>/), `roadtest bisect`'s per-tree
directories (bisect/<tree>/: a clone, its build, its logs) and its histories
(history/<source>.git):

- While they take more than the limit (ROADTEST_CACHE_LIMIT, default 10G), the least
  recently used goes first.
- Never removed, whatever the limit: what a process uses now (a build a run boots, a
  bisection's directory: their locks say so), what was used in the last RECENT_HOURS (so
  the main, coverage, sanitizer and x86_64 kernels that `make test` builds one after the
  other, and uses in lanes that run for up to an hour, never evict each other), the build
  just made, and a history that a kept bisection's clone borrows objects from.
- Always removed: a kernel build that never completed (interrupted or failed), and an
  unpacked source tree no kept build refers to (1.7 GB each; they are not counted).

It runs after each kernel build and when a bisection starts, in both cases only when no
build runs (then the last build to end prunes). What it removed is one line.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from roadtest.errors import RoadtestError
from roadtest.kernel import cache
from roadtest.kernel.cache import Entry, Layout

LIMIT_ENV = "ROADTEST_CACHE_LIMIT"
DEFAULT_LIMIT = 10 * 1024**3
RECENT_HOURS = 3

_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def limit_from_env() -> int:
    """ROADTEST_CACHE_LIMIT: bytes, or a number with K, M, G or T (binary units)."""
    value = os.environ.get(LIMIT_ENV, "").strip().upper().removesuffix("B").removesuffix("I")
    if not value:
        return DEFAULT_LIMIT
    unit = value[-1] if value[-1] in _UNITS else ""
    try:
        number = float(value[: len(value) - len(unit)])
    except ValueError:
        number = -1.0
    if number < 0:
        raise RoadtestError(
            f"{LIMIT_ENV}={os.environ[LIMIT_ENV]}: give a size, like 20G or 500M (binary units)"
        )
    return int(number * _UNITS[unit])


def size_text(n: int) -> str:
    for unit, div in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} bytes"


def disk_usage(path: Path) -> int:
    """What `du` counts: allocated blocks, each file once, links not followed."""
    total, seen = 0, set()
    for top, dirs, names in os.walk(path):
        for name in [*dirs, *names]:
            try:
                st = os.lstat(os.path.join(top, name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total


def _mtime(*paths: Path) -> float:
    times = []
    for p in paths:
        try:
            times.append(p.stat().st_mtime)
        except OSError:
            pass
    return max(times, default=0.0)


@dataclass
class _Item:
    path: Path
    kind: str  # "build", "bisect" or "history": for the line
    last_used: float
    lock: Path | None  # held by its users (shared or exclusive): never removed while held
    size: int = 0


@dataclass
class Pruned:
    removed: list[Path] = field(default_factory=list)
    freed: int = 0
    kept: int = 0  # what the counted items take afterwards
    limit: int = 0

    def line(self, root: Path) -> str | None:
        if not self.removed:
            return None
        names = ", ".join(_relative(p, root) for p in self.removed)
        return (
            f"cache: removed {names} ({size_text(self.freed)} freed); builds and bisections "
            f"keep {size_text(self.kept)} (limit {size_text(self.limit)}, {LIMIT_ENV})"
        )


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _bisect_dirs(root: Path) -> list[Path]:
    try:
        return [p for p in (root / "bisect").iterdir() if p.is_dir() and p.name[0] != "."]
    except FileNotFoundError:
        return []


def _histories(root: Path) -> list[Path]:
    try:
        return [p for p in (root / "history").iterdir() if p.is_dir() and p.name[0] != "."]
    except FileNotFoundError:
        return []


def _borrowed(bisect_dirs: Iterable[Path]) -> set[Path]:
    """The repositories whose objects the bisection clones borrow (`git clone --shared`)."""
    found = set()
    for d in bisect_dirs:
        try:
            lines = (d / "src" / ".git" / "objects" / "info" / "alternates").read_text()
        except OSError:
            continue
        for line in lines.splitlines():
            objects = Path(line.strip())
            if objects.name == "objects":
                found.add(objects.parent.resolve())
    return found


def prune(
    layout: Layout,
    current: Entry | None = None,
    *,
    limit: int | None = None,
    now: float | None = None,
) -> Pruned:
    """Apply the policy above. Call alone (`cache.when_alone`); `current`: the build just
    made or used (never removed)."""
    limit = limit_from_env() if limit is None else limit
    now = time.time() if now is None else now
    recent = now - RECENT_HOURS * 3600
    root = layout.root
    pruned = Pruned(limit=limit)

    for entry in layout.entries():
        if entry != current and not entry.stamp.is_file():
            # An interrupted or failed build of some config.
            _remove(entry.path, entry.use_lock, disk_usage(entry.path), pruned)

    items = [
        _Item(e.path, "build", _mtime(e.stamp), e.use_lock)
        for e in layout.entries()
        if e.stamp.is_file()
    ]
    # A bisection touches its lock when it starts; bisect.json is written when it ends.
    bisects = _bisect_dirs(root)
    items += [
        _Item(d, "bisect", _mtime(d / "lock", d / "bisect.json", d), d / "lock") for d in bisects
    ]
    items += [_Item(h, "history", _mtime(h), None) for h in _histories(root)]
    candidates = [
        i for i in items if i.last_used < recent and (current is None or i.path != current.path)
    ]
    if not candidates:
        return _sources(layout, pruned)  # nothing else could go: no need to measure sizes
    for item in items:
        item.size = disk_usage(item.path)
    total = sum(item.size for item in items)

    for item in sorted(candidates, key=lambda i: i.last_used):
        if total <= limit:
            break
        if item.kind == "history":
            kept = [d for d in bisects if d.exists()]
            if item.path.resolve() in _borrowed(kept):
                continue
        if _remove(item.path, item.lock, item.size, pruned):
            total -= item.size
    pruned.kept = total
    return _sources(layout, pruned)


def _sources(layout: Layout, pruned: Pruned) -> Pruned:
    # The unpacked sources no kept build was made from; all are kept if a build's source is
    # unknown (an entry from before entry.json).
    keys = [e.source_key() for e in layout.entries()]
    wanted = {layout.src_dir(k).name for k in keys if k is not None}
    if None not in keys and layout.src_root.is_dir():
        for src in layout.src_root.iterdir():
            if not src.name.startswith(".") and src.name not in wanted:
                _remove(src, None, disk_usage(src), pruned)
    return pruned


def _remove(path: Path, lock: Path | None, size: int, pruned: Pruned) -> bool:
    """Remove `path` unless a process holds `lock` (its users do while they use it)."""
    fd = None
    if lock is not None:
        fd = cache.try_lock(lock)
        if fd is None:
            return False
    try:
        cache.remove_tree(path)
    finally:
        if fd is not None:
            os.close(fd)
    pruned.removed.append(path)
    pruned.freed += size
    return True


def prune_if_idle(root: Path, progress: Callable[[str], None]) -> None:
    """Prune now unless a build runs (that build prunes when it ends): for `roadtest
    bisect`, which must not wait minutes for a build to end."""
    layout = Layout(root)
    lines: list[str | None] = []
    cache.when_alone(layout, lambda: lines.append(prune(layout).line(root)))
    if lines and lines[0]:
        progress(lines[0])
