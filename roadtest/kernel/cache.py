"""The kernel cache: keys, layout, stamps and locks (prune.py keeps its size bounded).

Layout under the cache directory:

    kernel.lock                 held shared by every process that builds, exclusively by
                                one that prunes or clears leftovers (only when no build runs)
    locks/kernel-<build key>.lock
                                held exclusively by the process building that entry: two
                                processes build two kernels side by side, one kernel once
    locks/src-<source key>.lock held exclusively while that tree is unpacked (or, for a
                                --tree mirror, synced and built from)
    src/<source key>/           an unpacked, patched tree; appears by rename once complete
    kernels/<build key>/        one configured build:
        entry.json              its source key, written when the entry is made
        build/                  the O= directory (vmlinux, .config)
        modules/lib/modules/<release>/
        build.log               everything the build printed
        use.lock                held shared by every process using this kernel
        stamp.json              written atomically after everything else succeeded
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from roadtest.atomic import write_atomically
from roadtest.kernel.source import SourceIdentity

# Bump when the build procedure changes in a way that makes old cache entries wrong.
KEY_VERSION = "1"

CACHE_ENV = "ROADTEST_CACHE"


def default_cache_dir() -> Path:
    override = os.environ.get(CACHE_ENV)
    return Path(override).expanduser() if override else Path.home() / ".cache" / "roadtest"


def _digest(parts: list[bytes]) -> str:
    h = hashlib.sha256()
    for part in parts:
        # Length-prefixed, so that no two different lists of parts hash alike.
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


def source_key(identity: SourceIdentity, patches: list[Path]) -> str:
    """Names the unpacked+patched tree: the tarball and the patches' contents, in order."""
    meta = json.dumps({"version": KEY_VERSION, "source": identity.key_data()}, sort_keys=True)
    return _digest([b"roadtest-kernel-source", meta.encode(), *(p.read_bytes() for p in patches)])


def series_key(src_key: str, patches: list[Path]) -> str:
    """Names a tree's source with a series of patches applied in its mirror (a --tree
    build): two checkouts of roadtest with different kernel-patches/ build the same tree
    into two entries, not one that each rebuilds under the other's running guests."""
    return _digest([b"roadtest-tree-series", src_key.encode(), *(p.read_bytes() for p in patches)])


def build_key(
    src_key: str, fragments: list[Path], target: bytes, make_vars: Sequence[str] = ()
) -> str:
    """Names one build: its source tree, its target (Target.key_data()), the fragments'
    contents, in order, and kbuild variables a variant sets (none: the main kernel)."""
    parts = [b"roadtest-kernel-build", KEY_VERSION.encode(), src_key.encode(), target]
    if make_vars:
        parts.append(b"make:" + "\0".join(make_vars).encode())
    return _digest([*parts, *(f.read_bytes() for f in fragments)])


def short(key: str) -> str:
    return key[:16]


@dataclass(frozen=True)
class Entry:
    path: Path

    @property
    def key(self) -> str:
        return self.path.name

    @property
    def build_dir(self) -> Path:
        return self.path / "build"

    @property
    def install_dir(self) -> Path:
        return self.path / "modules"

    @property
    def log(self) -> Path:
        return self.path / "build.log"

    @property
    def stamp(self) -> Path:
        return self.path / "stamp.json"

    @property
    def info(self) -> Path:
        return self.path / "entry.json"

    @property
    def use_lock(self) -> Path:
        return self.path / "use.lock"

    def source_key(self) -> str | None:
        value = self._info("source_key")
        return value if isinstance(value, str) else None

    def make_vars(self) -> list[str]:
        """The kbuild variables the build set (a variant's), [] for a main kernel."""
        value = self._info("make_vars")
        return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else []

    def fragments(self) -> list[str]:
        """The file names of the config fragments it was built from ([] if not recorded)."""
        value = self._info("fragments")
        return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else []

    def own_fragments(self, main: Sequence[str] = ()) -> list[str]:
        """The names of the fragments that made it a variant, sorted (entry.json's
        own_fragments). For an entry from before they were recorded: its fragments that
        `main` (the names of today's main kernel's fragments) lacks, which is right unless
        a fragment has been removed since."""
        value = self._info("own_fragments")
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return sorted(value)
        return sorted(set(self.fragments()) - set(main))

    def target(self) -> str:
        """The target it was built for (roadtest.arch; entries from before targets: um)."""
        value = self._info("target")
        return value if isinstance(value, str) else "um"

    def _info(self, name: str) -> object:
        try:
            return json.loads(self.info.read_text()).get(name)
        except (OSError, ValueError, AttributeError):
            return None


