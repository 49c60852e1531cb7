"""A developer's own tree (`--tree`): what counts as a kernel tree, which of our patches
apply to it, and its mirror in the cache, against small fake trees (no kernel build).

What must hold, from the issue's contract: the user's tree is never written; a patch that
does not apply (or is already there) is skipped and said so; the user's own patch must
apply; the mirror holds the tree's files with the patched text, and a second sync of an
unchanged tree changes no file's time (so kbuild rebuilds nothing)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from roadtest.arch.um import UM
from roadtest.arch.x86_64 import X86_64
from roadtest.errors import RoadtestError, UsageError
from roadtest.kernel import source
from roadtest.kernel.build import _our_patch_of
from roadtest.kernel.runner import CommandFailed, Runner
from roadtest.kernel.tree import (
    NEEDED,
    NEEDED_BY_ARCH,
    mirror_tree,
    open_tree,
    plan_patches,
    summarise,
    sync_mirror,
    touched_files,
    tree_argument,
)

DRIVER = "drivers/misc/widget.c"
ORIGINAL = "int widget_init(int);\n\nint widget_probe(void)\n{\n\treturn widget_init(1);\n}\n"


def diff(path: str, old: str, new: str) -> str:
    """A unified diff of one line of `path`, as git format-patch writes it (-p1)."""
    lines = ORIGINAL.splitlines()
    at = lines.index(old)
    before = lines[max(0, at - 3) : at]
    after = lines[at + 1 : at + 4]
    start = at - len(before) + 1
    body = [f" {x}" for x in before] + [f"-{old}", f"+{new}"] + [f" {x}" for x in after]
    count = len(before) + 1 + len(after)
    head = [f"--- a/{path}", f"+++ b/{path}", f"@@ -{start},{count} +{start},{count} @@"]
    return "Subject: a change\n\n---\n" + "\n".join(head + body) + "\n"


FIX = diff(DRIVER, "\treturn widget_init(1);", "\treturn widget_init(2);")
CLASH = diff(DRIVER, "int widget_probe(void)", "int widget_probe(int unused)")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A tree with what open_tree() looks for: a Makefile naming its version, Kconfig, and
    the files roadtest's guests need."""
    src = tmp_path / "linux"
    (src / "drivers/misc").mkdir(parents=True)
    (src / "Makefile").write_text("# SPDX\nVERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 112\n")
    (src / "Kconfig").write_text("mainmenu\n")
    for needed in (*NEEDED, *NEEDED_BY_ARCH["um"]):
        (src / needed.path).parent.mkdir(parents=True, exist_ok=True)
        (src / needed.path).write_text("/* */\n")
    (src / DRIVER).write_text(ORIGINAL)
    (src / "drivers/misc/other.c").write_text("int other;\n")
    os.symlink("other.c", src / "drivers/misc/link.c")
    return src


@pytest.fixture
def runner(tmp_path: Path) -> Runner:
    return Runner(tmp_path / "log", lambda _: None)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def snapshot(top: Path) -> dict[str, tuple[bytes, int]]:
    """Every file's bytes and modification time (symlinks as their target)."""
    found: dict[str, tuple[bytes, int]] = {}
    for path in sorted(top.rglob("*")):
        rel = path.relative_to(top).as_posix()
        if path.is_symlink():
            found[rel] = (os.readlink(path).encode(), 0)
        elif path.is_file():
            found[rel] = (path.read_bytes(), path.stat().st_mtime_ns)
    return found


def test_a_kernel_tree_is_named_by_its_makefile(tree: Path) -> None:
    opened = open_tree(tree, UM)
    assert opened.version == "6.1.112"
    assert opened.dirty is None  # not a git tree
    assert "not a git tree" in opened.describe_line()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda t: (t / "Makefile").unlink(), "not a kernel tree"),
        (lambda t: (t / ".config").write_text("CONFIG_X=y\n"), "configured in place"),
        (lambda t: (t / NEEDED[1].path).unlink(), "too old for roadtest"),
        (lambda t: (t / NEEDED_BY_ARCH["um"][0].path).unlink(), "PCI over virtio"),
    ],
)
def test_a_tree_roadtest_cannot_build_is_one_line(tree: Path, damage: object, message: str) -> None:
    assert callable(damage)
    damage(tree)
    with pytest.raises(RoadtestError, match=message) as err:
        open_tree(tree, UM)
    assert "\n" not in str(err.value)


