"""Building a bisection step's kernel: incrementally, in one build directory kept across
steps (and runs), or only the modules under test when nothing else changed.

    <bisect dir>/kernel/          laid out as a cache entry (`--roadtest-kernel` boots it)
        build/                    the O= directory every full build of the clone reuses
        modules/lib/modules/<release>/
        stamp.json                its commit; removed while a build runs and when one fails
    <bisect dir>/module-build/<module>/   a module built alone (kernel/external.py)

The first kernel build of a clone starts from a copy of the cache's main kernel build of
the same config, when the clone's files are nearly all that kernel's source's (a history
over Debian's tree and our series, as the bisect proof's): kernel/transplant.py carries
the build over, and kbuild then compiles only what differs (9 objects against a full
build of the proof's history, docs/design.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from roadtest.arch.um import UM
from roadtest.bisect import git
from roadtest.errors import RoadtestError
from roadtest.kernel import transplant
from roadtest.kernel.build import Kernel, compile_kernel, kernel_in
from roadtest.kernel.cache import (
    Entry,
    Layout,
    main_builds,
    read_stamp_field,
    try_lock,
    write_stamp,
)
from roadtest.kernel.config import configure
from roadtest.kernel.external import build_external_module
from roadtest.kernel.runner import Runner
from roadtest.text import count

# Every step's kernel has the same release string and version banner, so that a kernel
# image (and a module's vermagic) is the same file whenever its code is: module identity
# compares them. LOCALVERSION set (to nothing) keeps setlocalversion from adding "+".
REPRODUCIBLE = (
    "LOCALVERSION=",
    "KBUILD_BUILD_TIMESTAMP=Thu Jan  1 00:00:00 UTC 1970",
    "KBUILD_BUILD_USER=roadtest",
    "KBUILD_BUILD_HOST=roadtest",
    "KBUILD_BUILD_VERSION=1",
)
# A seed's source must share at least this share of the clone's files: a copy of another
# tree's build would save nothing and cost its copy.
SEED_SAME_SHARE = 0.9
SEED_SAMPLE = 500  # files compared to rank the seeds
# Changes kbuild does not build from.
_NOT_BUILT = ("Documentation/", "LICENSES/", "MAINTAINERS", "CREDITS", "README")


class StepSkipped(RoadtestError):
    """The step's commit cannot be tested (git bisect's "skip"): the message says why."""


@dataclass(frozen=True)
class StepBuild:
    kernel: Kernel  # what the step boots (with `overrides` in place of its own modules)
    overrides: dict[str, Path]  # modules built alone for this step, by name
    what: str  # how it was built, for the progress line
    seconds: float


class StepBuilder:
    """Builds the clone's checked-out commit. `needed`: the modules the oracle loads (None
    before the oracle first ran: then every change means a kernel build)."""

    def __init__(
        self,
        directory: Path,
        clone: Path,
        repo_root: Path,
        fragments: list[Path],
        progress: Callable[[str], None],
        cache: Path | None = None,
    ) -> None:
        """`cache`: the kernel cache whose main kernel may seed the first build."""
        self.clone = clone
        self.cache = cache
        self.repo_root = repo_root
        self.fragments = fragments
        self.progress = progress
        self.entry = Entry(directory / "kernel")
        self.module_root = directory / "module-build"

    def _config_key(self) -> str:
        h = hashlib.sha256()
        for fragment in self.fragments:
            h.update(fragment.read_bytes())
        return h.hexdigest()

    def built_commit(self) -> str | None:
        """The commit of the last complete kernel build with today's config fragments."""
        try:
            stamp = json.loads(self.entry.stamp.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(stamp, dict) or stamp.get("config") != self._config_key():
            return None
        value = stamp.get("commit")
        return value if isinstance(value, str) else None

    def build(self, commit: str, needed: set[str] | None) -> StepBuild:
        start = time.monotonic()
        last = self.built_commit()
        plan = None if last is None or needed is None else self._module_plan(last, commit, needed)
        overrides: dict[str, Path] = {}
        if last == commit:
            kernel, what = kernel_in(self.entry.path, UM), "built already"
        elif plan is None:
            kernel, compiled = self._kernel_build(commit)
            what = f"kernel build, {count(compiled, 'object')} compiled"
        else:
            kernel = kernel_in(self.entry.path, UM)
            overrides = {name: self._module_build(kernel, name, src) for name, src in plan}
            what = (
                f"{count(len(overrides), 'module')} built alone ({', '.join(sorted(overrides))})"
                if overrides
                else "nothing to build"
            )
        return StepBuild(kernel, overrides, what, time.monotonic() - start)

    def _module_sources(self, kernel: Kernel) -> dict[str, tuple[str, list[str]]]:
        """Each module's sources (from kbuild's <module>.mod object lists), by module name:
        (its directory in the tree, its .c files)."""
        modules: dict[str, tuple[str, list[str]]] = {}
        for mod in kernel.build_dir.rglob("*.mod"):
            objects = mod.read_text().split()
            name = mod.stem.replace("-", "_")
            folder = mod.parent.relative_to(kernel.build_dir).as_posix()
            modules[name] = (folder, [o.removesuffix(".o") + ".c" for o in objects])
        return modules

    def _module_plan(
        self, last: str, commit: str, needed: set[str]
    ) -> list[tuple[str, str]] | None:
        """The needed modules to build alone at `commit` (name, source) when nothing else
        that is built changed since the kernel build of `last`; None: build the kernel."""
        kernel = kernel_in(self.entry.path, UM)
        sources = self._module_sources(kernel)
        owner = {src: name for name, (_, srcs) in sources.items() for src in srcs}
        plan: dict[str, str] = {}
        for path in git.changed_files(self.clone, last, commit):
            if path.startswith(_NOT_BUILT):
                continue
            name = owner.get(path)
            if name is None:
                return None  # built into the kernel, a header, a Makefile, a new file...
            if name not in needed:
                continue  # another module's: the oracle never loads it
            srcs = sources[name][1]
            if len(srcs) != 1:
                return None  # a module of several objects: the kernel build makes it
            plan[name] = srcs[0]
        return sorted(plan.items())

    def _kernel_build(self, commit: str) -> tuple[Kernel, int]:
        entry = self.entry
        entry.path.mkdir(parents=True, exist_ok=True)
        entry.stamp.unlink(missing_ok=True)  # until this build is complete
        entry.log.unlink(missing_ok=True)
        runner = Runner(entry.log, self.progress, interval=60.0)
        if not entry.build_dir.exists():
            self._seed(runner)
        entry.build_dir.mkdir(exist_ok=True)
        try:
            configure(runner, self.clone, entry.build_dir, self.fragments, self.repo_root, UM)
            release, _, compiled = compile_kernel(
                runner, self.clone, entry.build_dir, entry.install_dir, UM, REPRODUCIBLE
            )
        except RoadtestError as err:
            raise StepSkipped(f"does not build ({_first_line(err)})") from None
        write_stamp(
            entry,
            {
                "key": "bisect",
                "commit": commit,
                "config": self._config_key(),
                "release": release,
                "source_dir": str(self.clone),
            },
        )
        return kernel_in(entry.path, UM), compiled

    def _seed(self, runner: Runner) -> None:
        """Make the clone's build directory a copy of a cache's main kernel build of the
        same config fragments whose source is the clone's but for a few files (the one
        that shares most of a sample of the clone's files: the cache may hold builds of
        other trees, a --tree's, under the same fragments)."""
        if self.cache is None:
            return
        layout = Layout(self.cache)
        files = git.tracked_files(self.clone)
        sample = files[:: max(1, len(files) // SEED_SAMPLE)]
        ranked = []
        candidates = main_builds(layout, UM.name, [f.name for f in self.fragments])
        why = "no main kernel build of the same config fragments in the cache"
        for seed in candidates:
            source = read_stamp_field(seed, "source_dir")
            if isinstance(source, str) and Path(source).is_dir():
                share = len(transplant.same_files(Path(source), self.clone, sample))
                if share >= SEED_SAME_SHARE * len(sample):
                    ranked.append((share, seed, Path(source)))
        if candidates and not ranked:
            why = f"no main kernel build's source has {SEED_SAME_SHARE:.0%} of the clone's files"
        for _, seed, source in sorted(ranked, key=lambda r: r[0], reverse=True):
            fd = try_lock(layout.entry_lock(seed), shared=True)
            if fd is None:
                why = f"{seed.build_dir} is being built"
                continue
            try:
                same = transplant.same_files(source, self.clone, files)
                if len(same) < SEED_SAME_SHARE * len(files):
                    why = f"{len(same)} of {count(len(files), 'file')} the same as {source}'s"
                    continue
                # Older than the seed's objects, as in the seed's source: only the files
                # that differ are newer than what was built from them.
                transplant.align_times(source, self.clone, same)
                # Else the next step's checkout rewrites all of them (their times are not
                # the index's) and its kernel build compiles everything again.
                git.refresh_index(self.clone)
                if transplant.copy_build(
                    seed.build_dir, self.entry.build_dir, {source: self.clone}, runner
                ):
                    self.progress(
                        f"bisect: the first kernel build starts from a copy of {seed.build_dir} "
                        f"({len(files) - len(same)} of {count(len(files), 'file')} differ)"
                    )
                    return
                why = f"copying {seed.build_dir} failed (log: {runner.log_path})"
            finally:
                os.close(fd)
        # Said, not silent: the first build then takes minutes, not seconds.
        self.progress(f"bisect: the first kernel build starts from nothing ({why})")

    def _module_build(self, kernel: Kernel, name: str, source: str) -> Path:
        try:
            return build_external_module(
                kernel, source, self.module_root / name, progress=self.progress
            )
        except RoadtestError as err:
            raise StepSkipped(f"module {name} does not build ({_first_line(err)})") from None

    def modules(self, build: StepBuild, needed: Iterable[str]) -> dict[str, Path]:
        """Each needed module's .ko at this step; StepSkipped if one is missing."""
        installed = {
            ko.name.removesuffix(".ko").replace("-", "_"): ko
            for ko in build.kernel.modules_dir.rglob("*.ko")
        }
        found = {**installed, **build.overrides}
        modules = {}
        for name in sorted(needed):
            if name not in found:
                raise StepSkipped(f"module {name} is not built here: no driver under test")
            modules[name] = found[name]
        return modules


def _first_line(err: RoadtestError) -> str:
    return str(err).splitlines()[0]