@dataclass(frozen=True)
class Layout:
    root: Path

    @property
    def lock(self) -> Path:
        return self.root / "kernel.lock"

    @property
    def src_root(self) -> Path:
        return self.root / "src"

    @property
    def builds_root(self) -> Path:
        return self.root / "kernels"

    def src_dir(self, src_key: str) -> Path:
        return self.src_root / short(src_key)

    @property
    def locks_root(self) -> Path:
        return self.root / "locks"

    def src_lock(self, src_key: str) -> Path:
        return self.locks_root / f"src-{short(src_key)}.lock"

    def entry_lock(self, entry: Entry) -> Path:
        return self.locks_root / f"kernel-{entry.path.name}.lock"

    def entry(self, key: str) -> Entry:
        return Entry(self.builds_root / short(key))

    def entries(self) -> list[Entry]:
        try:
            return [
                Entry(p)
                for p in self.builds_root.iterdir()
                if p.is_dir() and not p.name.startswith(".")
            ]
        except FileNotFoundError:
            return []


def main_builds(layout: Layout, target: str, fragment_names: Sequence[str]) -> list[Entry]:
    """The complete builds of a main kernel (no variant) for `target` from config fragments
    of these names, the most recently used first: the seeds of a build elsewhere."""
    found = []
    for e in layout.entries():
        if not e.stamp.is_file() or e.target() != target or e.make_vars():
            continue
        if e.fragments() != list(fragment_names) or e.own_fragments(fragment_names):
            continue
        try:
            found.append((e.stamp.stat().st_mtime, e))
        except OSError:
            continue  # removed meanwhile
    return [e for _, e in sorted(found, key=lambda p: p[0], reverse=True)]


