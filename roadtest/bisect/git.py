"""The git operations of a bisection, each one git command with a one-line error.

A bisection never works in the user's tree: it clones it (`--shared`: the clone borrows
the tree's objects, so it costs a checkout and no copy) into the cache, and drives
`git bisect` there. The user's checkout, HEAD, index, refs and .git stay as they were,
whatever happens to the bisection, SIGKILL included.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from roadtest.errors import RoadtestError
from roadtest.gitcmd import git, is_repository

__all__ = ["git", "is_repository"]  # the bisection's callers take them from here too

# Commits roadtest makes (the distribution's source, a series' patches) are the same on
# every machine: same author, same date, hence the same ids.
FIXED_IDENTITY = {
    "GIT_AUTHOR_NAME": "roadtest",
    "GIT_AUTHOR_EMAIL": "roadtest@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_NAME": "roadtest",
    "GIT_COMMITTER_EMAIL": "roadtest@localhost",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
}


def common_dir(tree: Path) -> Path:
    """The repository's own .git (the main one, for a worktree of it): what names it."""
    return Path(git(tree, "rev-parse", "--path-format=absolute", "--git-common-dir"))


def resolve(tree: Path, revision: str) -> str:
    """The commit id `revision` names in `tree`, or a RoadtestError saying there is none."""
    sha = git(tree, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}", check=False)
    if not sha:
        raise RoadtestError(f"no such revision in {tree}: {revision}")
    return sha


def is_bare(tree: Path) -> bool:
    return git(tree, "rev-parse", "--is-bare-repository") == "true"


def dirty_files(tree: Path) -> list[str]:
    """Tracked files with changes not committed (untracked files do not count, as for
    `git bisect`); none in a bare repository."""
    if is_bare(tree):
        return []
    out = git(tree, "diff", "--name-only", "HEAD")
    return [line for line in out.splitlines() if line]


def is_ancestor(tree: Path, older: str, newer: str) -> bool:
    status = subprocess.run(
        ["git", "-C", str(tree), "merge-base", "--is-ancestor", older, newer],
        capture_output=True,
        check=False,
    ).returncode
    return status == 0


def subject(tree: Path, commit: str) -> str:
    return git(tree, "log", "-1", "--format=%s", commit)


def changed_files(tree: Path, old: str, new: str) -> list[str]:
    """Paths whose content differs between two commits (either way)."""
    out = git(tree, "diff", "--no-renames", "--name-only", old, new)
    return [line for line in out.splitlines() if line]


def tracked_files(tree: Path) -> list[str]:
    """The paths of the files of the checked-out commit (the index's)."""
    return [name for name in git(tree, "ls-files", "-z").split("\0") if name]


def ensure_clone(tree: Path, dest: Path) -> Path:
    """A clone of `tree` at `dest` sharing its objects (made once; a damaged one again)."""
    if is_repository(dest) and (dest / ".git").is_dir():
        git(dest, "remote", "set-url", "origin", str(tree))
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    tmp = dest.with_name(f".tmp-{dest.name}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        git(dest.parent, "clone", "--quiet", "--shared", "--no-checkout", str(tree), str(tmp))
        tmp.rename(dest)  # a clone half made by an interrupted run is never used
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def checkout(clone: Path, commit: str) -> None:
    """Detach the clone at `commit`, discarding anything a run left in its files (kbuild
    builds elsewhere, O=; files it touched keep their new times: make sees them changed)."""
    git(clone, "checkout", "--quiet", "--force", "--detach", commit)
    git(clone, "clean", "--quiet", "-fdx")


def refresh_index(clone: Path) -> None:
    """Record the files' present times in the clone's index (their content unchanged):
    `checkout --force` rewrites every file whose times differ from the index's, whatever
    its content, and a rewritten file is newer than what kbuild built from it."""
    git(clone, "update-index", "-q", "--refresh", check=False)  # 1: some files differ


def bisect_start(clone: Path, bad: str, good: str) -> None:
    bisect_reset(clone)
    git(clone, "bisect", "start", bad, good)


def bisect_mark(clone: Path, verdict: str) -> str | None:
    """Mark HEAD good, bad or skip; the first bad commit once git knows it, else None (git
    has checked out the next commit to test). A RoadtestError when only skipped commits
    are left."""
    # git exits non-zero when only skipped commits are left: its output says so.
    out = git(clone, "bisect", verdict, check=False)
    if "is the first bad commit" in out:
        return out.split()[0]
    if "only 'skip'ped commits left" in out:
        candidates = [line.split()[0] for line in out.splitlines()[2:] if line.strip()]
        raise RoadtestError(
            "only skipped commits are left: the first bad commit is one of "
            + ", ".join(c[:12] for c in candidates if len(c) == 40)
        )
    if not out:
        raise RoadtestError(f"git bisect {verdict} in {clone} failed")
    return None


def bisect_reset(clone: Path) -> None:
    git(clone, "bisect", "reset", "--quiet", check=False)


def head(clone: Path) -> str:
    return git(clone, "rev-parse", "HEAD")