def test_x86_64_does_not_need_umls_files(tree: Path) -> None:
    (tree / NEEDED_BY_ARCH["um"][0].path).unlink()
    assert open_tree(tree, X86_64).version == "6.1.112"


def test_no_such_directory(tmp_path: Path) -> None:
    with pytest.raises(RoadtestError, match="no such directory"):
        open_tree(tmp_path / "nowhere", UM)


def test_a_git_tree_says_its_commit_and_whether_it_is_dirty(tree: Path) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", "-C", str(tree), *args], check=True, env=env)
    clean = open_tree(tree, UM)
    assert clean.dirty is False and clean.describe and "uncommitted" not in clean.describe_line()
    write(tree / DRIVER, ORIGINAL.replace("(1)", "(3)"))
    dirty = open_tree(tree, UM)
    assert dirty.dirty is True and dirty.describe.endswith("-dirty")
    assert "uncommitted changes" in dirty.describe_line()


def test_touched_files_reads_both_sides_of_a_diff(tmp_path: Path) -> None:
    patch = write(
        tmp_path / "p.patch",
        FIX + "--- /dev/null\n+++ b/drivers/misc/new.c\n@@ -0,0 +1 @@\n+int new;\n",
    )
    assert touched_files(patch) == [DRIVER, "drivers/misc/new.c"]


def test_our_patches_apply_where_they_apply(tree: Path, tmp_path: Path, runner: Runner) -> None:
    series = tmp_path / "kernel-patches"
    fix = write(series / "misc" / "0001-fix.patch", FIX)
    clash = write(series / "misc" / "0002-clash.patch", CLASH.replace("widget_init(1)", "x(9)"))
    before = snapshot(tree)
    outcomes, texts = plan_patches(tree, [fix, clash], [], tmp_path / "scratch", runner)
    assert [o.state for o in outcomes] == ["applied", "does not apply"]
    assert outcomes[1].detail  # patch's own words on why
    assert texts[DRIVER] == ORIGINAL.replace("(1)", "(2)").encode()
    assert summarise(outcomes, series) == ["misc: 0001 applied; 0002 does not apply"]
    assert snapshot(tree) == before  # the user's tree is only read


def test_a_fix_the_tree_has_already_is_skipped(tree: Path, tmp_path: Path, runner: Runner) -> None:
    write(tree / DRIVER, ORIGINAL.replace("(1)", "(2)"))  # upstream took the fix
    fix = write(tmp_path / "misc" / "0001-fix.patch", FIX)
    outcomes, texts = plan_patches(tree, [fix], [], tmp_path / "scratch", runner)
    assert [o.state for o in outcomes] == ["already in the tree"]
    assert texts[DRIVER] == (tree / DRIVER).read_bytes()


def test_the_users_own_patch_must_apply(tree: Path, tmp_path: Path, runner: Runner) -> None:
    mine = write(tmp_path / "mine.patch", CLASH.replace("widget_init(1)", "x(9)"))
    with pytest.raises(RoadtestError, match="your patch .* does not apply"):
        plan_patches(tree, [], [mine], tmp_path / "scratch", runner)


def test_the_mirror_follows_the_tree_and_rewrites_only_what_changed(
    tree: Path, tmp_path: Path, runner: Runner
) -> None:
    root = tmp_path / "cache-src"
    fix = write(tmp_path / "misc" / "0001-fix.patch", FIX)
    opened = open_tree(tree, UM)
    mirror, outcomes, synced = mirror_tree(opened, root, [fix], [], runner)
    assert outcomes[0].state == "applied"
    assert (mirror / DRIVER).read_text() == ORIGINAL.replace("(1)", "(2)")
    assert (mirror / "drivers/misc/other.c").read_text() == "int other;\n"
    assert os.readlink(mirror / "drivers/misc/link.c") == "other.c"
    assert synced.copied > 0 and synced.patched == 1

    first = snapshot(mirror)
    _, _, again = mirror_tree(opened, root, [fix], [], runner)
    assert (again.copied, again.removed, again.patched) == (0, 0, 1)  # still carries it
    assert snapshot(mirror) == first  # same times: kbuild compiles nothing

    write(tree / "drivers/misc/other.c", "int other = 1;\n")
    (tree / "drivers/misc/link.c").unlink()
    _, _, changed = mirror_tree(opened, root, [fix], [], runner)
    assert (changed.copied, changed.removed) == (1, 1)
    assert (mirror / "drivers/misc/other.c").read_text() == "int other = 1;\n"
    assert not (mirror / "drivers/misc/link.c").is_symlink()
    assert snapshot(mirror)[DRIVER] == first[DRIVER]  # the patched file was left alone


