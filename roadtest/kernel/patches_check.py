"""`make patches-check`: every patch of kernel-patches/ is fit to send, and each fix is
proven by its test.

    python -m roadtest.kernel.patches_check [--only NAME ...] [--json FILE]

For each patch of kernel-patches/series (in order: um, i2c, iio, hwmon, rtc):

1. checkpatch: the kernel's own scripts/checkpatch.pl --strict, from the 6.12 tree, with
   --no-signoff (whoever sends a series adds their Signed-off-by:) and UNKNOWN_COMMIT_ID
   ignored (the distribution's tarball has no git history to look the Fixes: ids up in).
2. applies: the series were applied to the distribution's tarball, in order, by the kernel
   build; here every patch is also taken back out (newest first) and applied again
   (oldest first) with --fuzz=0 on a copy of the files the series touch: each applies
   exactly, and leaves them as the build has them.
3. builds: each module source the patch changes (a .c built as a .ko in the cached build,
   or as one object of a module of several, bmp280-core.c of bmp280.ko: that module) is
   built out of tree as it is right after the patch (the later patches of the same file
   taken back out), against the cached build: a module build, seconds, not a kernel build.
   Where no later patch changes the file, that is the source the kernel build compiled.
4. proven: the message's reproducer (its `roadtest run ...` lines) fails with the patch
   taken back out of the module (`--roadtest-module`, pytest's exit status 1) and passes
   with the cached kernel's module (exit status 0). A patch to built-in code (arch/um) cannot
   be taken out by a module: its reproducer must pass, and the revert half is reported as
   not run. With `--suite-ran DIR` (make test, whose driver suite runs every test under
   DIR on the same kernel and fails make test if one fails) a reproducer whose files are
   all under DIR is not run again for the half with the patch. A reproducer that asks for
   the sanitizer kernel (`--roadtest-sanitizers`: a kmemleak or KASAN finding) boots that
   kernel, so the module without the patch is built against its build instead, and its
   half with the patch always runs (the driver suite ran on the main kernel).

The kernel is the main UML kernel (`roadtest build`, built first if the cache has none);
the sanitizer kernel too, for a reproducer that asks for it.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from roadtest.errors import RoadtestError
from roadtest.kernel.build import Kernel
from roadtest.kernel.external import composite_of
from roadtest.kernel.runner import Runner
from roadtest.kernel.source import apply_patch, read_series

CHECKPATCH = "scripts/checkpatch.pl"
CHECKPATCH_OPTIONS = ("--strict", "--no-signoff", "--no-tree", "--ignore", "UNKNOWN_COMMIT_ID")
# pytest's exit statuses: tests failed, and all passed; NONE_PASSED is ours, for a run
# that exits 0 with no test passed (all skipped: a fix proven by nothing).
FAILED, PASSED, NONE_PASSED = 1, 0, -1
USAGE = 4  # a usage error, before anything is built
# `roadtest run`'s ways of asking for the sanitizer kernel (KASAN, kmemleak).
SANITIZER_OPTIONS = ("--roadtest-sanitizers", "--sanitizers")


@dataclass(frozen=True)
class PatchInfo:
    path: Path
    series: str  # the directory of kernel-patches/ it belongs to
    subject: str
    files: tuple[str, ...]  # paths in the kernel tree it changes
    reproducer: tuple[str, ...]  # `roadtest run` arguments, from its message

    @property
    def name(self) -> str:
        return f"{self.series}/{self.path.name}"


@dataclass
class Verdict:
    patch: str
    checkpatch: str = "not run"
    applies: str = "not run"
    builds: str = "not run"
    without: str = "not run"  # the reproducer with the patch taken back out
    with_patch: str = "not run"  # the reproducer on the cached kernel's modules
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def split_message(text: str) -> tuple[str, str]:
    """The commit message (headers' subject and body, up to the `---` line) and the diff."""
    head, sep, diff = text.partition("\n---\n")
    return head, diff if sep else ""


def subject_of(text: str) -> str:
    match = re.search(r"^Subject: (?:\[[^]]*\] )?(.*(?:\n .*)*)", text, re.M)
    return " ".join(match[1].split()) if match else ""


def touched_files(text: str) -> list[str]:
    """The files of the kernel tree a patch changes, in order (its `+++ b/` lines)."""
    _, diff = split_message(text)
    files: list[str] = []
    for line in diff.splitlines():
        if line.startswith("+++ b/"):  # a deletion's is +++ /dev/null: nothing to build
            files.append(line[6:].split("\t")[0].strip())
    return list(dict.fromkeys(files))


def reproducer(text: str) -> list[str]:
    """The arguments of the `roadtest run` command in a patch's message (the lines after
    the message's `roadtest run`, joined at trailing backslashes); [] when it has none."""
    message, _ = split_message(text)
    lines = message.splitlines()
    for index, line in enumerate(lines):
        if not line.strip().startswith("roadtest run "):
            continue
        command = line.strip()
        while command.endswith("\\") and index + 1 < len(lines):
            index += 1
            command = command[:-1].rstrip() + " " + lines[index].strip()
        words = shlex.split(command)
        return words[2:]
    return []


def read_patch(path: Path) -> PatchInfo:
    text = path.read_text()
    return PatchInfo(
        path=path,
        series=path.parent.name,
        subject=subject_of(text),
        files=tuple(touched_files(text)),
        reproducer=tuple(reproducer(text)),
    )


def module_sources(kernel: Kernel, files: Sequence[str]) -> list[str]:
    """The files that are the source of a module of `kernel`'s build (a .c whose .ko the
    build made, or one object of a module of several): the ones a patch can be taken out
    of by building a module."""
    return [
        f
        for f in files
        if f.endswith(".c")
        and (
            (kernel.build_dir / f).with_suffix(".ko").is_file()
            or composite_of(kernel.build_dir, f) is not None
        )
    ]


def module_name(kernel: Kernel, source: str) -> str:
    """The .ko that a module source of `kernel`'s build is built into."""
    composite = composite_of(kernel.build_dir, source)
    return f"{composite.name if composite else Path(source).stem}.ko"


_LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)"', re.M)