def read_stamp(entry: Entry, key: str | None) -> dict[str, str] | None:
    """The entry's stamp, if it is one for `key` (None: any key)."""
    try:
        data = json.loads(entry.stamp.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or (key is not None and data.get("key") != key):
        return None
    return {k: v for k, v in data.items() if isinstance(v, str)}


def read_stamp_field(entry: Entry, name: str) -> object:
    """One field of the entry's stamp, of any JSON type (None if absent or unreadable)."""
    try:
        data = json.loads(entry.stamp.read_text())
    except (OSError, ValueError):
        return None
    return data.get(name) if isinstance(data, dict) else None


def write_stamp(entry: Entry, data: Mapping[str, object]) -> None:
    write_atomically(entry.stamp, json.dumps(data, indent=1, sort_keys=True) + "\n")


def update_stamp(entry: Entry, name: str, value: object) -> None:
    """Set one field of an existing stamp (a read-only cache keeps it as it was)."""
    try:
        data = json.loads(entry.stamp.read_text())
        if isinstance(data, dict):
            write_stamp(entry, {**data, name: value})
    except (OSError, ValueError):
        pass


def touch(path: Path) -> None:
    """Record a use (the stamp's mtime orders entries for pruning); a read-only cache is fine."""
    try:
        os.utime(path)
    except OSError:
        pass


@contextmanager
def locked(
    path: Path,
    kind: int = fcntl.LOCK_EX,
    waiting: str = "",
    progress: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Hold `path` locked (fcntl.LOCK_SH or LOCK_EX), waiting for whoever holds it first;
    `waiting` is said once, to `progress`, if the lock is not free at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        try:
            fcntl.flock(f, kind | fcntl.LOCK_NB)
        except BlockingIOError:
            if progress is not None and waiting:
                progress(waiting)
            fcntl.flock(f, kind)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _flock(
    path: Path, kind: int, waiting: str, progress: Callable[[str], None]
) -> AbstractContextManager[None]:
    return locked(
        path, kind, f"kernel: waiting for another roadtest process {waiting} ({path})", progress
    )


@contextmanager
def build_lock(layout: Layout, entry: Entry, progress: Callable[[str], None]) -> Iterator[None]:
    """Build `entry`: processes building other kernels go on beside this one; one building
    this one is waited for (its work is then reused), as is one pruning the cache."""
    with _flock(layout.lock, fcntl.LOCK_SH, "to finish pruning the cache", progress):
        with _flock(layout.entry_lock(entry), fcntl.LOCK_EX, "to finish this build", progress):
            # Whatever the entry holds beside a stamp was left by a build interrupted here.
            shutil.rmtree(entry.path / "build.tmp", ignore_errors=True)
            yield


def source_lock(
    layout: Layout, src_key: str, progress: Callable[[str], None]
) -> AbstractContextManager[None]:
    """Unpack (or sync) the source `src_key` alone: two builds of it unpack it once."""
    return _flock(layout.src_lock(src_key), fcntl.LOCK_EX, "to prepare this source", progress)


def when_alone(layout: Layout, work: Callable[[], None]) -> bool:
    """Run `work` (pruning, clearing leftovers) if no process builds or prunes now; whether
    it ran. Never waits: the last build to end does it."""
    try:
        layout.root.mkdir(parents=True, exist_ok=True)
        with open(layout.lock, "a") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            try:
                work()
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)
    except OSError:
        return False  # a read-only cache: nothing to tidy
    return True


# Shared locks on the entries this process uses, held until it exits: pruning skips them.
_in_use: dict[Path, int] = {}


def hold_in_use(entry: Entry) -> None:
    if entry.path in _in_use:
        return
    fd = os.open(entry.use_lock, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    # Blocks only while a pruner holds it exclusively; the caller re-checks the stamp afterwards.
    fcntl.flock(fd, fcntl.LOCK_SH)
    _in_use[entry.path] = fd


def release_in_use(entry: Entry) -> None:
    fd = _in_use.pop(entry.path, None)
    if fd is not None:
        os.close(fd)


def remove_tree(path: Path) -> None:
    """Rename first: a tree half-deleted by an interruption must never look usable."""
    trash = path.parent / f".trash-{path.name}-{os.getpid()}"
    try:
        path.rename(trash)
    except FileNotFoundError:
        return
    shutil.rmtree(trash, ignore_errors=True)


def clean_leftovers(layout: Layout) -> None:
    """Temp and trash dirs left by interrupted runs. Only when alone (`when_alone`)."""
    for parent in (layout.src_root, layout.builds_root):
        if parent.is_dir():
            for p in parent.iterdir():
                if p.name.startswith((".tmp-", ".trash-")):
                    shutil.rmtree(p, ignore_errors=True)
    # Nobody holds or waits for an entry's or a source's lock without the cache's.
    if layout.locks_root.is_dir():
        for lock in layout.locks_root.glob("*.lock"):
            lock.unlink(missing_ok=True)
    for entry in layout.entries():
        tmp = entry.path / "build.tmp"
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def try_lock(lock: Path, shared: bool = False) -> int | None:
    """An fd holding `lock` exclusively (an entry's use lock, a bisection's lock: nobody uses
    what it guards) or `shared` (an entry's build lock: nobody is building it), or None if
    another process holds it so that we cannot."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError:
        return None
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd
