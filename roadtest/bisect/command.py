"""`roadtest bisect`: the commit of a kernel tree, or the patch of a series, that first
breaks an oracle (tests, or golden traces).

Both ends are tested first (good must be good, bad bad), then `git bisect` picks the
steps. Each step builds incrementally (builder.py), and boots only if its code is new:
a step whose kernel image and needed modules are identical to a decided step's
(kernel/identity.py) takes that step's verdict.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from roadtest.atomic import write_atomically
from roadtest.bisect import git
from roadtest.bisect.builder import StepBuild, StepBuilder, StepSkipped
from roadtest.bisect.history import SeriesHistory, distribution_repo, series_history
from roadtest.bisect.oracle import BAD, GOOD, SKIP, Oracle, Verdict
from roadtest.errors import RoadtestError
from roadtest.kernel.cache import locked, touch
from roadtest.kernel.config import config_fragments
from roadtest.kernel.identity import image_identity, module_identity
from roadtest.kernel.prune import prune_if_idle
from roadtest.kernel.source import read_series_file, source_identity
from roadtest.text import count


@dataclass
class Step:
    commit: str
    subject: str
    role: str  # "good end", "bad end" or "step"
    verdict: str = SKIP
    why: str = ""
    build: str = ""  # how it was built
    build_seconds: float = 0.0
    oracle_seconds: float = 0.0
    reused_from: str | None = None  # the decided step whose verdict it took
    log: str = ""  # the oracle's output
    patch: str | None = None  # series mode: the patch this commit applies
    failure: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Range:
    tree: Path  # a git repository (the user's, or a series' history)
    good: str
    bad: str
    series: SeriesHistory | None = None


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def git_range(tree: Path, good: str, bad: str) -> Range:
    """The user's tree and revisions, checked: one line for each way they can be wrong."""
    if not git.is_repository(tree):
        raise RoadtestError(f"--tree {tree}: not a git repository")
    tree = tree.resolve()  # the clone's origin, from wherever the bisection runs
    dirty = git.dirty_files(tree)
    if dirty:
        raise RoadtestError(
            f"the tree {tree} is dirty ({count(len(dirty), 'file')} with changes not "
            f"committed, e.g. {dirty[0]}): commit or stash them; bisect tests commits"
        )
    good_sha, bad_sha = git.resolve(tree, good), git.resolve(tree, bad)
    if not git.is_ancestor(tree, good_sha, bad_sha):
        raise RoadtestError(f"--good {good} is not an ancestor of --bad {bad}")
    if good_sha == bad_sha:
        raise RoadtestError(f"--good {good} and --bad {bad} are the same commit")
    return Range(tree, good_sha, bad_sha)


def _patch_count(value: str | None, patches: list[Path], default: int, option: str) -> int:
    """--good/--bad in series mode: a number of patches applied, or a patch's file name
    (that patch is the last applied)."""
    if value is None:
        return default
    if value.isdigit() and int(value) <= len(patches):
        return int(value)
    names = [p.name for p in patches]
    if value in names:
        return names.index(value) + 1
    raise RoadtestError(
        f"{option} {value}: give a number of patches (0 to {len(patches)}) or a patch of the series"
    )


def series_range(
    series: Path, good: str | None, bad: str | None, cache: Path, progress: Callable[[str], None]
) -> Range:
    patches = read_series_file(series)
    if not patches:
        raise RoadtestError(f"--series {series}: no patches in it")
    good_n = _patch_count(good, patches, 0, "--good")
    bad_n = _patch_count(bad, patches, len(patches), "--bad")
    if good_n >= bad_n:
        raise RoadtestError(f"--good must apply fewer patches than --bad ({good_n} >= {bad_n})")
    repo = distribution_repo(cache, source_identity(), progress)
    history = series_history(repo, patches, progress)
    return Range(repo, history.commit_after(good_n), history.commit_after(bad_n), history)


