"""Building a guest kernel and its modules, or recognising the cached build, keyed by its inputs."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from roadtest.arch import Target
from roadtest.arch.um import UM
from roadtest.atomic import write_atomically
from roadtest.errors import RoadtestError
from roadtest.kernel import cache, prune, transplant, verify
from roadtest.kernel.cache import Entry, Layout
from roadtest.kernel.config import config_fragments, configure
from roadtest.kernel.runner import CommandFailed, Runner, parallel_jobs
from roadtest.kernel.source import (
    SourceIdentity,
    prepare_source,
    read_series,
    source_identity,
    version_series,
)
from roadtest.kernel.tree import KernelTree, mirror_tree, summarise, touched_files
from roadtest.text import count


@dataclass(frozen=True)
class Kernel:
    release: str  # e.g. "6.12.118-roadtest" (from include/config/kernel.release)
    source_dir: Path  # the patched tree: dt-bindings includes and scripts come from here
    build_dir: Path  # the O= directory
    target: Target  # the architecture it was built for
    image: Path  # what the machine boots (UML: the vmlinux binary)
    modules_dir: Path  # .../lib/modules/<release>, after modules_install (modules.dep, kernel/...)
    config: Path  # the final .config


COUNT_STAGE = "building"  # the runner's periodic "building: N objects compiled"


class _StderrProgress:
    """Stage lines on stderr; on a terminal the compile count updates in place."""

    def __init__(self) -> None:
        self._counting = False

    @property
    def interactive(self) -> bool:
        return sys.stderr.isatty()

    def __call__(self, message: str) -> None:
        if self.interactive and message.startswith(COUNT_STAGE + ":"):
            sys.stderr.write("\r\x1b[K" + message)
            self._counting = True
        else:
            if self._counting:
                sys.stderr.write("\n")
                self._counting = False
            sys.stderr.write(message + "\n")
        sys.stderr.flush()


_stderr = _StderrProgress()


def _report_interval(progress: Callable[[str], None]) -> float:
    # A terminal gets a live counter; logs (CI, pytest's capture) a line every half minute.
    return 1.0 if progress is _stderr and _stderr.interactive else 30.0


@dataclass(frozen=True)
class Variant:
    """A kernel the cache keeps beside the main one: its whole config (`fragments`), and the
    kbuild variables (`VAR=value`) its build sets."""

    fragments: tuple[Path, ...]
    make_vars: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Inputs:
    source: str  # what the build is of, for its progress line and stamp
    identity: SourceIdentity | None  # Debian's tarball (None: a tree of the user's)
    patches: list[Path]
    fragments: list[Path]
    source_key: str
    key: str
    target: Target
    make_vars: tuple[str, ...]
    # The fragments that make it a variant: those the main kernel of its target lacks
    # (the sanitizer fragment; none for the main and coverage kernels), by file name.
    own_fragments: tuple[str, ...]
    main_fragments: tuple[str, ...]  # the names of the target's main kernel's fragments


def our_series(repo_root: Path, tree: KernelTree | None) -> list[Path]:
    """Our patches for the build: kernel-patches/series, and for a tree the stable-branch
    series of its version after them (kernel-patches/6.1.y/ for a 6.1 tree)."""
    stable = version_series(repo_root, tree.version) if tree is not None else []
    return [*read_series(repo_root), *stable]


def _inputs(
    repo_root: Path,
    variant: Variant | None,
    target: Target,
    tree: KernelTree | None = None,
    extra_patches: Sequence[Path] = (),
) -> _Inputs:
    """The build's inputs: Debian's source with our series, or `tree` (its mirror: keyed by
    the tree's path, since the mirror follows its contents) with those of our patches that
    apply and the user's `extra_patches`."""
    patches = [*our_series(repo_root, tree), *extra_patches]
    make_vars: tuple[str, ...] = ()
    main = config_fragments(repo_root, target)
    if variant is None:
        fragments = main
    else:
        fragments = [f if f.is_absolute() else repo_root / f for f in variant.fragments]
        make_vars = variant.make_vars
    own = tuple(sorted({f.name for f in fragments if f not in main}))
    main_names = tuple(f.name for f in main)
    for fragment in fragments:
        if not fragment.is_file():
            raise RoadtestError(f"config fragment {fragment} not found")
    identity = None
    if tree is None:
        identity = source_identity()
        src_key, source = cache.source_key(identity, patches), identity.describe()
    else:
        src_key, source = tree.key, tree.describe_line()
    # A tree's mirror is keyed by its path alone; its builds by our series too.
    built_from = src_key if tree is None else cache.series_key(src_key, patches)
    key = cache.build_key(built_from, fragments, target.key_data(), make_vars)
    return _Inputs(
        source, identity, patches, fragments, src_key, key, target, make_vars, own, main_names
    )


def _from_stamp(entry: Entry, key: str | None, target: Target) -> Kernel | None:
    """The complete kernel of `entry` (its stamp's key must be `key`, unless None)."""
    stamp = cache.read_stamp(entry, key)
    if stamp is None or "release" not in stamp or "source_dir" not in stamp:
        return None
    release = stamp["release"]
    kernel = Kernel(
        release=release,
        source_dir=Path(stamp["source_dir"]),
        build_dir=entry.build_dir,
        target=target,
        image=entry.build_dir / target.image,
        modules_dir=entry.install_dir / "lib" / "modules" / release,
        config=entry.build_dir / ".config",
    )
    complete = (
        kernel.image.is_file()
        and (kernel.modules_dir / "modules.dep").is_file()
        and kernel.config.is_file()
        and kernel.source_dir.is_dir()
    )
    return kernel if complete else None


def _use_cached(
    entry: Entry,
    key: str,
    target: Target,
    progress: Callable[[str], None],
    *,
    thorough: bool = False,
) -> tuple[Kernel | None, verify.Found | None]:
    """The entry's kernel, marked as in use by this process, if its build is complete and
    whole (verify.py; `thorough`: its image's checksum too); else None, and what is damaged
    in it if it is complete but not whole (found.damage is then set)."""
    if _from_stamp(entry, key, target) is None:
        return None, None
    try:
        cache.hold_in_use(entry)
    except OSError:
        return None, None  # pruned since we looked
    # A pruner may have deleted the entry between the check and the lock: look again.
    kernel = _from_stamp(entry, key, target)
    if kernel is None:
        cache.release_in_use(entry)
        return None, None
    recorded = cache.read_stamp_field(entry, verify.STAMP_KEY)
    found = verify.check(
        entry.path,
        kernel.image,
        entry.install_dir,
        kernel.config,
        recorded,
        thorough=thorough,
    )
    if found.damage is not None:
        cache.release_in_use(entry)
        return None, found
    if found.update is not None:
        if not isinstance(recorded, dict):
            progress(
                f"kernel: {entry.path} was built by an older roadtest: its image is whole; "
                "its checksum and sizes are now recorded"
            )
        cache.update_stamp(entry, verify.STAMP_KEY, found.update)
    cache.touch(entry.stamp)
    return kernel, None


def kernel_in(directory: Path, target: Target = UM) -> Kernel:
    """The complete `target` kernel build laid out as a cache entry in `directory` (build/,
    modules/, stamp.json): a cache entry, or a `roadtest bisect` step's kernel."""
    kernel = _from_stamp(Entry(directory), None, target)
    if kernel is None:
        raise RoadtestError(
            f"{directory}: not a complete kernel build (no stamp.json naming its build/, "
            "modules/ and source)"
        )
    return kernel


def cached_kernel(
    repo_root: Path,
    *,
    variant: Variant | None = None,
    cache_dir: Path | None = None,
    target: Target = UM,
    thorough: bool = False,
    progress: Callable[[str], None] = _stderr,
) -> Kernel | None:
    """The cached kernel for the current inputs, or None if it needs building (or is
    damaged: `thorough` checks its image's checksum too). Never builds."""
    inputs = _inputs(repo_root, variant, target)
    layout = Layout(cache_dir or cache.default_cache_dir())
    entry = layout.entry(inputs.key)
    return _use_cached(entry, inputs.key, target, progress, thorough=thorough)[0]


def ensure_kernel(
    repo_root: Path,
    *,
    variant: Variant | None = None,
    cache_dir: Path | None = None,
    progress: Callable[[str], None] = _stderr,
    target: Target = UM,
    thorough: bool = False,
    force: bool = False,
) -> Kernel:
    """The `target` kernel for the current sources, patches and config fragments (or
    `variant`'s), built if needed, or if the cached build is damaged (`thorough`: its
    image's checksum is checked too). `force`: built again from an empty build directory."""
    inputs = _inputs(repo_root, variant, target)
    layout = Layout(cache_dir or cache.default_cache_dir())
    entry = layout.entry(inputs.key)
    if not force:
        kernel, _ = _use_cached(entry, inputs.key, target, progress, thorough=thorough)
        if kernel is not None:
            return kernel
    prune.limit_from_env()  # a bad limit is one line now, not after the build
    try:
        cache.when_alone(layout, lambda: cache.clean_leftovers(layout))
        with cache.build_lock(layout, entry, progress):
            # Another process may have built it while we waited for the lock.
            kernel, damage = None, None
            if not force:
                kernel, damage = _use_cached(entry, inputs.key, target, progress, thorough=thorough)
            if kernel is None:
                if force and entry.path.is_dir():
                    _discard(entry, None)
                    progress(f"kernel: building {entry.path} again from scratch (--force)")
                elif damage is not None:
                    _discard(entry, damage)
                    progress(
                        f"kernel: the cached build {entry.path} is damaged ({damage.damage}): "
                        "building it again"
                    )
                try:
                    kernel = _build(repo_root, inputs, layout, entry, progress, seed=not force)
                except BaseException:
                    cache.release_in_use(entry)  # a failed build is nobody's to use
                    raise
        _prune_if_alone(layout, entry, progress)
    except OSError as err:
        raise _cache_error(err, layout) from None
    return kernel


def _prune_if_alone(layout: Layout, entry: Entry, progress: Callable[[str], None]) -> None:
    """Prune after a build unless other builds run: the last of them prunes."""

    def work() -> None:
        line = prune.prune(layout, entry).line(layout.root)
        if line:
            progress(line)

    cache.when_alone(layout, work)


def _cache_error(err: OSError, layout: Layout) -> RoadtestError:
    """A build's OSError as one line. Tools' failures are reported by the runner; this is
    the cache itself (permissions, space)."""
    where = err.filename or layout.root
    return RoadtestError(
        f"kernel cache: {err.strerror or err} ({where}); "
        f"free some space or set {cache.CACHE_ENV} to a writable directory"
    )


def tree_kernel(
    repo_root: Path,
    tree: KernelTree,
    *,
    variant: Variant | None = None,
    target: Target = UM,
    series: Sequence[Path] = (),
    build: bool = True,
    cache_dir: Path | None = None,
    progress: Callable[[str], None] = _stderr,
) -> Kernel:
    """The kernel of the user's `tree` (`--tree`), with `variant`'s config and the user's
    `series` of patches after ours. `build`: bring its mirror up to date with the tree and
    build it incrementally (what changed since the last run: seconds for one driver);
    otherwise its last build, as it is (a test process of a run whose command built it)."""
    inputs = _inputs(repo_root, variant, target, tree, series)
    layout = Layout(cache_dir or cache.default_cache_dir())
    entry = layout.entry(inputs.key)
    if not build:
        kernel = _from_stamp(entry, inputs.key, target)
        if kernel is None:
            raise RoadtestError(
                f"no build of {tree.path} for {target.name}: run `roadtest build --tree "
                f"{tree.path}` (or any roadtest command with --tree, which builds it first)"
            )
        cache.hold_in_use(entry)
        return kernel
    prune.limit_from_env()
    ours = our_series(repo_root, tree)
    summary: list[str] = []
    # Ours that applied but broke the build (a helper the tree's kernel lacks, say): each
    # is left out, and the build tried again, once per patch at most. Remembered in the
    # entry while the tree's files that patch changes stay as they were.
    remembered = entry.path / "dropped-patches.json"
    dropped = _remembered_drops(remembered, tree, ours)

    def prepare(runner: Runner) -> Path:
        mirror, outcomes, synced = mirror_tree(
            tree, layout.src_dir(inputs.source_key), ours, list(series), runner, dropped
        )
        summary[:] = summarise(outcomes, repo_root / "kernel-patches")
        for line in summary:
            progress(f"kernel: patches {line}")
        progress(
            f"kernel: mirrored {tree.path}: {count(synced.copied, 'file')} copied, "
            f"{synced.removed} removed, {count(synced.patched, 'file')} with our patches"
        )
        return mirror

    try:
        cache.when_alone(layout, lambda: cache.clean_leftovers(layout))
        # The mirror is synced, then built from: its lock is held for the whole build.
        with (
            cache.build_lock(layout, entry, progress),
            cache.source_lock(layout, inputs.source_key, progress),
        ):
            while True:
                configured = _from_stamp(entry, inputs.key, target) is not None
                entry.path.mkdir(parents=True, exist_ok=True)
                entry.log.unlink(missing_ok=True)  # each build's log is its own
                try:
                    kernel = _build(
                        repo_root,
                        inputs,
                        layout,
                        entry,
                        progress,
                        prepare=prepare,
                        reconfigure=not configured,
                        stamp_extra=lambda: {"tree": str(tree.path), "tree_patches": summary},
                    )
                    break
                except CommandFailed as err:
                    culprit = _our_patch_of(err, ours, dropped)
                    cache.release_in_use(entry)
                    if culprit is None:
                        raise
                    dropped[culprit] = err.first_error or ""
                    _remember_drops(remembered, tree, dropped)
                    progress(
                        f"kernel: {culprit.name} applies to {tree.path} but does not build "
                        f"there ({err.first_error}): building without it"
                    )
                except BaseException:
                    cache.release_in_use(entry)
                    raise
        _prune_if_alone(layout, entry, progress)
    except OSError as err:
        raise _cache_error(err, layout) from None
    return kernel


def _touched_digest(tree: KernelTree, patch: Path) -> str:
    """The tree's own text of the files `patch` changes: a dropped patch is tried again
    when it changes."""
    h = hashlib.sha256()
    for rel in touched_files(patch):
        path = tree.path / rel
        h.update(rel.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"-"))
    return h.hexdigest()