def local_headers(source_dir: Path, source: str) -> list[str]:
    """The headers beside `source` that it includes with quotes (lm75.c's lm75.h): the
    module's out-of-tree copy needs them."""
    path = source_dir / source
    parent = Path(source).parent
    found = _LOCAL_INCLUDE.findall(path.read_text(errors="replace"))
    return [str(parent / h) for h in found if (path.parent / h).is_file()]


def module_headers(kernel: Kernel, source: str) -> list[str]:
    """The local headers of a module source and, for one object of a module of several
    (bmp280-core.c of bmp280.ko), those of the module's other sources."""
    composite = composite_of(kernel.build_dir, source)
    sources = composite.sources if composite else (source,)
    found = [
        h
        for s in sources
        if (kernel.source_dir / s).is_file()  # a missing one: the module's copy says so
        for h in local_headers(kernel.source_dir, s)
    ]
    return list(dict.fromkeys(found))


def checkpatch_command(source_dir: Path, patch: Path) -> list[str]:
    return ["perl", str(source_dir / CHECKPATCH), *CHECKPATCH_OPTIONS, str(patch.resolve())]


def checkpatch_problems(output: str) -> list[str]:
    """checkpatch's ERROR/WARNING/CHECK lines (what makes a patch unfit to send)."""
    return [
        line.strip() for line in output.splitlines() if re.match(r"^(ERROR|WARNING|CHECK):", line)
    ]


def later_patches_of(file: str, patches: Sequence[PatchInfo], index: int) -> list[Path]:
    """The patches after patches[index] that change `file`, newest first (to take them back
    out of the fully patched file)."""
    return [p.path for p in reversed(patches[index + 1 :]) if file in p.files]


