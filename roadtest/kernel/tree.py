"""A developer's own kernel tree (`--tree DIR`): checked, mirrored into the cache with those
of our patches that apply to it, and built there out of tree, incrementally.

The user's tree is only ever read: a dirty working tree is used as it is, uncommitted
changes included, since that is what the developer is testing. The cache holds

    src/<tree key>/linux/   the mirror: the tree's files (not .git), each copied when its
                            size or time differ, and our patches where they apply
    kernels/<build key>/    its build, a cache entry like any other (build.py)

Files a patch changes are written into the mirror only when their patched text differs
from the mirror's, so a run that changes nothing leaves every time as it was and kbuild
compiles nothing. Why a mirror and not `make -C tree O=...`: our patches must never be
applied to the user's files.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from roadtest.arch import Target
from roadtest.errors import RoadtestError, UsageError
from roadtest.gitcmd import git, is_repository
from roadtest.kernel import cache
from roadtest.kernel.runner import Runner
from roadtest.kernel.source import (
    PACKAGE_NAME,
    apply_patch,
    packaged_tarball,
    prepare_source,
    tarball_identity,
)

MIRROR_NAME = "linux"


@dataclass(frozen=True)
class Needed:
    """A file roadtest's guests need from a kernel tree, and the release it came in."""

    path: str
    what: str
    since: str


# Checked before anything is built: without these the guest cannot reach the models.
NEEDED = (
    Needed("drivers/i2c/busses/i2c-virtio.c", "the virtio I2C driver", "5.14"),
    Needed("drivers/gpio/gpio-virtio.c", "the virtio GPIO driver", "5.15"),
)
NEEDED_BY_ARCH = {
    "um": (
        Needed("arch/um/drivers/virt-pci.c", "UML's PCI over virtio", "5.14"),
        Needed("arch/um/drivers/virtio_uml.c", "UML's vhost-user devices", "5.2"),
    ),
}

_VERSION_LINE = re.compile(r"^(VERSION|PATCHLEVEL|SUBLEVEL)\s*=\s*(\d*)\s*$", re.M)


@dataclass(frozen=True)
class KernelTree:
    """A kernel source tree of the user's, as checked by open_tree()."""

    path: Path  # resolved
    version: str  # from its Makefile, e.g. "6.1.0"
    describe: str  # `git describe --always --dirty`, or "" for a tree without git
    dirty: bool | None  # uncommitted changes (None: not a git tree)
    tarball: str = ""  # what the tree was unpacked from ("linux-source-6.1 6.1.192-1"), if so

    @property
    def key(self) -> str:
        """Names its mirror in the cache: the tree's path (its contents change; the mirror
        follows them)."""
        return hashlib.sha256(b"roadtest-tree\0" + str(self.path).encode()).hexdigest()

    def describe_line(self) -> str:
        """What a run's header and `build` say about it."""
        if self.tarball:
            return f"{self.tarball} (Linux {self.version}, unpacked in the cache: {self.path})"
        if self.dirty is None:
            return f"{self.path} (Linux {self.version}, not a git tree)"
        state = ", with uncommitted changes" if self.dirty else ""
        return f"{self.path} ({self.describe}{state}; Linux {self.version})"


def _version(makefile: Path) -> str | None:
    try:
        text = makefile.read_text(errors="replace")[:4096]
    except OSError:
        return None
    fields = dict(_VERSION_LINE.findall(text))
    if not fields.get("VERSION") or "PATCHLEVEL" not in fields:
        return None
    return f"{fields['VERSION']}.{fields['PATCHLEVEL']}.{fields.get('SUBLEVEL') or 0}"


def tree_argument(value: str) -> Path:
    """--tree's value, checked before anything is built: a kernel tree (a directory), a
    kernel source tarball, or the name of an installed Debian package (`linux-source-6.1`:
    its tarball in /usr/src). A UsageError, one line, for anything else."""
    path = Path(value).expanduser()
    if path.is_dir() or (path.is_file() and ".tar" in path.name):
        return path.absolute()
    tarball = packaged_tarball(value)
    if tarball is not None:
        return tarball
    if PACKAGE_NAME.fullmatch(value):
        raise UsageError(
            f"--tree {value}: no such directory, and the package {value} is not installed "
            f"(`apt-get install {value}` puts its source in /usr/src)"
        )
    if path.exists():
        raise UsageError(f"--tree {value}: neither a directory nor a kernel source tarball")
    raise UsageError(f"--tree {value}: no such directory")


def unpacked_tarball(
    tarball: Path, cache_dir: Path | None = None, progress: Callable[[str], None] = print
) -> tuple[Path, str]:
    """A kernel source tarball given as --tree (Debian's linux-source-6.1, say), unpacked
    once into the cache's packages/ (as it is: our patches go into the tree's mirror, as
    for any tree), and what it is ("linux-source-6.1 6.1.192-1"). Unpacked trees are not
    pruned: a tree's key is its path, and its mirror and builds follow it."""
    identity = tarball_identity(tarball)
    root = (cache_dir or cache.default_cache_dir()) / "packages"
    stem = tarball.name.split(".tar", 1)[0]
    dest = root / f"{stem}-{cache.short(cache.source_key(identity, []))}"
    root.mkdir(parents=True, exist_ok=True)
    with cache.locked(root / ".lock"):  # two runs starting together unpack it once
        top = prepare_source(
            identity, [], dest, root, Runner(root / f"{stem}.log", progress), progress
        )
    return top, identity.describe()


