"""A build directory carried onto another copy of its source (kernel/transplant.py), with
real `make` and `gcc`: afterwards make remakes exactly what the new copy changed.

The project stands in for kbuild's out-of-tree build: objects in the build directory,
each with a dependency file naming its sources and headers by absolute path (kbuild's
.cmd files do the same), and a `source` link to the tree.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from roadtest.kernel import transplant
from roadtest.kernel.cache import Entry, Layout, main_builds
from roadtest.kernel.runner import Runner

pytestmark = pytest.mark.skipif(
    shutil.which("make") is None or shutil.which("gcc") is None, reason="needs make and gcc"
)

MAKEFILE = """\
all: a.o b.o
%.o: $(SRC)/%.c
\tgcc -MMD -MF .$@.cmd -c -o $@ $<
\t@echo "$@" >> compiled
-include .a.o.cmd .b.o.cmd
"""
OLD_TIME = 1_600_000_000_000_000_000  # 2020: a tarball's files are older than any build


def make(build: Path, src: Path) -> list[str]:
    """Run make in `build` against `src`; the objects it compiled."""
    (build / "compiled").unlink(missing_ok=True)
    subprocess.run(["make", "-s", "-f", "Makefile", f"SRC={src}"], cwd=build, check=True)
    compiled = build / "compiled"
    return sorted(compiled.read_text().split()) if compiled.exists() else []


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[Path, Path]:
    """A source tree (with old times, as unpacked) and its complete build."""
    src = tmp_path / "cache/src/linux"
    src.mkdir(parents=True)
    (src / "h.h").write_text("#define ANSWER 42\n")
    (src / "a.c").write_text('#include "h.h"\nint a(void) { return ANSWER; }\n')
    (src / "b.c").write_text("int b(void) { return 1; }\n")
    for f in src.iterdir():
        os.utime(f, ns=(OLD_TIME, OLD_TIME))
    build = tmp_path / "cache/kernels/k/build"
    build.mkdir(parents=True)
    (build / "Makefile").write_text(MAKEFILE)
    (build / "source").symlink_to(src)
    assert make(build, src) == ["a.o", "b.o"]
    assert make(build, src) == []
    return src, build


def clone_of(src: Path, dest: Path) -> Path:
    """A copy of `src` with new file times, as a checkout makes."""
    shutil.copytree(src, dest)
    for f in dest.iterdir():
        os.utime(f)
    return dest


def transplanted(seeded: tuple[Path, Path], clone: Path, tmp_path: Path) -> Path:
    src, build = seeded
    same = transplant.same_files(src, clone, ["h.h", "a.c", "b.c"])
    transplant.align_times(src, clone, same)
    new_build = tmp_path / "bisect/kernel/build"
    new_build.parent.mkdir(parents=True)
    runner = Runner(tmp_path / "log", lambda _: None)
    assert transplant.copy_build(build, new_build, {src: clone}, runner)
    return new_build


def test_a_clone_with_one_header_changed_remakes_only_what_includes_it(
    seeded: tuple[Path, Path], tmp_path: Path
) -> None:
    clone = clone_of(seeded[0], tmp_path / "bisect/src")
    (clone / "h.h").write_text("#define ANSWER 43\n")
    build = transplanted(seeded, clone, tmp_path)
    # The header is known only from a.o's dependency file: a.o is remade because that
    # file now names the clone's header, and b.o is not, its source being the seed's.
    assert make(build, clone) == ["a.o"]
    assert (build / "source").resolve() == clone.resolve()
    assert seeded[0].as_posix() not in (build / ".a.o.cmd").read_text()


def test_an_unchanged_clone_remakes_nothing_and_the_seed_is_left_as_it_was(
    seeded: tuple[Path, Path], tmp_path: Path
) -> None:
    src, build = seeded
    cmd = (build / ".a.o.cmd").read_bytes()
    clone = clone_of(src, tmp_path / "bisect/src")
    new_build = transplanted(seeded, clone, tmp_path)
    assert make(new_build, clone) == []
    assert (build / ".a.o.cmd").read_bytes() == cmd
    assert make(build, src) == []


def test_a_file_that_differs_is_not_the_same_and_keeps_its_new_time(
    seeded: tuple[Path, Path], tmp_path: Path
) -> None:
    src = seeded[0]
    clone = clone_of(src, tmp_path / "bisect/src")
    (clone / "b.c").write_text("int b(void) { return 2; }\n")
    (clone / "new.c").write_text("int n;\n")
    same = transplant.same_files(src, clone, ["h.h", "a.c", "b.c", "new.c"])
    assert same == ["h.h", "a.c"]
    transplant.align_times(src, clone, same)
    assert (clone / "a.c").stat().st_mtime_ns == OLD_TIME
    assert (clone / "b.c").stat().st_mtime_ns > OLD_TIME


def test_repoint_keeps_file_times_and_rewrites_only_records(tmp_path: Path) -> None:
    build = tmp_path / "build"
    (build / "tools").mkdir(parents=True)
    cmd = build / "tools/.x.o.cmd"
    cmd.write_text("cmd := gcc -I/old/src/include -o /old/build/tools/x.o\n")
    other = build / "notes.txt"
    other.write_text("/old/src\n")
    os.utime(cmd, ns=(OLD_TIME, OLD_TIME))
    moves = {Path("/old/src"): Path("/new/src"), Path("/old/build"): Path("/new/build")}
    assert transplant.repoint(build, moves) == 1
    assert cmd.read_text() == "cmd := gcc -I/new/src/include -o /new/build/tools/x.o\n"
    assert cmd.stat().st_mtime_ns == OLD_TIME
    assert other.read_text() == "/old/src\n"


def write_entry(
    root: Path, name: str, *, target: str = "um", make_vars: tuple[str, ...] = (), when: int
) -> Entry:
    entry = Entry(root / "kernels" / name)
    entry.path.mkdir(parents=True)
    info = {
        "target": target,
        "make_vars": list(make_vars),
        "fragments": ["a.config", "b.config"],
        "own_fragments": [],
    }
    entry.info.write_text(json.dumps(info) + "\n")
    entry.stamp.write_text("{}\n")
    os.utime(entry.stamp, (when, when))
    return entry


def test_the_seeds_are_complete_main_builds_of_the_target_most_recent_first(
    tmp_path: Path,
) -> None:
    older = write_entry(tmp_path, "older", when=1000)
    newer = write_entry(tmp_path, "newer", when=2000)
    write_entry(tmp_path, "x86", target="x86_64", when=3000)
    write_entry(tmp_path, "gcov", make_vars=("CFLAGS_MODULE=$(CFLAGS_GCOV)",), when=3000)
    unfinished = write_entry(tmp_path, "unfinished", when=3000)
    unfinished.stamp.unlink()
    layout = Layout(tmp_path)
    assert main_builds(layout, "um", ["a.config", "b.config"]) == [newer, older]
    assert main_builds(layout, "um", ["a.config"]) == []