def check_application(
    patches: Sequence[PatchInfo], source_dir: Path, work: Path, runner: Runner
) -> dict[str, str]:
    """Take every patch back out of a copy of the files they change (newest first), then
    apply them again (oldest first), all with --fuzz=0: "ok" for each patch that does
    both exactly, and the copy must end as the patched tree has it."""
    tree = work / "apply"
    shutil.rmtree(tree, ignore_errors=True)
    files = list(dict.fromkeys(f for p in patches for f in p.files))
    for rel in files:
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source_dir / rel, tree / rel)
    strict = ("--fuzz=0", "--no-backup-if-mismatch", "--reject-file=-")
    verdicts = {p.name: "ok" for p in patches}
    for patch in reversed(patches):
        failure = apply_patch(runner, patch.path, tree, "-R", *strict)
        if failure is not None:
            verdicts[patch.name] = f"not in the built tree as it is: {failure}"
            return verdicts
    for patch in patches:
        failure = apply_patch(runner, patch.path, tree, *strict)
        if failure is not None:
            verdicts[patch.name] = f"does not apply with --fuzz=0: {failure}"
            return verdicts
    for rel in files:
        if not filecmp.cmp(tree / rel, source_dir / rel, shallow=False):
            for patch in patches:
                if rel in patch.files:
                    verdicts[patch.name] = f"{rel} differs from the built tree's"
    return verdicts


BuildModule = Callable[[Kernel, str, Path, Sequence[Path], Sequence[str]], Path]
RunTests = Callable[[Sequence[str], Path], int]


def _build_module(
    kernel: Kernel, source: str, workdir: Path, reverse: Sequence[Path], extra: Sequence[str]
) -> Path:
    from roadtest.kernel.external import build_external_module

    return build_external_module(
        kernel, source, workdir, reverse=reverse, extra=extra, progress=lambda _: None
    )


def _run_tests(args: Sequence[str], log: Path) -> int:
    command = [sys.executable, "-m", "roadtest", "run", "-q", *args]
    with log.open("w") as out:
        out.write(shlex.join(command) + "\n")
        out.flush()
        status = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False)
    return passed_or_not(status.returncode, log.read_text(errors="replace"))


def on_sanitizers(reproducer: Sequence[str]) -> bool:
    """Whether a reproducer boots the sanitizer kernel, not the main one."""
    return any(arg in SANITIZER_OPTIONS for arg in reproducer)


def passed_or_not(status: int, output: str) -> int:
    """pytest's exit status, but NONE_PASSED for a 0 whose summary has no test passed."""
    lines = [line for line in output.splitlines() if line.strip()]
    if status == PASSED and not (lines and re.search(r"\b\d+ passed\b", lines[-1])):
        return NONE_PASSED
    return status


