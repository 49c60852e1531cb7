"""Running git: one command, its output, and a one-line error; the bisection and a
developer's own tree (`--tree`) both use it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from roadtest.errors import RoadtestError


def git(
    repo: Path,
    *args: str,
    check: bool = True,
    env: Mapping[str, str] | None = None,
    git_dir: bool = False,
) -> str:
    """`git -C repo args` (`--git-dir=repo` for a bare repository when `git_dir`); its
    stdout, stripped. A failure is a RoadtestError with git's own last line."""
    where = [f"--git-dir={repo}"] if git_dir else ["-C", str(repo)]
    full_env = {**os.environ, "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    try:
        result = subprocess.run(
            ["git", *where, *args],
            capture_output=True,
            text=True,
            env=full_env,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except FileNotFoundError:
        raise RoadtestError("git not found: install it with `apt-get install git`") from None
    if check and result.returncode != 0:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        why = lines[-1].strip() if lines else f"exit status {result.returncode}"
        raise RoadtestError(f"git {' '.join(args[:2])} in {repo}: {why}")
    return result.stdout.strip()


def is_repository(tree: Path) -> bool:
    return tree.is_dir() and git(tree, "rev-parse", "--git-dir", check=False) != ""
