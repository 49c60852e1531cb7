"""Git histories roadtest makes in the cache, so that series mode is git mode on them:

    history/<source>.git        bare; refs/heads/distribution: the source tarball, one commit
        refs/heads/series/<key>  the distribution and one commit per patch of a series

Both are made once, and the same on every machine (fixed author and dates). A series'
patches are applied to a scratch index (`git apply --cached`): no checkout of the tree.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from roadtest.bisect.git import FIXED_IDENTITY, git
from roadtest.errors import RoadtestError
from roadtest.kernel.cache import touch
from roadtest.kernel.source import SourceIdentity

DISTRIBUTION = "distribution"
# In each series commit's message: which patch it is.
PATCH_TRAILER = "Roadtest-Series-Patch:"


def history_root(cache: Path) -> Path:
    return cache / "history"


def _key(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()[:16]


def _has_ref(repo: Path, ref: str) -> bool:
    return bool(git(repo, "rev-parse", "--verify", "--quiet", ref, check=False, git_dir=True))


def distribution_repo(
    cache: Path, identity: SourceIdentity, progress: Callable[[str], None]
) -> Path:
    """The bare repository whose `distribution` branch is the source tarball (made now,
    once: about a minute and a half; atomically: an interrupted one is made again)."""
    repo = history_root(cache) / f"{_key(repr(identity.key_data()).encode())}.git"
    if _has_ref(repo, f"refs/heads/{DISTRIBUTION}"):
        touch(repo)  # its last use, for the cache's pruning (kernel/prune.py)
        return repo
    repo.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=repo.parent))
    try:
        progress(f"bisect: making a git history of {identity.describe()} (once) in {repo}")
        git(tmp, "init", "--quiet", "--bare", str(tmp / "repo.git"))
        unpacked = tmp / "tree"
        unpacked.mkdir()
        subprocess.run(["tar", "-xf", str(identity.tarball), "-C", str(unpacked)], check=True)
        tops = [p for p in unpacked.iterdir() if p.is_dir()]
        if len(tops) != 1:
            raise RoadtestError(f"{identity.tarball} does not hold one top-level directory")
        bare = tmp / "repo.git"
        # -f: Debian's tarball has a .gitignore that ignores its whole top level.
        work = ["--git-dir", str(bare), "--work-tree", str(tops[0])]
        git(tmp, *work, "add", "--all", "--force")
        tree = git(tmp, *work, "write-tree")
        message = f"{identity.describe()}\n\nThe kernel source tarball {identity.tarball.name}."
        commit = git(bare, "commit-tree", tree, "-m", message, env=FIXED_IDENTITY, git_dir=True)
        git(bare, "update-ref", f"refs/heads/{DISTRIBUTION}", commit, git_dir=True)
        shutil.rmtree(unpacked)
        shutil.rmtree(repo, ignore_errors=True)  # a damaged one, without its branch
        bare.rename(repo)
    except subprocess.CalledProcessError:
        raise RoadtestError(f"could not unpack {identity.tarball}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return repo


@dataclass(frozen=True)
class SeriesHistory:
    repo: Path
    base: str  # the distribution's commit
    commits: list[tuple[str, Path]]  # (commit, its patch), in series order

    def patch_of(self, commit: str) -> Path | None:
        return next((p for c, p in self.commits if c == commit), None)

    def commit_after(self, applied: int) -> str:
        """The commit with the first `applied` patches (0: the distribution's source)."""
        return self.base if applied == 0 else self.commits[applied - 1][0]


def _subject(patch: Path) -> str:
    """A format-patch's Subject (its "[PATCH n/m]" prefix dropped), else the file's name."""
    try:
        lines = patch.read_text(errors="replace").splitlines()
    except OSError as err:
        raise RoadtestError(f"patch {patch}: {err.strerror or err}") from None
    for number, line in enumerate(lines):
        if line.startswith("Subject:"):
            text = line.removeprefix("Subject:").strip()
            for more in lines[number + 1 :]:  # a long subject is folded (RFC 5322)
                if not more.startswith((" ", "\t")):
                    break
                text += " " + more.strip()
            if text.startswith("[") and "]" in text:
                text = text.split("]", 1)[1].strip()
            return text or patch.name
        if line.startswith("diff --git") or line.startswith("--- "):
            break
    return patch.name


def series_history(
    repo: Path, patches: list[Path], progress: Callable[[str], None]
) -> SeriesHistory:
    """The distribution with `patches` applied one commit each, on a branch named by their
    contents (made now if it is not there)."""
    base = git(repo, "rev-parse", f"refs/heads/{DISTRIBUTION}", git_dir=True)
    contents = [p.read_bytes() for p in patches]
    branch = f"refs/heads/series/{_key(base.encode(), *contents)}"
    if _has_ref(repo, branch):
        listed = git(repo, "rev-list", "--reverse", f"{base}..{branch}", git_dir=True).split()
        if len(listed) == len(patches):
            return SeriesHistory(repo, base, list(zip(listed, patches, strict=True)))
    progress(f"bisect: committing the series' {len(patches)} patches in {repo}")
    with tempfile.TemporaryDirectory(prefix="roadtest-series-") as scratch:
        env = {**FIXED_IDENTITY, "GIT_INDEX_FILE": str(Path(scratch) / "index")}
        git(repo, "read-tree", base, env=env, git_dir=True)
        parent, commits = base, []
        for patch in patches:
            result = subprocess.run(
                ["git", f"--git-dir={repo}", "apply", "--cached", str(patch.resolve())],
                capture_output=True,
                text=True,
                env={**os.environ, **env},
                check=False,
            )
            if result.returncode != 0:
                lines = [line for line in result.stderr.splitlines() if line.strip()]
                why = lines[0] if lines else "git apply failed"
                raise RoadtestError(
                    f"patch {patch} does not apply on the patches before it ({why})"
                )
            tree = git(repo, "write-tree", env=env, git_dir=True)
            message = f"{_subject(patch)}\n\n{PATCH_TRAILER} {patch.name}"
            parent = git(
                repo, "commit-tree", tree, "-p", parent, "-m", message, env=env, git_dir=True
            )
            commits.append((parent, patch))
    git(repo, "update-ref", branch, parent, git_dir=True)
    return SeriesHistory(repo, base, commits)