def check_patch(
    patches: Sequence[PatchInfo],
    index: int,
    kernel: Kernel,
    work: Path,
    applies: str,
    *,
    build_module: BuildModule = _build_module,
    run_tests: RunTests = _run_tests,
    checkpatch: Callable[[Path], tuple[int, str]] | None = None,
    suite_ran: Path | None = None,
    sanitizer_kernel: Callable[[], Kernel] | None = None,
) -> Verdict:
    """`sanitizer_kernel`: the sanitizer kernel's build, for a reproducer that boots it."""
    patch = patches[index]
    verdict = Verdict(patch.name)
    began = time.monotonic()
    workdir = work / f"{index + 1:02d}-{patch.path.stem}"
    workdir.mkdir(parents=True, exist_ok=True)

    # 1. checkpatch
    status, output = (checkpatch or _checkpatch(kernel.source_dir))(patch.path)
    found = checkpatch_problems(output)
    verdict.checkpatch = "ok" if status == 0 and not found else "; ".join(found) or "failed"
    if verdict.checkpatch != "ok":
        verdict.problems.append(f"checkpatch: {verdict.checkpatch}")

    # 2. applies (checked for the whole series at once)
    verdict.applies = applies
    if applies != "ok":
        verdict.problems.append(f"applies: {applies}")

    # 3. builds: each module it changes, as it is right after this patch
    modules = module_sources(kernel, patch.files)
    built_in = [f for f in patch.files if f.endswith(".c") and f not in modules]
    extras = {m: module_headers(kernel, m) for m in modules}
    try:
        for source in modules:
            later = later_patches_of(source, patches, index)
            if not later:
                continue  # as the patch left it is as the kernel build compiled it
            build_module(
                kernel, source, workdir / "after" / Path(source).stem, later, extras[source]
            )
        verdict.builds = (
            f"ok ({', '.join(module_name(kernel, m) for m in modules)})"
            if modules
            else "built in: the kernel build compiled it"
        )
    except RoadtestError as err:
        verdict.builds = f"failed: {err}"
        verdict.problems.append(f"builds: {err}")

    # 4. proven: the reproducer fails without the patch and passes with it
    if not patch.reproducer:
        verdict.problems.append("proven: the message names no `roadtest run` reproducer")
        verdict.seconds = time.monotonic() - began
        return verdict
    sanitizers = on_sanitizers(patch.reproducer)
    if modules and verdict.builds.startswith("ok"):
        try:
            if sanitizers and sanitizer_kernel is None:
                raise RoadtestError("its reproducer boots the sanitizer kernel, not given")
            against = sanitizer_kernel() if sanitizers and sanitizer_kernel else kernel
            kos, before = [], False
            for source in modules:
                try:
                    ko = build_module(
                        against,
                        source,
                        workdir / "without" / Path(source).stem,
                        [patch.path],
                        extras[source],
                    )
                except RoadtestError:
                    # A later patch of the file overlaps it (its context is this patch's
                    # lines): the module as it was right before the patch, without them too.
                    later = later_patches_of(source, patches, index)
                    if not later:
                        raise
                    ko = build_module(
                        against,
                        source,
                        workdir / "before" / Path(source).stem,
                        [*later, patch.path],
                        extras[source],
                    )
                    before = True
                kos.append(ko)
        except RoadtestError as err:
            verdict.without = f"cannot take it back out: {err}"
            verdict.problems.append(f"without: {err}")
        else:
            args = [f"--roadtest-module={ko}" for ko in kos] + list(patch.reproducer)
            log = workdir / "without.log"
            status = run_tests(args, log)
            verdict.without = (
                "fails, as it must"
                if status == FAILED
                else f"exit status {status}, not {FAILED} (tests failed); log: {log}"
            )
            if before:
                verdict.without += (
                    " (the module as it was before the patch: a later patch of the file "
                    "overlaps it, so it cannot be taken out alone)"
                )
            if status != FAILED:
                verdict.problems.append(f"without: {verdict.without}")
    elif built_in:
        verdict.without = "not run: built-in code, a module cannot take it back out"
    if suite_ran is not None and not sanitizers and in_suite(patch.reproducer, suite_ran):
        verdict.with_patch = f"passes in the run of {suite_ran} (not run again)"
        verdict.seconds = time.monotonic() - began
        return verdict
    status = run_tests(list(patch.reproducer), workdir / "with.log")
    verdict.with_patch = (
        "passes"
        if status == PASSED
        else f"no test passed (skipped?); log: {workdir / 'with.log'}"
        if status == NONE_PASSED
        else f"exit status {status}, not {PASSED}; log: {workdir / 'with.log'}"
    )
    if status != PASSED:
        verdict.problems.append(f"with: {verdict.with_patch}")
    verdict.seconds = time.monotonic() - began
    return verdict


def in_suite(reproducer: Sequence[str], suite: Path) -> bool:
    """Whether every test file or node a reproducer names is under `suite` (relative
    paths, as the messages give them; options such as `-k` select among them)."""
    files = [Path(arg.split("::", 1)[0]) for arg in reproducer if not arg.startswith("-")]
    selectors = {"-k", "-m"}
    values = {reproducer[i + 1] for i, arg in enumerate(reproducer[:-1]) if arg in selectors}
    files = [f for f in files if str(f) not in values]
    return bool(files) and all(f.is_relative_to(suite) for f in files)


