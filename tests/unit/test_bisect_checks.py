"""`roadtest bisect` without a guest: its one-line errors, the histories it makes, and what a
step rebuilds. The bisection itself, on a real regression, is tests/guest/test_bisect.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from roadtest.bisect import git
from roadtest.bisect.builder import StepBuilder
from roadtest.bisect.history import distribution_repo, series_history
from roadtest.errors import RoadtestError
from roadtest.kernel.runner import Runner
from roadtest.kernel.source import SourceIdentity

ROADTEST = Path(sys.executable).with_name("roadtest")
ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
}


def sh(cwd: Path, *args: str) -> str:
    return subprocess.run(
        args, cwd=cwd, check=True, capture_output=True, text=True, env={**os.environ, **ENV}
    ).stdout.strip()


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-qm", message)
    return sh(repo, "git", "rev-parse", "HEAD")


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, list[str]]:
    """A small repository shaped like a kernel tree, with three commits."""
    repo = tmp_path / "linux"
    repo.mkdir()
    sh(repo, "git", "init", "-q")
    shas = [
        commit(repo, {"drivers/a/a.c": "int a;\n", "include/x.h": "\n"}, "first"),
        commit(repo, {"drivers/a/a.c": "int a = 1;\n"}, "second"),
        commit(repo, {"drivers/b/b.c": "int b;\n"}, "third"),
    ]
    return repo, shas


def bisect(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROADTEST), "bisect", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "ROADTEST_CACHE": str(tmp_path / "cache")},
        check=False,
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_bad_revisions_and_trees_are_one_line_each(
    tmp_path: Path, tree: tuple[Path, list[str]]
) -> None:
    repo, shas = tree
    test = "tests/drivers/iio/light/test_opt3001.py"
    cases = {
        ("--tree", str(tmp_path), "--good", "a", "--bad", "b", "--", test): "not a git repository",
        ("--tree", str(repo), "--good", "v9.9", "--bad", "HEAD", "--", test): "no such revision",
        ("--tree", str(repo), "--good", shas[2], "--bad", shas[0], "--", test): "not an ancestor",
        ("--tree", str(repo), "--good", "HEAD", "--bad", "HEAD", "--", test): "same commit",
        ("--tree", str(repo), "--good", shas[0]): "give the oracle",
        ("--tree", str(repo), "--bad", "HEAD", "--", test): "needs --good and --bad",
    }
    for args, expected in cases.items():
        assert expected in one_line_error(bisect(tmp_path, *args)), args
    assert not (tmp_path / "cache" / "bisect").exists()  # nothing made before the checks


def test_a_dirty_tree_is_refused_and_left_alone(
    tmp_path: Path, tree: tuple[Path, list[str]]
) -> None:
    repo, shas = tree
    (repo / "drivers/a/a.c").write_text("int a = 2;\n")
    before = sh(repo, "git", "status", "--porcelain")
    line = one_line_error(
        bisect(tmp_path, "--tree", str(repo), "--good", shas[0], "--bad", "HEAD", "--", "t.py")
    )
    assert "dirty" in line and "drivers/a/a.c" in line
    assert sh(repo, "git", "status", "--porcelain") == before
    assert sh(repo, "git", "rev-parse", "HEAD") == shas[2]


def test_one_mode_at_a_time(tmp_path: Path, tree: tuple[Path, list[str]]) -> None:
    result = bisect(tmp_path, "--tree", str(tree[0]), "--series", "s", "--", "t.py")
    assert result.returncode == 4 and "not allowed with argument" in result.stderr


def _tarball(tmp_path: Path) -> SourceIdentity:
    top = tmp_path / "src" / "linux-source-9.9"
    (top / "drivers").mkdir(parents=True)
    (top / "drivers" / "a.c").write_text("int a;\n")
    (top / ".gitignore").write_text("/*\n")  # as Debian's: ignores its whole top level
    path = tmp_path / "linux-source-9.9.tar.xz"
    with tarfile.open(path, "w:xz") as tar:
        tar.add(top, arcname=top.name)
    st = path.stat()
    return SourceIdentity(path, st.st_size, st.st_mtime_ns, None)


def _patch(path: Path, subject: str, old: str, new: str) -> Path:
    path.write_text(
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        "From: A <a@example.org>\n"
        f"Subject: [PATCH 1/2] {subject[:30]}\n {subject[30:]}\n\n"
        "---\n"
        "diff --git a/drivers/a.c b/drivers/a.c\n"
        "--- a/drivers/a.c\n+++ b/drivers/a.c\n"
        f"@@ -1 +1 @@\n-{old}\n+{new}\n"
    )
    return path


def test_a_series_is_one_commit_per_patch_on_the_distribution(tmp_path: Path) -> None:
    identity = _tarball(tmp_path)
    patches = [
        _patch(
            tmp_path / "1.patch", "drivers: a: Give a its first value, one", "int a;", "int a = 1;"
        ),
        _patch(
            tmp_path / "2.patch",
            "drivers: a: Give a its second value, two",
            "int a = 1;",
            "int a = 2;",
        ),
    ]
    repo = distribution_repo(tmp_path / "cache", identity, lambda _: None)
    history = series_history(repo, patches, lambda _: None)
    assert [p for _, p in history.commits] == patches
    assert history.commit_after(0) == history.base
    assert history.patch_of(history.commit_after(2)) == patches[1]
    tip = history.commit_after(2)
    show = ["git", f"--git-dir={repo}", "show"]
    assert sh(tmp_path, *show, f"{tip}:drivers/a.c") == "int a = 2;"
    assert sh(tmp_path, *show, f"{history.base}:.gitignore") == "/*"  # the whole tarball
    subject = sh(tmp_path, "git", f"--git-dir={repo}", "log", "-1", "--format=%s", tip)
    assert subject == "drivers: a: Give a its second value, two"  # folded Subject, no [PATCH]
    # Made again elsewhere: the same commits (fixed author and dates).
    again = series_history(
        distribution_repo(tmp_path / "cache2", identity, lambda _: None), patches, lambda _: None
    )
    assert again.commits[1][0] == tip and again.base == history.base


def test_a_patch_that_does_not_apply_is_named(tmp_path: Path) -> None:
    identity = _tarball(tmp_path)
    bad = _patch(tmp_path / "bad.patch", "drivers: a: Change what is not there", "int b;", "int c;")
    repo = distribution_repo(tmp_path / "cache", identity, lambda _: None)
    with pytest.raises(RoadtestError, match="bad.patch does not apply"):
        series_history(repo, [bad], lambda _: None)


def _fake_build(directory: Path, clone: Path, commit_id: str, config: str) -> None:
    """A kernel build as StepBuilder leaves it, whose build dir lists two modules."""
    kernel = directory / "kernel"
    modules = kernel / "modules" / "lib" / "modules" / "9.9.0"
    modules.mkdir(parents=True)
    (modules / "modules.dep").write_text("")
    build = kernel / "build"
    (build / "drivers" / "a").mkdir(parents=True)
    (build / "drivers" / "b").mkdir(parents=True)
    (build / "vmlinux").write_text("")
    (build / ".config").write_text("")
    (build / "drivers" / "a" / "mod-a.mod").write_text("drivers/a/a.o\n")
    (build / "drivers" / "b" / "b.mod").write_text("drivers/b/b.o\n")
    stamp = {
        "key": "bisect",
        "commit": commit_id,
        "config": config,
        "release": "9.9.0",
        "source_dir": str(clone),
    }
    (kernel / "stamp.json").write_text(json.dumps(stamp))


def test_a_step_builds_the_modules_under_test_alone_when_only_they_changed(
    tmp_path: Path, tree: tuple[Path, list[str]]
) -> None:
    repo, shas = tree
    builder = StepBuilder(tmp_path / "bisect", repo, tmp_path, [], lambda _: None)
    _fake_build(tmp_path / "bisect", repo, shas[0], builder._config_key())
    assert builder.built_commit() == shas[0]
    # shas[0] -> shas[1]: mod-a's source changed; the oracle loads mod_a.
    assert builder._module_plan(shas[0], shas[1], {"mod_a"}) == [("mod_a", "drivers/a/a.c")]
    # Another module's source: nothing of the oracle's to build.
    assert builder._module_plan(shas[1], shas[2], {"mod_a"}) == []
    assert builder._module_plan(shas[0], shas[2], {"b"}) == [("b", "drivers/b/b.c")]
    # A header (or anything not a module's source): the kernel is built.
    header = commit(repo, {"include/x.h": "#define X 1\n"}, "header")
    assert builder._module_plan(shas[2], header, {"mod_a"}) is None
    docs = commit(repo, {"Documentation/a.rst": "a\n"}, "docs")
    assert builder._module_plan(header, docs, {"mod_a"}) == []


def test_a_build_with_other_config_fragments_is_no_step_s_build(
    tmp_path: Path, tree: tuple[Path, list[str]]
) -> None:
    repo, shas = tree
    fragment = tmp_path / "a.config"
    fragment.write_text("CONFIG_A=y\n")
    builder = StepBuilder(tmp_path / "bisect", repo, tmp_path, [fragment], lambda _: None)
    _fake_build(tmp_path / "bisect", repo, shas[0], builder._config_key())
    assert builder.built_commit() == shas[0]
    fragment.write_text("CONFIG_A=m\n")
    assert builder.built_commit() is None  # every step is a kernel build again


def test_a_first_build_that_cannot_start_from_a_copy_says_why(
    tmp_path: Path, tree: tuple[Path, list[str]]
) -> None:
    repo, _ = tree
    said: list[str] = []
    cache = tmp_path / "cache"
    builder = StepBuilder(tmp_path / "bisect", repo, tmp_path, [], said.append, cache)
    (tmp_path / "bisect").mkdir()
    builder._seed(Runner(tmp_path / "log", lambda _: None))
    assert said == [
        "bisect: the first kernel build starts from nothing (no main kernel build of the "
        "same config fragments in the cache)"
    ]
    assert not builder.entry.build_dir.exists()


def test_the_users_tree_is_not_where_git_bisect_runs(
    tmp_path: Path, tree: tuple[Path, list[str]]
) -> None:
    repo, shas = tree
    clone = git.ensure_clone(repo, tmp_path / "clone")
    git.checkout(clone, shas[0])
    git.bisect_start(clone, shas[2], shas[0])
    assert git.head(clone) not in (shas[0], shas[2])
    assert sh(repo, "git", "rev-parse", "HEAD") == shas[2]
    assert sh(repo, "git", "for-each-ref", "refs/bisect") == ""
    assert sh(repo, "git", "worktree", "list", "--porcelain").count("worktree ") == 1
    git.bisect_reset(clone)


def _state(repo: Path) -> list[str]:
    """What a bisection must leave as it was: HEAD, the index and files, refs, worktrees,
    and the files of .git (the index's stat cache aside)."""
    return [
        sh(repo, "git", "rev-parse", "HEAD"),
        sh(repo, "git", "symbolic-ref", "-q", "HEAD"),
        sh(repo, "git", "status", "--porcelain", "--ignored"),
        sh(repo, "git", "for-each-ref"),
        sh(repo, "git", "worktree", "list", "--porcelain"),
        " ".join(sorted(str(p.relative_to(repo)) for p in (repo / ".git").rglob("*"))),
    ]


def test_ctrl_c_leaves_the_users_tree_as_it_was(
    tmp_path: Path, tree: tuple[Path, list[str]]
) -> None:
    repo, shas = tree
    # A "kernel" whose configuration takes long: Ctrl-C comes during a step's build.
    good = commit(repo, {"Makefile": "defconfig:\n\tsleep 60\n"}, "a Makefile")
    commit(repo, {"drivers/a/a.c": "int a = 3;\n"}, "fourth")
    sh(repo, "git", "checkout", "-q", "-b", "topic")
    before = _state(repo)
    proc = subprocess.Popen(
        [str(ROADTEST), "bisect", "--tree", str(repo), "--good", good, "--bad", "HEAD"]
        + ["--", "tests/drivers/iio/light/test_opt3001.py"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "ROADTEST_CACHE": str(tmp_path / "cache")},
        start_new_session=True,  # its own process group, as a terminal's job
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if "cloning" in line:
            break
    clone = tmp_path / "cache" / "bisect"  # .../<tree>/src, once made
    deadline = time.monotonic() + 30
    while not _sleeping(clone) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _sleeping(clone), "the step's build did not start"
    clone = next(clone.glob("*/src"))
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C, to the whole job
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "roadtest: interrupted"
    assert _state(repo) == before
    assert sh(clone, "git", "for-each-ref", "refs/bisect") == ""  # bisect reset in the clone
    assert not _sleeping(clone)


def _sleeping(clone: Path) -> bool:
    """Whether a `sleep 60` of the clone's Makefile runs."""
    for entry in Path("/proc").iterdir():
        try:
            cmd = (entry / "cmdline").read_bytes()
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cmd == b"sleep\x0060\x00" and cwd.startswith(str(clone)):
            return True
    return False


def test_a_good_end_that_does_not_build_is_one_line(
    tmp_path: Path, tree: tuple[Path, list[str]]
) -> None:
    repo, _ = tree
    good = commit(repo, {"Makefile": "defconfig:\n\tfalse\n"}, "a Makefile that fails")
    commit(repo, {"drivers/a/a.c": "int a = 3;\n"}, "fourth")
    test = "tests/drivers/iio/light/test_opt3001.py"
    line = one_line_error_last(
        bisect(tmp_path, "--tree", str(repo), "--good", good, "--bad", "HEAD", "--", test)
    )
    assert line.startswith(f"roadtest: the oracle does not run at the good end {good[:12]}")
    assert "does not build" in line


def one_line_error_last(result: subprocess.CompletedProcess[str]) -> str:
    """The error line of a bisection that got as far as its steps (progress lines first)."""
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    return result.stderr.strip().splitlines()[-1]


def test_a_clone_whose_times_were_aligned_keeps_them_through_a_checkout(
    tree: tuple[Path, list[str]],
) -> None:
    """The bisection's first build starts from a copy of the main build and gives the
    clone's unchanged files the main tree's (older) times. `checkout --force` rewrites a
    file whose times are not the index's, whatever its content: without refresh_index
    the next step's checkout made every file new, and its kernel build compiled all of
    them again (202 s for 1034 objects in the bisect proof)."""
    repo, commits = tree
    git.checkout(repo, commits[1])
    old = 1_000_000_000
    for name in ("include/x.h", "drivers/a/a.c"):
        os.utime(repo / name, (old, old))
    git.refresh_index(repo)
    git.checkout(repo, commits[0])
    assert (repo / "include/x.h").stat().st_mtime == old  # the same in both: kept
    assert (repo / "drivers/a/a.c").stat().st_mtime > old  # changed: newer than its object