def open_tree(path: Path, target: Target, cache_dir: Path | None = None) -> KernelTree:
    """`path` as a kernel tree roadtest can build for `target`, or a RoadtestError (one
    line) saying why not. A kernel source tarball stands for the tree it holds."""
    tarball = ""
    if path.is_file() and ".tar" in path.name:
        unpacked, tarball = unpacked_tarball(path.resolve(), cache_dir, _stderr)
        path = unpacked
    tree = path.expanduser().resolve()
    if not tree.is_dir():
        raise RoadtestError(f"--tree {path}: no such directory")
    version = _version(tree / "Makefile")
    if version is None or not (tree / "Kconfig").is_file():
        raise RoadtestError(
            f"--tree {path}: not a kernel tree (no top-level Makefile with VERSION and "
            "PATCHLEVEL, or no Kconfig)"
        )
    if (tree / ".config").exists() or (tree / "include" / "config").exists():
        # kbuild refuses an O= build of a tree configured in place.
        raise RoadtestError(
            f"--tree {path}: the tree has been configured in place (it has a .config): "
            "roadtest builds it out of tree, which kbuild refuses; run `make mrproper` "
            "there, or build it with O= yourself"
        )
    for needed in (*NEEDED, *NEEDED_BY_ARCH.get(target.name, ())):
        if not (tree / needed.path).is_file():
            raise RoadtestError(
                f"--tree {path}: Linux {version} is too old for roadtest: it has no "
                f"{needed.what} ({needed.path}, in Linux {needed.since} and later)"
            )
    describe, dirty = "", None
    if is_repository(tree):
        describe = git(tree, "describe", "--always", "--dirty", "--tags", check=False)
        dirty = bool(git(tree, "status", "--porcelain", "--untracked-files=no", check=False))
    return KernelTree(tree, version, describe, dirty, tarball)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class PatchOutcome:
    patch: Path
    state: str  # "applied", "already in the tree", "does not apply"
    detail: str = ""  # patch's own line, for "does not apply"


def touched_files(patch: Path) -> list[str]:
    """The paths (relative to the tree, as -p1 takes them) a unified diff changes."""
    files: list[str] = []
    try:
        lines = patch.read_text(errors="replace").splitlines()
    except OSError as err:
        raise RoadtestError(f"patch {patch}: {err.strerror or err}") from None
    for old, new in zip(lines, lines[1:], strict=False):
        if old.startswith("--- ") and new.startswith("+++ "):
            for side in (new[4:], old[4:]):
                name = side.split("\t", 1)[0].strip()
                if name != "/dev/null" and "/" in name:
                    rel = name.split("/", 1)[1]
                    if rel not in files:
                        files.append(rel)
                    break
    return files


def plan_patches(
    tree: Path,
    ours: Iterable[Path],
    theirs: Iterable[Path],
    scratch: Path,
    runner: Runner,
    dropped: Mapping[Path, str] | None = None,
) -> tuple[list[PatchOutcome], dict[str, bytes | None]]:
    """Apply `ours` where they apply and then `theirs` (the user's own, which must apply) to
    copies of the files they touch, in `scratch`; return each patch's outcome and the
    patched text of every touched file (None: the patches delete it). `dropped`: ours
    that applied but broke the build, with why: left out."""
    dropped = dropped or {}
    if shutil.which("patch") is None:
        raise RoadtestError("patch not found: install it with `apt-get install patch`")
    touched: list[str] = []

    def take(patch: Path) -> None:
        for rel in touched_files(patch):
            if rel in touched:
                continue
            touched.append(rel)
            source = tree / rel
            if source.is_file():
                (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, scratch / rel)

    outcomes: list[PatchOutcome] = []
    # No fuzz: a patch that applies only by moving its context is not known to be right.
    quiet = ("--fuzz=0", "--no-backup-if-mismatch", "--reject-file=-")
    for patch in ours:
        take(patch)
        if patch in dropped:
            outcomes.append(PatchOutcome(patch, "does not build here", dropped[patch]))
            continue
        failure = apply_patch(runner, patch, scratch, "--dry-run", *quiet)
        if failure is None:
            failure = apply_patch(runner, patch, scratch, *quiet)
            if failure is None:
                outcomes.append(PatchOutcome(patch, "applied"))
                continue
        elif apply_patch(runner, patch, scratch, "-R", "--dry-run", *quiet) is None:
            outcomes.append(PatchOutcome(patch, "already in the tree"))
            continue
        outcomes.append(PatchOutcome(patch, "does not apply", failure))
    for patch in theirs:
        take(patch)
        failure = apply_patch(runner, patch, scratch, *quiet)
        if failure is not None:
            raise RoadtestError(
                f"your patch {patch} does not apply to {tree} ({failure}); "
                f"full log: {runner.log_path}"
            )
        outcomes.append(PatchOutcome(patch, "applied"))
    texts: dict[str, bytes | None] = {}
    for rel in touched:
        copy = scratch / rel
        texts[rel] = copy.read_bytes() if copy.is_file() else None
    return outcomes, texts