def _checkpatch(source_dir: Path) -> Callable[[Path], tuple[int, str]]:
    def run(patch: Path) -> tuple[int, str]:
        result = subprocess.run(
            checkpatch_command(source_dir, patch),
            cwd=source_dir,
            capture_output=True,
            text=True,
            check=False,
        )
        return result.returncode, result.stdout + result.stderr

    return run


def report(verdicts: Sequence[Verdict], seconds: float) -> str:
    lines = []
    for v in verdicts:
        mark = "ok  " if v.ok else "FAIL"
        lines.append(f"{mark} {v.patch} ({v.seconds:.0f} s)")
        lines.append(f"       checkpatch: {v.checkpatch}")
        lines.append(f"       applies:    {v.applies}")
        lines.append(f"       builds:     {v.builds}")
        lines.append(f"       without it: {v.without}")
        lines.append(f"       with it:    {v.with_patch}")
    failed = sum(not v.ok for v in verdicts)
    lines.append(
        f"patches-check: {len(verdicts)} patches, {failed} failed, {seconds:.0f} s"
        if failed
        else f"patches-check: {len(verdicts)} patches ok, {seconds:.0f} s"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="patches-check", description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", default=[], help="a patch's name (or part)")
    parser.add_argument("--json", type=Path, help="write the verdicts to FILE")
    parser.add_argument("--keep", type=Path, help="work in DIR and keep it (default: a temp dir)")
    parser.add_argument(
        "--suite-ran",
        type=Path,
        metavar="DIR",
        help="the tests under DIR ran on this kernel and must pass (make test's driver "
        "suite): a reproducer all under DIR is not run again with the patch",
    )
    args = parser.parse_args(argv)

    from roadtest.arch.um import UM
    from roadtest.checkout import repo_root
    from roadtest.kernel import ensure_kernel
    from roadtest.kernel.variants import SANITIZERS

    began = time.monotonic()
    try:
        repo = repo_root()
        patches = [read_patch(p) for p in read_series(repo)]
        unmatched = [o for o in args.only if not any(o in p.name for p in patches)]
        if unmatched:
            print(
                f"patches-check: --only {unmatched[0]!r} names no patch of kernel-patches/series",
                file=sys.stderr,
            )
            return USAGE
        kernel = ensure_kernel(repo)
        sanitizer_builds: list[Kernel] = []

        def sanitizer_kernel() -> Kernel:
            if not sanitizer_builds:  # built or found once, for the first patch that asks
                sanitizer_builds.append(SANITIZERS.ensure(repo, UM))
            return sanitizer_builds[0]

        work = args.keep or Path(tempfile.mkdtemp(prefix="roadtest-patches-check-"))
        work.mkdir(parents=True, exist_ok=True)
        runner = Runner(work / "patch.log", lambda _: None)
        applies = check_application(patches, kernel.source_dir, work, runner)
        verdicts = []
        for index, patch in enumerate(patches):
            if args.only and not any(o in patch.name for o in args.only):
                continue
            verdict = check_patch(
                patches,
                index,
                kernel,
                work,
                applies[patch.name],
                suite_ran=args.suite_ran,
                sanitizer_kernel=sanitizer_kernel,
            )
            print(report([verdict], verdict.seconds).rsplit("\n", 1)[0], flush=True)
            verdicts.append(verdict)
    except RoadtestError as err:
        print(f"patches-check: {err}", file=sys.stderr)
        return 2
    seconds = time.monotonic() - began
    print(report(verdicts, seconds).rsplit("\n", 1)[1])
    if args.json:
        args.json.write_text(json.dumps([asdict(v) for v in verdicts], indent=1) + "\n")
    if not args.keep and all(v.ok for v in verdicts):
        shutil.rmtree(work, ignore_errors=True)
    return 0 if verdicts and all(v.ok for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