class Bisection:
    def __init__(
        self,
        span: Range,
        oracle: Oracle,
        directory: Path,
        repo_root: Path,
        progress: Callable[[str], None],
        cache: Path | None = None,
    ) -> None:
        self.span = span
        self.oracle = oracle
        self.directory = directory
        self.progress = progress
        self.clone = directory / "src"
        self.builder = StepBuilder(
            directory, self.clone, repo_root, config_fragments(repo_root), progress, cache
        )
        self.steps: list[Step] = []
        self.needed: set[str] | None = None  # the modules the oracle loads (known once it ran)
        self._hints = directory / "modules-used.json"
        self.hint = self._hints_read().get(oracle.describe())  # from an earlier bisection
        self.decided: dict[str, Step] = {}  # by identity
        self._images: dict[tuple[str, int, int], str] = {}

    def run(self) -> Step:
        """The first bad step; RoadtestError if there is none."""
        self.progress(f"bisect: cloning {self.span.tree} (shared objects) into {self.clone}")
        git.ensure_clone(self.span.tree, self.clone)
        git.bisect_reset(self.clone)
        try:
            for commit, role, wanted in (
                (self.span.good, "good end", GOOD),
                (self.span.bad, "bad end", BAD),
            ):
                git.checkout(self.clone, commit)
                step = self.evaluate(commit, role)
                if step.verdict == SKIP:
                    raise RoadtestError(
                        f"the oracle does not run at the {role} {commit[:12]}: {step.why}"
                    )
                if step.verdict != wanted:
                    raise RoadtestError(
                        f"{role[:-4]} is not {wanted}: {commit[:12]} is {step.verdict} ({step.why})"
                    )
            git.bisect_start(self.clone, self.span.bad, self.span.good)
            while True:
                step = self.evaluate(git.head(self.clone), "step")
                first = git.bisect_mark(self.clone, step.verdict)
                if first is not None:
                    return next(s for s in reversed(self.steps) if s.commit == first)
        finally:
            git.bisect_reset(self.clone)

    def _identity(self, build: StepBuild, modules: dict[str, Path]) -> str:
        st = build.kernel.image.stat()
        key = (str(build.kernel.image), st.st_mtime_ns, st.st_size)
        if key not in self._images:
            self._images[key] = image_identity(build.kernel.image)
        parts = [self._images[key], *(f"{n}:{module_identity(ko)}" for n, ko in modules.items())]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    def evaluate(self, commit: str, role: str) -> Step:
        """Build the clone's checked-out `commit`, and decide it: by the identity of its
        code with a decided step's, else by the oracle."""
        step = Step(commit, git.subject(self.clone, commit), role)
        if self.span.series is not None:
            patch = self.span.series.patch_of(commit)
            step.patch = patch.name if patch else None
        self.steps.append(step)
        try:
            # Until the oracle ran here, what it loaded in an earlier bisection of this
            # tree plans the build; the run checks the guess (_decide).
            planned = self.needed if self.needed is not None else self.hint
            build = self.builder.build(commit, planned)
            step.build, step.build_seconds = build.what, build.seconds
            if self.needed is not None:
                identity = self._identity(build, self.builder.modules(build, self.needed))
                same = self.decided.get(identity)
                if same is not None:
                    step.verdict, step.reused_from = same.verdict, same.commit
                    step.why = f"same code as {same.commit[:12]}, decided {same.verdict}"
                    # Its oracle would say what that step's said: show that.
                    step.failure, step.log = same.failure, same.log
                    self._report(step)
                    return step
            self._decide(step, build, planned)
        except StepSkipped as err:
            step.verdict, step.why = SKIP, str(err)
        self._report(step)
        return step

    def _decide(self, step: Step, build: StepBuild, planned: set[str] | None) -> None:
        """Run the oracle on `build`, learn what it loads, and record the verdict."""
        logs = self.directory / "logs"
        logs.mkdir(exist_ok=True)
        used_file = logs / "modules-used"

        def ask(build: StepBuild) -> tuple[Verdict, set[str]]:
            overrides = tuple(build.overrides.values())
            verdict = self.oracle.run(
                build.kernel, overrides, logs / f"{step.commit[:12]}.log", used_file
            )
            return verdict, _read_lines(used_file)

        verdict, used = ask(build)
        if (
            verdict.verdict != SKIP
            and planned is not None
            and not used <= planned
            and self.builder.built_commit() != step.commit
        ):
            # It loaded a module the build plan did not consider, which may be stale
            # here: build the kernel of this commit and ask again.
            build = self.builder.build(step.commit, None)
            step.build = f"{step.build}, then {build.what}"
            step.build_seconds += build.seconds
            verdict, used = ask(build)
        self._take(step, verdict)
        if verdict.verdict == SKIP:
            return
        self.needed = (self.needed or set()) | used
        self._remember(used)
        identity = self._identity(build, self.builder.modules(build, self.needed))
        self.decided.setdefault(identity, step)

    def _hints_read(self) -> dict[str, set[str]]:
        try:
            data = json.loads(self._hints.read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {k: set(v) for k, v in data.items() if isinstance(v, list)}

    def _remember(self, used: set[str]) -> None:
        """Keep what this oracle loads for the next bisection of the tree to plan with."""
        hints = self._hints_read()
        hints[self.oracle.describe()] = used | hints.get(self.oracle.describe(), set())
        write_atomically(
            self._hints, json.dumps({k: sorted(v) for k, v in hints.items()}, indent=1) + "\n"
        )

    def _take(self, step: Step, verdict: Verdict) -> None:
        step.verdict, step.why, step.failure = verdict.verdict, verdict.why, verdict.failure
        step.oracle_seconds, step.log = verdict.seconds, str(verdict.log)

    def _report(self, step: Step) -> None:
        timing = f"build {step.build_seconds:.0f} s ({step.build or 'none'})"
        if step.reused_from is None and step.oracle_seconds:
            timing += f", oracle {step.oracle_seconds:.0f} s"
        label = f"[{step.patch}] " if step.patch else ""
        self.progress(
            f"bisect: {step.role} {step.commit[:12]} {label}{step.subject[:60]}: "
            f"{step.verdict.upper()}, {step.why}; {timing}"
        )


def _read_lines(path: Path) -> set[str]:
    try:
        return {line.strip() for line in path.read_text().splitlines() if line.strip()}
    except FileNotFoundError:
        return set()


def tree_directory(cache: Path, tree: Path) -> Path:
    """Where a tree's bisections keep their clone, build and logs: one per repository."""
    key = hashlib.sha256(str(git.common_dir(tree).resolve()).encode()).hexdigest()[:16]
    return cache / "bisect" / key


def bisect(
    *,
    tree: Path | None,
    series: Path | None,
    good: str | None,
    bad: str | None,
    tests: list[str],
    golden: Path | None,
    options: list[str],
    json_log: Path | None,
    repo_root: Path,
    cache: Path,
    progress: Callable[[str], None] = _stderr,
) -> int:
    if (tree is None) == (series is None):
        raise RoadtestError("give --tree (git mode) or --series (series mode)")
    if golden is None and not tests:
        raise RoadtestError("give the oracle: tests after --, or --golden DIR")
    if golden is not None and not golden.is_dir():
        raise RoadtestError(f"--golden {golden}: no such directory")
    if tree is not None:
        if good is None or bad is None:
            raise RoadtestError("git mode needs --good and --bad revisions")
        span = git_range(tree, good, bad)
    else:
        assert series is not None
        span = series_range(series, good, bad, cache, progress)
    oracle = Oracle(repo_root, tests, golden, options)
    directory = tree_directory(cache, span.tree)
    start = time.monotonic()
    # Two bisections of one tree share its clone and builds: the second waits its turn.
    waiting = f"bisect: waiting for another roadtest bisect of this tree to end ({directory})"
    with locked(directory / "lock", waiting=waiting, progress=progress):
        # The cache's pruning (kernel/prune.py) keeps what was used lately: this tree's
        # directory is used from now on.
        touch(directory / "lock")
        prune_if_idle(cache, progress)
        bisection = Bisection(span, oracle, directory, repo_root, progress, cache)
        log = json_log or directory / "bisect.json"
        try:
            progress(
                f"bisect: {span.good[:12]} (good) .. {span.bad[:12]} (bad), oracle: "
                f"{oracle.describe()}"
            )
            first = bisection.run()
        finally:
            _write_log(log, span, oracle, bisection.steps, time.monotonic() - start)
    _summary(first, bisection.steps, span, log, time.monotonic() - start)
    return 0


def _write_log(path: Path, span: Range, oracle: Oracle, steps: list[Step], seconds: float) -> None:
    data = {
        "tree": str(span.tree),
        "good": span.good,
        "bad": span.bad,
        "oracle": oracle.describe(),
        "seconds": round(seconds, 1),
        "steps": [asdict(s) for s in steps],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(data, indent=1) + "\n")


def _summary(first: Step, steps: list[Step], span: Range, log: Path, seconds: float) -> None:
    booted = [s for s in steps if s.reused_from is None and s.oracle_seconds]
    reused = [s for s in steps if s.reused_from is not None]
    patch = f" (patch {first.patch})" if first.patch else ""
    print(f"first bad commit: {first.commit} {first.subject}{patch}")
    print(
        f"{count(len(steps), 'step')} in {seconds:.0f} s: {len(booted)} booted, "
        f"{len(reused)} decided by module identity (no boot), "
        f"{len([s for s in steps if s.verdict == SKIP])} skipped; log: {log}"
    )
    # A verdict taken by module identity: what the oracle said at the step it came from.
    said = next((s for s in steps if s.commit == first.reused_from and not s.reused_from), first)
    same = f" (the same code as {first.commit[:12]})" if said is not first else ""
    print(f"the oracle at {said.commit[:12]}{same}: {said.why}")
    for line in first.failure:
        print(f"    {line}")
    if first.log:
        print(f"full output: {first.log}")
