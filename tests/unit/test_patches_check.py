"""make patches-check's logic, without a guest or a kernel build: reading the patches'
files and reproducers, the application check with the real `patch`, and the verdicts of
check_patch with its builds and test runs faked."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from roadtest.errors import RoadtestError
from roadtest.kernel.build import Kernel
from roadtest.kernel.patches_check import (
    FAILED,
    NONE_PASSED,
    PASSED,
    BuildModule,
    PatchInfo,
    Verdict,
    check_application,
    check_patch,
    checkpatch_problems,
    in_suite,
    later_patches_of,
    local_headers,
    on_sanitizers,
    passed_or_not,
    read_patch,
    report,
    reproducer,
    subject_of,
    touched_files,
)
from roadtest.kernel.runner import Runner
from roadtest.kernel.source import read_series

REPO = Path(__file__).resolve().parents[2]

PATCH = """From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
Subject: [PATCH 2/3] drv: foo: Make b two, a rather long subject that git
 wraps

What breaks. To reproduce:

  roadtest run tests/drivers/test_foo.py \\
    -k 'test_b and not slow'

Fixes: 0123456789ab ("drv: foo: Add it")
---
 drivers/foo/foo.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/drivers/foo/foo.c b/drivers/foo/foo.c
index 1111111..2222222 100644
--- a/drivers/foo/foo.c
+++ b/drivers/foo/foo.c
@@ -1,3 +1,3 @@
 int a = 1;
-int b = 1;
+int b = 2;
 int c = 1;