def summarise(outcomes: list[PatchOutcome], root: Path) -> list[str]:
    """One line per series (a directory of patches): which of its patches apply, and why
    the others don't."""
    by_series: dict[str, list[PatchOutcome]] = {}
    for outcome in outcomes:
        try:
            series = outcome.patch.parent.relative_to(root).as_posix()
        except ValueError:
            series = str(outcome.patch.parent)
        by_series.setdefault(series, []).append(outcome)
    lines = []
    for series, items in by_series.items():
        parts = []
        for state in ("applied", "already in the tree", "does not apply", "does not build here"):
            numbers = [o.patch.name.split("-", 1)[0] for o in items if o.state == state]
            if numbers:
                parts.append(f"{', '.join(numbers)} {state}")
        lines.append(f"{series}: {'; '.join(parts)}")
    return lines


def _walk(top: Path, skip_top: frozenset[str]) -> Iterator[tuple[str, os.stat_result]]:
    """Every file and symlink under `top` (relative path, lstat), leaving out `skip_top`'s
    names at its top level."""
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            entries = list(os.scandir(top / rel_dir if rel_dir else top))
        except FileNotFoundError:
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if not rel_dir and entry.name in skip_top:
                continue
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                stack.append(rel)
            elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                yield rel, st


def _copy(source: Path, dest: Path, st: os.stat_result) -> None:
    """`source` to `dest` whole (temp file, then rename), with its mode and times."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.roadtest-tmp")
    tmp.unlink(missing_ok=True)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(source), tmp)
    else:
        shutil.copy2(source, tmp)
    os.replace(tmp, dest)


def _same(a: os.stat_result, b: os.stat_result, a_path: Path, b_path: Path) -> bool:
    if stat.S_IFMT(a.st_mode) != stat.S_IFMT(b.st_mode) or a.st_size != b.st_size:
        return False
    if stat.S_ISLNK(a.st_mode):  # a link's own time is when it was made: compare targets
        return os.readlink(a_path) == os.readlink(b_path)
    return a.st_mtime_ns == b.st_mtime_ns


@dataclass(frozen=True)
class Synced:
    copied: int  # files copied or replaced
    removed: int  # files gone from the tree, removed from the mirror
    patched: int  # files whose text in the mirror is not the tree's: our patches applied


def sync_mirror(tree: Path, mirror: Path, patched: dict[str, bytes | None]) -> Synced:
    """Make `mirror` the tree's files, with `patched`'s text in place of theirs. A file is
    copied when its type, size or modification time differ; a patched file is written
    only when its text does (kbuild then recompiles exactly what changed)."""
    mirror.mkdir(parents=True, exist_ok=True)
    skip = frozenset({".git"})
    theirs = {rel: st for rel, st in _walk(tree, skip)}
    ours = {rel: st for rel, st in _walk(mirror, frozenset())}
    copied = removed = changed = 0
    for rel, st in theirs.items():
        if rel in patched:
            continue
        mine = ours.get(rel)
        if mine is None or not _same(st, mine, tree / rel, mirror / rel):
            _copy(tree / rel, mirror / rel, st)
            copied += 1
    for rel in ours.keys() - theirs.keys() - patched.keys():
        (mirror / rel).unlink(missing_ok=True)
        removed += 1
    for rel, text in patched.items():
        dest = mirror / rel
        changed += text != _read(tree / rel)
        if text is None:
            if dest.exists() or dest.is_symlink():
                dest.unlink()
            continue
        if _read(dest) == text:
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.roadtest-tmp")
        tmp.write_bytes(text)
        source_mode = theirs[rel].st_mode if rel in theirs else 0o644
        os.chmod(tmp, stat.S_IMODE(source_mode))
        os.replace(tmp, dest)
    return Synced(copied, removed, changed)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def mirror_tree(
    tree: KernelTree,
    mirror_root: Path,
    ours: list[Path],
    theirs: list[Path],
    runner: Runner,
    dropped: Mapping[Path, str] | None = None,
) -> tuple[Path, list[PatchOutcome], Synced]:
    """The tree's mirror under `mirror_root` (made or brought up to date), with the patches
    applied (but `dropped`); the mirror's path, each patch's outcome and what changed."""
    with tempfile.TemporaryDirectory(prefix="roadtest-tree-patches-") as scratch:
        outcomes, patched = plan_patches(tree.path, ours, theirs, Path(scratch), runner, dropped)
    mirror = mirror_root / MIRROR_NAME
    synced = sync_mirror(tree.path, mirror, patched)
    return mirror, outcomes, synced
