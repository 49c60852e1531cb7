"""`roadtest bisect` on a real regression: opt3001's "timeout error when 0 lux".

Upstream fixed it in "iio: light: opt3001: Fixed timeout error when 0 lux": in the
polling path `ret` holds the result register when the function checks for a timeout,
and a reading of 0 lux came back as -ETIMEDOUT. tests/drivers/iio/light/test_opt3001.py
reads 0 lux first, and its golden trace has the driver's I/O for it.

The history bisected: Debian's linux-source-6.12 (one commit), kernel-patches/ (one
commit per patch), then the six patches of bisect/ (one commit each): five harmless
changes to the comments of five drivers, and 0004, which brings the bug back while
looking like a cleanup. roadtest makes it once in the cache (`--series` does, and the
git-mode tests bisect the same repository with `--tree`), so every mode after the first
shares one clone and one incremental build directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from roadtest.bisect.command import tree_directory
from roadtest.bisect.history import SeriesHistory, distribution_repo, series_history
from roadtest.bisect.oracle import Oracle
from roadtest.checkout import repo_root
from roadtest.kernel import default_cache_dir
from roadtest.kernel.source import read_series, source_identity

PROOF = Path(__file__).parent / "bisect"
BAD_PATCH = "0004-iio-light-opt3001-Report-a-conversion-timeout-in-one.patch"
OPT3001_TEST = "tests/drivers/iio/light/test_opt3001.py"
# The first bisection builds the kernel of its history from scratch.
pytestmark = pytest.mark.timeout(1800)


def proof_patches() -> list[Path]:
    return [*read_series(repo_root()), *sorted(PROOF.glob("*.patch"))]


@pytest.fixture(scope="module")
def series_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    series = tmp_path_factory.mktemp("series") / "series"
    series.write_text("".join(f"{p}\n" for p in proof_patches()))
    return series


@pytest.fixture(scope="module")
def history() -> SeriesHistory:
    """The proof's history (made now if no bisection made it yet)."""
    repo = distribution_repo(default_cache_dir(), source_identity(), print)
    return series_history(repo, proof_patches(), print)


def bisect(*args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "roadtest", "bisect", *args],
        cwd=repo_root(),
        capture_output=True,
        text=True,
        env={**os.environ, "ROADTEST_CACHE": str(default_cache_dir())},
        stdin=subprocess.DEVNULL,
        check=False,
    )
    # A first build from nothing takes minutes, not seconds: not a failure of the proof,
    # but said in the run's warnings summary, with the bisection's reason.
    for line in proc.stderr.splitlines():
        if "first kernel build starts from nothing" in line:
            warnings.warn(line.strip(), stacklevel=2)
    return proc


def shown(proc: subprocess.CompletedProcess[str]) -> str:
    return f"status {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"


def check_found(
    proc: subprocess.CompletedProcess[str], log: Path, history: SeriesHistory, bad: str
) -> list[dict[str, object]]:
    """The bisection named `bad` first, from its output and its JSON log; the log's steps."""
    assert proc.returncode == 0, shown(proc)
    first = proc.stdout.splitlines()[0]
    assert first.startswith(f"first bad commit: {bad} iio: light: opt3001: Report"), shown(proc)
    data = json.loads(log.read_text())
    steps = data["steps"]
    assert [s["role"] for s in steps[:2]] == ["good end", "bad end"]
    assert steps[0]["verdict"] == "good" and steps[1]["verdict"] == "bad"
    # Every step decided good or bad was right: the bug is in `bad` and after it only.
    commits = [history.base, *(c for c, _ in history.commits)]
    for step in steps:
        if step["verdict"] in ("good", "bad"):
            after = commits.index(step["commit"]) >= commits.index(bad)
            assert step["verdict"] == ("bad" if after else "good"), step
    assert isinstance(steps, list)
    return steps


def test_series_mode_names_the_patch(
    series_file: Path, history: SeriesHistory, tmp_path: Path
) -> None:
    ours = len(read_series(repo_root()))
    log = tmp_path / "bisect.json"
    proc = bisect(
        "--series", str(series_file), "--good", str(ours), "--json", str(log), "--", OPT3001_TEST
    )
    bad = history.commits[ours + 3][0]
    steps = check_found(proc, log, history, bad)
    assert f"(patch {BAD_PATCH})" in proc.stdout.splitlines()[0]
    # The oracle's own account of the failure: the test and the driver's error.
    assert "test_illuminance" in proc.stdout and "TimeoutError" in proc.stdout, shown(proc)
    # Module identity: a step whose opt3001.ko and kernel are a decided step's is not booted.
    reused = [s for s in steps if s["reused_from"]]
    assert reused, shown(proc)
    assert "decided by module identity" in proc.stdout


def test_git_mode_with_the_test_as_oracle(history: SeriesHistory, tmp_path: Path) -> None:
    ours = len(read_series(repo_root()))
    good, bad = history.commit_after(ours), history.commit_after(len(history.commits))
    log = tmp_path / "bisect.json"
    proc = bisect(
        "--tree",
        str(history.repo),
        "--good",
        good,
        "--bad",
        bad,
        "--json",
        str(log),
        "--",
        OPT3001_TEST,
    )
    check_found(proc, log, history, history.commits[ours + 3][0])


def test_git_mode_with_the_golden_trace_as_oracle(history: SeriesHistory, tmp_path: Path) -> None:
    ours = len(read_series(repo_root()))
    good, bad = history.commit_after(ours), history.commit_after(len(history.commits))
    log = tmp_path / "bisect.json"
    golden = repo_root() / "traces" / "opt3001"
    proc = bisect(
        "--tree",
        str(history.repo),
        "--good",
        good,
        "--bad",
        bad,
        "--golden",
        str(golden),
        "--json",
        str(log),
    )
    check_found(proc, log, history, history.commits[ours + 3][0])
    assert "test_illuminance.rtrace" in proc.stdout, shown(proc)


def test_good_must_be_good(history: SeriesHistory, tmp_path: Path) -> None:
    ours = len(read_series(repo_root()))
    good = history.commit_after(ours + 4)  # the bug is in already
    bad = history.commit_after(len(history.commits))
    # A wrong guess of what the oracle loads (an earlier bisection's, here: nothing):
    # the good end's build then ignores opt3001.c's change, and only the oracle's own
    # account of what it loaded can send it back for a build of the commit.
    hints = tree_directory(default_cache_dir(), history.repo) / "modules-used.json"
    hints.write_text(json.dumps({Oracle(repo_root(), [OPT3001_TEST], None, []).describe(): []}))
    proc = bisect("--tree", str(history.repo), "--good", good, "--bad", bad, "--", OPT3001_TEST)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("roadtest: good is not good") and good[:12] in last, shown(proc)


def test_bad_must_be_bad(history: SeriesHistory) -> None:
    ours = len(read_series(repo_root()))
    good, bad = history.commit_after(ours), history.commit_after(ours + 3)  # before the bug
    proc = bisect("--tree", str(history.repo), "--good", good, "--bad", bad, "--", OPT3001_TEST)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("roadtest: bad is not bad") and bad[:12] in last, shown(proc)