--
2.39.5
"""

PATCH_C = PATCH.replace("int b = 1;", "int b = 2;", 1).replace("+int b = 2;", "+int b = 3;")


def test_reading_a_patch() -> None:
    assert subject_of(PATCH) == "drv: foo: Make b two, a rather long subject that git wraps"
    assert touched_files(PATCH) == ["drivers/foo/foo.c"]
    assert reproducer(PATCH) == ["tests/drivers/test_foo.py", "-k", "test_b and not slow"]
    assert reproducer(PATCH.replace("roadtest run", "run")) == []


def test_every_patch_of_the_repository_names_its_reproducer() -> None:
    patches = [read_patch(p) for p in read_series(REPO)]
    assert patches
    for patch in patches:
        assert patch.reproducer, patch.name
        # A test file, or one test of it (file.py::test_name).
        assert (REPO / patch.reproducer[0].split("::", 1)[0]).is_file(), patch.reproducer
        assert patch.files and patch.subject


def test_checkpatch_problems() -> None:
    out = (
        "WARNING: Prefer a maximum 75 chars per line\n#12: \nCHECK: Prefer using the BIT macro\n"
        "total: 0 errors, 1 warnings, 1 checks, 5 lines checked\n"
    )
    assert checkpatch_problems(out) == [
        "WARNING: Prefer a maximum 75 chars per line",
        "CHECK: Prefer using the BIT macro",
    ]
    assert checkpatch_problems("total: 0 errors, 0 warnings, 0 checks\n") == []


def info(name: str, *files: str, reproduce: Sequence[str] = ("t.py",)) -> PatchInfo:
    return PatchInfo(Path(f"/p/{name}"), "iio", name, tuple(files), tuple(reproduce))


def test_later_patches_of_a_file_newest_first() -> None:
    patches = [info("1", "a.c"), info("2", "b.c"), info("3", "a.c", "b.c"), info("4", "a.c")]
    assert later_patches_of("a.c", patches, 0) == [Path("/p/4"), Path("/p/3")]
    assert later_patches_of("b.c", patches, 1) == [Path("/p/3")]
    assert later_patches_of("a.c", patches, 3) == []


def test_local_headers(tmp_path: Path) -> None:
    (tmp_path / "drivers/hwmon").mkdir(parents=True)
    (tmp_path / "drivers/hwmon/lm75.h").write_text("")
    (tmp_path / "drivers/hwmon/lm75.c").write_text(
        '#include <linux/i2c.h>\n#include "lm75.h"\n#include "gone.h"\n'
    )
    assert local_headers(tmp_path, "drivers/hwmon/lm75.c") == ["drivers/hwmon/lm75.h"]


def series(tmp_path: Path) -> tuple[list[PatchInfo], Path]:
    """Two patches of drivers/foo/foo.c, and the tree as the build has them applied."""
    (tmp_path / "p").mkdir()
    (tmp_path / "p/0001.patch").write_text(PATCH)
    (tmp_path / "p/0002.patch").write_text(PATCH_C)
    tree = tmp_path / "tree/drivers/foo"
    tree.mkdir(parents=True)
    (tree / "foo.c").write_text("int a = 1;\nint b = 3;\nint c = 1;\n")
    return [read_patch(tmp_path / "p/0001.patch"), read_patch(tmp_path / "p/0002.patch")], (
        tmp_path / "tree"
    )


@pytest.mark.skipif(shutil.which("patch") is None, reason="needs patch(1)")
def test_application_check(tmp_path: Path) -> None:
    patches, tree = series(tmp_path)
    runner = Runner(tmp_path / "log", lambda _: None)
    assert set(check_application(patches, tree, tmp_path, runner).values()) == {"ok"}
    # A tree the series does not describe: the newest patch cannot be taken back out.
    (tree / "drivers/foo/foo.c").write_text("int a = 1;\nint b = 9;\nint c = 1;\n")
    verdicts = check_application(patches, tree, tmp_path, runner)
    assert verdicts["p/0002.patch"].startswith("not in the built tree as it is")


class Fakes:
    def __init__(self, tmp_path: Path, without: int = FAILED, with_patch: int = PASSED) -> None:
        self.tmp_path = tmp_path
        self.statuses = {"without": without, "with": with_patch}
        self.builds: list[tuple[str, list[str]]] = []
        self.extras: list[list[str]] = []
        self.runs: list[list[str]] = []
        build = tmp_path / "build"
        (build / "drivers/foo").mkdir(parents=True)
        (build / "drivers/foo/foo.ko").write_text("")
        self.kernel = cast(Kernel, SimpleNamespace(source_dir=tmp_path / "tree", build_dir=build))

    def build_module(
        self,
        kernel: Kernel,
        source: str,
        workdir: Path,
        reverse: Sequence[Path],
        extra: Sequence[str],
    ) -> Path:
        self.builds.append((workdir.parent.name, [p.name for p in reverse]))
        self.extras.append(list(extra))
        return workdir / "foo.ko"

    def run_tests(self, args: Sequence[str], log: Path) -> int:
        self.runs.append(list(args))
        return self.statuses[log.stem]

    def check(
        self,
        patches: list[PatchInfo],
        index: int,
        clean: bool = True,
        build_module: BuildModule | None = None,
    ) -> Verdict:
        return check_patch(
            patches,
            index,
            self.kernel,
            self.tmp_path / "work",
            "ok",
            build_module=build_module or self.build_module,
            run_tests=self.run_tests,
            checkpatch=lambda _: (0, "total: 0 errors\n") if clean else (1, "ERROR: trailing\n"),
        )


def test_a_fix_proven_by_its_test(tmp_path: Path) -> None:
    patches, _ = series(tmp_path)
    fakes = Fakes(tmp_path)
    verdict = fakes.check(patches, 0)
    assert verdict.ok, verdict.problems
    # Built as it is after 0001 (0002 taken back out), then without 0001 alone.
    assert fakes.builds == [("after", ["0002.patch"]), ("without", ["0001.patch"])]
    ko = tmp_path / "work/01-0001/without/foo/foo.ko"
    assert fakes.runs == [
        [f"--roadtest-module={ko}", "tests/drivers/test_foo.py", "-k", "test_b and not slow"],
        ["tests/drivers/test_foo.py", "-k", "test_b and not slow"],
    ]
    assert report([verdict], 1.0).splitlines()[0] == "ok   p/0001.patch (0 s)"


def test_a_fix_a_later_patch_overlaps_is_proven_on_the_module_before_it(tmp_path: Path) -> None:
    patches, _ = series(tmp_path)
    fakes = Fakes(tmp_path)
    built = fakes.build_module

    def overlapped(
        kernel: Kernel, source: str, workdir: Path, reverse: Sequence[Path], extra: Sequence[str]
    ) -> Path:
        if [p.name for p in reverse] == ["0001.patch"]:
            raise RoadtestError("0001.patch cannot be taken back out of drivers/foo/foo.c")
        return built(kernel, source, workdir, reverse, extra)

    verdict = fakes.check(patches, 0, build_module=overlapped)
    assert verdict.ok, verdict.problems
    assert fakes.builds[-1] == ("before", ["0002.patch", "0001.patch"])
    assert verdict.without.startswith("fails, as it must (the module as it was before")
    ko = tmp_path / "work/01-0001/before/foo/foo.ko"
    assert fakes.runs[0][0] == f"--roadtest-module={ko}"


def test_a_test_that_passes_without_the_fix_proves_nothing(tmp_path: Path) -> None:
    patches, _ = series(tmp_path)
    verdict = Fakes(tmp_path, without=PASSED).check(patches, 1)
    problems = verdict.problems
    assert len(problems) == 1 and problems[0].startswith("without: exit status 0, not 1")


def test_a_failing_test_with_the_fix_and_checkpatch_findings(tmp_path: Path) -> None:
    patches, _ = series(tmp_path)
    verdict = Fakes(tmp_path, with_patch=FAILED).check(patches, 1, clean=False)
    problems = verdict.problems
    assert problems[0] == "checkpatch: ERROR: trailing"
    assert problems[1].startswith("with: exit status 1, not 0")


def test_built_in_code_and_a_missing_reproducer(tmp_path: Path) -> None:
    series(tmp_path)
    fakes = Fakes(tmp_path)
    built_in = [info("1", "arch/um/x.c")]
    verdict = fakes.check(built_in, 0)
    assert verdict.ok
    assert verdict.without.startswith("not run: built-in code")
    assert fakes.builds == [] and fakes.runs == [["t.py"]]
    verdict = fakes.check([info("1", "drivers/foo/foo.c", reproduce=())], 0)
    assert verdict.problems == ["proven: the message names no `roadtest run` reproducer"]


def test_a_module_that_does_not_build(tmp_path: Path) -> None:
    patches, _ = series(tmp_path)
    fakes = Fakes(tmp_path)

    def broken(*args: object) -> Path:
        raise RoadtestError("building foo.ko out of tree failed")

    verdict = fakes.check(patches, 0, build_module=broken)
    assert verdict.problems[0] == "builds: building foo.ko out of tree failed"
    assert verdict.without == "not run"  # nothing to take the fix out of


def test_a_run_where_nothing_passed_proves_nothing() -> None:
    assert passed_or_not(PASSED, "x\n1 passed, 1 warning in 0.4s\n") == PASSED
    assert passed_or_not(PASSED, "x\n1 skipped in 0.4s\n\n") == NONE_PASSED
    assert passed_or_not(FAILED, "1 failed, 2 passed in 1s\n") == FAILED


def test_a_reproducer_the_driver_suite_ran_is_not_run_again_with_the_fix(tmp_path: Path) -> None:
    patches, _ = series(tmp_path)
    fakes = Fakes(tmp_path)
    verdict = check_patch(
        patches,
        0,
        fakes.kernel,
        tmp_path / "work",
        "ok",
        build_module=fakes.build_module,
        run_tests=fakes.run_tests,
        checkpatch=lambda _: (0, ""),
        suite_ran=Path("tests/drivers"),
    )
    assert verdict.ok, verdict.problems
    assert verdict.with_patch == "passes in the run of tests/drivers (not run again)"
    (without,) = fakes.runs  # the half without the fix still runs
    assert without[0].startswith("--roadtest-module=")


def test_a_reproducer_on_the_sanitizer_kernel(tmp_path: Path) -> None:
    """A kmemleak or KASAN reproducer boots the sanitizer kernel: the module without the fix
    is built against that kernel's build, and the half with the fix runs although the
    driver suite (on the main kernel) ran its test file."""
    patches, _ = series(tmp_path)
    fakes = Fakes(tmp_path)
    sanitizer = cast(Kernel, SimpleNamespace(source_dir=tmp_path / "tree", build_dir=tmp_path))
    against: list[tuple[str, Kernel]] = []

    def build_module(
        kernel: Kernel, source: str, workdir: Path, reverse: Sequence[Path], extra: Sequence[str]
    ) -> Path:
        against.append((workdir.parent.name, kernel))
        return fakes.build_module(kernel, source, workdir, reverse, extra)

    leak = dataclasses.replace(
        patches[0], reproducer=("tests/drivers/test_foo.py", "--roadtest-sanitizers")
    )
    verdict = check_patch(
        [leak, patches[1]],
        0,
        fakes.kernel,
        tmp_path / "work",
        "ok",
        build_module=build_module,
        run_tests=fakes.run_tests,
        checkpatch=lambda _: (0, ""),
        suite_ran=Path("tests/drivers"),
        sanitizer_kernel=lambda: sanitizer,
    )
    assert verdict.ok, verdict.problems
    assert against == [("after", fakes.kernel), ("without", sanitizer)]
    assert fakes.runs[1] == ["tests/drivers/test_foo.py", "--roadtest-sanitizers"]
    # Without the sanitizer kernel to build against, the fix cannot be taken out.
    verdict = check_patch(
        [leak, patches[1]],
        0,
        fakes.kernel,
        tmp_path / "work",
        "ok",
        build_module=build_module,
        run_tests=fakes.run_tests,
        checkpatch=lambda _: (0, ""),
    )
    assert verdict.without.startswith("cannot take it back out: its reproducer boots")
    assert on_sanitizers(["--sanitizers", "t.py"]) and not on_sanitizers(["t.py"])


def test_what_counts_as_run_by_the_suite() -> None:
    drivers = Path("tests/drivers")
    assert in_suite(["tests/drivers/rtc/test_x.py", "-k", "tests/guest"], drivers)
    assert in_suite(["tests/drivers/a.py::test_b", "tests/drivers/c.py"], drivers)
    assert not in_suite(["tests/drivers/a.py", "tests/guest/test_fpu_state.py"], drivers)
    assert not in_suite(["-k", "x"], drivers)  # names no test file


def test_a_patch_to_one_object_of_a_module_of_several(tmp_path: Path) -> None:
    """bmp280-core.c is one of bmp280.ko's objects: there is no bmp280-core.ko, but the
    module is taken out and back in like any other (kbuild's bmp280.mod names it)."""
    patches, _ = series(tmp_path)
    fakes = Fakes(tmp_path)
    (fakes.kernel.build_dir / "drivers/foo/foo.ko").unlink()
    (fakes.kernel.build_dir / "drivers/foo/foos.mod").write_text(
        "drivers/foo/foo.o drivers/foo/bar.o\n"
    )
    (tmp_path / "tree/drivers/foo/bar.c").write_text('#include "bar.h"\n')
    (tmp_path / "tree/drivers/foo/bar.h").write_text("")
    verdict = fakes.check(patches, 0)
    assert verdict.ok, verdict.problems
    assert verdict.builds == "ok (foos.ko)"
    assert verdict.without == "fails, as it must"
    assert fakes.builds == [("after", ["0002.patch"]), ("without", ["0001.patch"])]
    # The other object's local header goes with the copy too.
    assert fakes.extras == [["drivers/foo/bar.h"], ["drivers/foo/bar.h"]]


def test_the_last_patch_of_a_file_is_not_built_again_as_the_kernel_built_it(
    tmp_path: Path,
) -> None:
    patches, _ = series(tmp_path)
    fakes = Fakes(tmp_path)
    verdict = fakes.check(patches, 1)  # 0002: no later patch changes foo.c
    assert verdict.ok, verdict.problems
    assert verdict.builds == "ok (foo.ko)"
    assert fakes.builds == [("without", ["0002.patch"])]


def test_only_a_name_of_no_patch_is_a_usage_error_in_one_line() -> None:
    """Before any kernel is looked for or built."""
    done = subprocess.run(
        [sys.executable, "-m", "roadtest.kernel.patches_check", "--only", "no-such-fix"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ROADTEST_CACHE": "/nonexistent/cache"},
    )
    assert done.returncode == 4
    assert done.stderr.splitlines() == [
        "patches-check: --only 'no-such-fix' names no patch of kernel-patches/series"
    ]
    assert done.stdout == ""