def test_the_mirror_leaves_out_the_trees_git_directory(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    write(tree / ".git" / "HEAD", "ref: refs/heads/main\n")
    write(tree / "a.c", "int a;\n")
    sync_mirror(tree, tmp_path / "m", {})
    assert (tmp_path / "m" / "a.c").is_file() and not (tmp_path / "m" / ".git").exists()


def test_a_patch_of_ours_that_breaks_the_build_is_dropped(
    tree: Path, tmp_path: Path, runner: Runner
) -> None:
    fix = write(tmp_path / "misc" / "0001-fix.patch", FIX)
    error = f"{tree}/{DRIVER}:5:9: error: implicit declaration of function 'widget_init'"
    failed = CommandFailed("kernel build failed", error)
    assert failed.error_file() == f"{tree}/{DRIVER}"
    assert _our_patch_of(failed, [fix], {}) == fix
    assert _our_patch_of(failed, [fix], {fix: error}) is None  # dropped already: the tree's
    theirs = CommandFailed("kernel build failed", "drivers/misc/other.c:1:1: error: x")
    assert _our_patch_of(theirs, [fix], {}) is None

    outcomes, texts = plan_patches(tree, [fix], [], tmp_path / "s", runner, {fix: error})
    assert [o.state for o in outcomes] == ["does not build here"]
    assert texts[DRIVER] == ORIGINAL.encode()  # the tree's own text
    assert summarise(outcomes, tmp_path) == ["misc: 0001 does not build here"]


def _tarball(tree: Path, dest: Path) -> Path:
    """`tree` packed as Debian packs linux-source-X.Y: one top-level directory."""
    subprocess.run(
        ["tar", "-cJf", str(dest), "-C", str(tree.parent), tree.name],
        check=True,
        capture_output=True,
    )
    return dest


def test_a_source_tarball_stands_for_the_tree_it_holds(tree: Path, tmp_path: Path) -> None:
    tarball = _tarball(tree, tmp_path / "linux-source-6.1.tar.xz")
    cache = tmp_path / "cache"
    opened = open_tree(tarball, UM, cache_dir=cache)
    assert opened.version == "6.1.112"
    assert opened.path.is_relative_to(cache)
    assert (opened.path / DRIVER).read_text() == ORIGINAL
    assert str(tarball) in opened.describe_line()
    # Unpacked once: a second open finds the same tree, its files as they were.
    before = snapshot(opened.path)
    again = open_tree(tarball, UM, cache_dir=cache)
    assert again.path == opened.path and again.key == opened.key
    assert snapshot(again.path) == before


def test_a_source_tarball_that_is_no_kernel_tree_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    (junk / "src").mkdir(parents=True)
    (junk / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    tarball = _tarball(junk, tmp_path / "junk.tar.xz")
    with pytest.raises(RoadtestError, match="not a kernel tree"):
        open_tree(tarball, UM, cache_dir=tmp_path / "cache")


def test_tree_argument_takes_a_directory_a_tarball_or_a_package(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    usr_src = tmp_path / "usr-src"
    usr_src.mkdir()
    monkeypatch.setattr(source, "PACKAGES_DIR", usr_src)
    tarball = _tarball(tree, usr_src / "linux-source-6.1.tar.xz")
    assert tree_argument(str(tree)) == tree
    assert tree_argument(str(tarball)) == tarball
    assert tree_argument("linux-source-6.1") == tarball
    with pytest.raises(UsageError, match=r"apt-get install linux-source-5\.10"):
        tree_argument("linux-source-5.10")
    with pytest.raises(UsageError, match="no such directory"):
        tree_argument(str(tmp_path / "nowhere"))
    with pytest.raises(UsageError, match="neither a directory nor a kernel source tarball"):
        tree_argument(str(tree / "Makefile"))