def _remembered_drops(file: Path, tree: KernelTree, ours: list[Path]) -> dict[Path, str]:
    try:
        saved = json.loads(file.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(saved, dict):
        return {}
    drops: dict[Path, str] = {}
    for patch in ours:
        record = saved.get(patch.name)
        if isinstance(record, dict) and record.get("files") == _touched_digest(tree, patch):
            drops[patch] = str(record.get("error", ""))
    return drops


def _remember_drops(file: Path, tree: KernelTree, dropped: Mapping[Path, str]) -> None:
    records = {
        p.name: {"error": why, "files": _touched_digest(tree, p)} for p, why in dropped.items()
    }
    write_atomically(file, json.dumps(records, indent=1, sort_keys=True) + "\n")


def _our_patch_of(err: CommandFailed, ours: list[Path], dropped: Mapping[Path, str]) -> Path | None:
    """The patch of ours (not yet dropped) that changed the file of the build's first
    error; None when the error is the tree's own."""
    where = err.error_file()
    if where is None:
        return None
    for patch in ours:
        if patch not in dropped and any(where.endswith(rel) for rel in touched_files(patch)):
            return patch
    return None


def _discard(entry: Entry, damaged: verify.Found | None) -> None:
    """Make `entry` unbuilt before building it again: all of its build (`damaged` None), or
    the damaged file, which kbuild would take as up to date (its time is new): an image
    (UML boots vmlinux; x86_64's bzImage is made from it: both go), or an installed module
    (its build's copy goes: make links it again, modules_install copies it again).
    Refused while another process uses the entry: its guests boot from these files."""
    cache.release_in_use(entry)
    fd = cache.try_lock(entry.use_lock)
    if fd is None:
        what = "--force" if damaged is None else f"building it again ({damaged.damage})"
        raise RoadtestError(
            f"kernel: {entry.path} is in use by another roadtest process: {what} must wait "
            "until it ends"
        )
    try:
        entry.stamp.unlink(missing_ok=True)
        if damaged is None:
            cache.remove_tree(entry.build_dir)
            cache.remove_tree(entry.install_dir)
            return
        where = Path(damaged.where or "")
        if where.parts[:1] == (entry.build_dir.name,):
            for name in ("vmlinux", "arch/x86/boot/bzImage"):
                (entry.build_dir / name).unlink(missing_ok=True)
        elif where.suffix == ".ko" and "kernel" in where.parts:
            inside = where.parts[where.parts.index("kernel") + 1 :]
            (entry.build_dir.joinpath(*inside)).unlink(missing_ok=True)
    finally:
        os.close(fd)


def _seed_build_dir(
    layout: Layout, entry: Entry, inputs: _Inputs, runner: Runner, source_dir: Path
) -> tuple[Entry, str] | None:
    """Start from the closest complete build of the same target, and what it is: kbuild
    then rebuilds only what the config change touches. The same source first; else, for
    Debian's tarball, a build of it with another patch series (a patch added, changed or
    dropped), whose source tree differs in a few files (transplant.retime_for). Copied,
    not moved: other processes may be using that build."""
    candidates = [
        e
        for e in layout.entries()
        if e.path != entry.path
        and e.stamp.is_file()
        and e.target() == inputs.target.name  # another ARCH's objects are all rebuilt
    ]
    same = [e for e in candidates if e.source_key() == inputs.source_key]
    for previous in sorted(same, key=lambda e: closeness(e, inputs), reverse=True):
        fd = cache.try_lock(layout.entry_lock(previous), shared=True)
        if fd is None:
            continue  # another process is building it again: its directory is changing
        try:
            # The same source: only the build directory's own path moves (the host tools
            # record it: transplant.repoint). Not fatal if it fails: build from scratch.
            copied = transplant.copy_build(previous.build_dir, entry.build_dir, {}, runner)
        finally:
            os.close(fd)
        return (previous, "same source") if copied else None
    if inputs.identity is None:
        return None  # a user's tree: its files' times are not ours to change
    series = [e for e in candidates if cache.read_stamp_field(e, "source") == inputs.source]
    for previous in sorted(series, key=lambda e: closeness(e, inputs), reverse=True):
        old_src = cache.read_stamp_field(previous, "source_dir")
        if not isinstance(old_src, str) or not Path(old_src).is_dir():
            continue
        fd = cache.try_lock(layout.entry_lock(previous), shared=True)
        if fd is None:
            continue
        try:
            _, touched = transplant.retime_for(Path(old_src), source_dir)
            moves = {Path(old_src): source_dir}
            copied = transplant.copy_build(previous.build_dir, entry.build_dir, moves, runner)
        finally:
            os.close(fd)
        what = f"another patch series: {touched} source file{'s' if touched != 1 else ''} differ"
        return (previous, what) if copied else None
    return None


def closeness(e: Entry, inputs: _Inputs) -> tuple[bool, bool, int, float]:
    """How good a seed `e` is for `inputs` (larger is better), in order:

    - the same variant: the same kbuild variables and the same fragments of its own (the
      sanitizer fragment's KASAN, like the coverage variant's CFLAGS_MODULE, changes every
      object: a sanitizer kernel seeded from the main build recompiles all of it, however
      few test fragments tell the two apart);
    - the same kbuild variables;
    - fewer fragments that differ (by name: a new driver's fragment, or one removed);
    - the most recently used.
    """
    same_vars = e.make_vars() == list(inputs.make_vars)
    own = e.own_fragments(inputs.main_fragments)
    same_variant = same_vars and own == list(inputs.own_fragments)
    differ = len(set(_fragment_names(inputs)).symmetric_difference(e.fragments()))
    try:
        used = e.stamp.stat().st_mtime
    except OSError:
        used = 0.0
    return (same_variant, same_vars, -differ, used)


def _fragment_names(inputs: _Inputs) -> list[str]:
    """The config fragments of a build by file name (entry.json; a seed's closeness)."""
    return [p.name for p in inputs.fragments]


def _elapsed(start: float) -> str:
    seconds = int(time.monotonic() - start)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _build(
    repo_root: Path,
    inputs: _Inputs,
    layout: Layout,
    entry: Entry,
    progress: Callable[[str], None],
    *,
    seed: bool = True,
    prepare: Callable[[Runner], Path] | None = None,
    reconfigure: bool = True,
    stamp_extra: Callable[[], dict[str, object]] | None = None,
) -> Kernel:
    """Build `entry` (its build directory as it is: kbuild remakes what changed). The
    source is Debian's tarball with our series, unpacked into the cache, unless `prepare`
    makes it (a tree's mirror); `reconfigure` False keeps a .config made from the same
    fragments (a tree's next build); `stamp_extra` adds fields to the stamp."""
    start = time.monotonic()
    entry.path.mkdir(parents=True, exist_ok=True)
    entry.stamp.unlink(missing_ok=True)
    if not entry.info.is_file():
        write_atomically(
            entry.info,
            json.dumps(
                {
                    "key": inputs.key,
                    "source_key": inputs.source_key,
                    "make_vars": list(inputs.make_vars),
                    "fragments": _fragment_names(inputs),
                    "own_fragments": list(inputs.own_fragments),
                    "target": inputs.target.name,
                }
            )
            + "\n",
        )
    entry.use_lock.touch()
    cache.hold_in_use(entry)
    runner = Runner(entry.log, progress, interval=_report_interval(progress))
    progress(f"kernel: building {inputs.source} into {entry.path} (log: {entry.log})")

    if prepare is not None:
        source_dir = prepare(runner)
    else:
        assert inputs.identity is not None
        with cache.source_lock(layout, inputs.source_key, progress):
            source_dir = prepare_source(
                inputs.identity,
                inputs.patches,
                layout.src_dir(inputs.source_key),
                repo_root,
                runner,
                progress,
            )
    if seed and not entry.build_dir.is_dir():
        seeded = _seed_build_dir(layout, entry, inputs, runner, source_dir)
        if seeded is not None:
            previous, what = seeded
            progress(f"kernel: starting from the build in {previous.path} ({what})")
        entry.build_dir.mkdir(exist_ok=True)

    target = inputs.target
    config = entry.build_dir / ".config"
    if reconfigure or not config.is_file():
        progress(f"kernel: configuring ({len(inputs.fragments)} config fragments)")
        # A tree (prepare) may predate a test's driver: its option is left out, and said.
        absent = progress if prepare is not None else None
        config = configure(
            runner, source_dir, entry.build_dir, inputs.fragments, repo_root, target, absent
        )

    release, modules_dir, compiled = compile_kernel(
        runner, source_dir, entry.build_dir, entry.install_dir, target, inputs.make_vars
    )

    kernel = Kernel(
        release=release,
        source_dir=source_dir,
        build_dir=entry.build_dir,
        target=target,
        image=entry.build_dir / target.image,
        modules_dir=modules_dir,
        config=config,
    )
    # Last: the stamp is what makes the entry count as built.
    records = verify.record(entry.path, kernel.image, entry.install_dir, config)
    cache.write_stamp(
        entry,
        {
            verify.STAMP_KEY: records,
            "key": inputs.key,
            "source_key": inputs.source_key,
            "release": release,
            "source_dir": str(source_dir),
            "source": inputs.source,
            "patches": " ".join(p.name for p in inputs.patches),
            "fragments": " ".join(str(f) for f in inputs.fragments),
            **(stamp_extra() if stamp_extra is not None else {}),
        },
    )
    progress(f"kernel {release}: built in {_elapsed(start)} ({count(compiled, 'object')} compiled)")
    return kernel


def compile_kernel(
    runner: Runner,
    source_dir: Path,
    build_dir: Path,
    install_dir: Path,
    target: Target,
    make_vars: Sequence[str] = (),
) -> tuple[str, Path, int]:
    """Compile the configured `build_dir` of `source_dir` (incrementally: kbuild remakes
    what changed) and install its modules under `install_dir`; return the release, the
    modules' directory (lib/modules/<release>) and how many objects were compiled."""
    make = ["make", *target.make_args(), *make_vars, f"O={build_dir}"]
    jobs = parallel_jobs()
    runner.progress(f"kernel: compiling with {jobs} job{'s' if jobs > 1 else ''}")
    built = runner.check(
        [*make, f"-j{jobs}", *target.build_targets],
        cwd=source_dir,
        failure="kernel build failed",
        count=COUNT_STAGE,
        nice=True,
    )
    release = (build_dir / "include" / "config" / "kernel.release").read_text().strip()

    runner.progress("kernel: installing modules")
    depmod = shutil.which("depmod") or shutil.which("depmod", path="/usr/sbin:/sbin")
    if depmod is None:
        raise RoadtestError("depmod not found: install it with `apt-get install kmod`")
    # Stale modules from an earlier attempt must not survive into modules.dep.
    shutil.rmtree(install_dir, ignore_errors=True)
    runner.check(
        [*make, f"INSTALL_MOD_PATH={install_dir}", f"DEPMOD={depmod}", "modules_install"],
        cwd=source_dir,
        failure="kernel modules_install failed",
        nice=True,
    )
    modules_dir = install_dir / "lib" / "modules" / release
    if not (modules_dir / "modules.dep").is_file():
        raise RoadtestError(
            f"modules_install made no {modules_dir / 'modules.dep'}; full log: {runner.log_path}"
        )
    return release, modules_dir, built.compiled
