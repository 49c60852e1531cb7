"""`roadtest bisect`'s costs: one step when only a driver file changed (its module built
alone, a boot, the oracle), one step when a core file changed (an incremental kernel
build, a boot, the oracle), and the bisection of the proof's history
(tests/guest/test_bisect_proof.py): its wall time, its steps, and the boots module
identity saved.

Run by hand (`.venv/bin/python bench/bench_bisect.py`), once `make test` or a bisection
made the proof's history and its build. Prints figures, asserts nothing. The steps are
timed in the one clone and build directory every bisection of that history shares, warm.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from roadtest.bisect import git
from roadtest.bisect.command import Bisection, git_range, tree_directory
from roadtest.bisect.history import distribution_repo, series_history
from roadtest.bisect.oracle import Oracle
from roadtest.checkout import repo_root
from roadtest.kernel import default_cache_dir
from roadtest.kernel.source import read_series, source_identity

ROOT = repo_root()
OPT3001_TEST = "tests/drivers/iio/light/test_opt3001.py"
PROOF = sorted((ROOT / "tests" / "guest" / "bisect").glob("*.patch"))
CORE = sorted((ROOT / "bench" / "bisect").glob("*.patch"))  # a comment in kernel/panic.c


def quiet(_: str) -> None:
    pass


def steps_figures() -> None:
    ours = read_series(ROOT)
    repo = distribution_repo(default_cache_dir(), source_identity(), print)
    proof = series_history(repo, [*ours, *PROOF], print)
    core = series_history(repo, [*ours, *CORE], print)  # the same commits up to `ours`
    good = proof.commit_after(len(ours))
    driver = proof.commit_after(len(ours) + 4)  # opt3001.c changed, and three other drivers
    core_change = core.commit_after(len(ours) + 1)
    span = git_range(repo, good, driver)
    oracle = Oracle(ROOT, [OPT3001_TEST], None, [])
    bisection = Bisection(span, oracle, tree_directory(default_cache_dir(), repo), ROOT, quiet)
    git.ensure_clone(repo, bisection.clone)
    print("one bisection step, warm (build + boot and oracle):")
    for label, commit in (
        ("good end (learns the modules)", good),
        ("a driver file changed", driver),
        ("a core file changed", core_change),
        ("back to the good end", good),
    ):
        git.checkout(bisection.clone, commit)
        start = time.monotonic()
        step = bisection.evaluate(commit, "step")
        total = time.monotonic() - start
        print(
            f"  {label:<32} {total:6.1f} s: build {step.build_seconds:5.1f} s "
            f"({step.build}), oracle {step.oracle_seconds:4.1f} s -> {step.verdict}"
            + (f" (reused {step.reused_from[:12]})" if step.reused_from else "")
        )


def proof_figures() -> None:
    ours = read_series(ROOT)
    with tempfile.TemporaryDirectory(prefix="bench-bisect-") as tmp:
        series = Path(tmp) / "series"
        series.write_text("".join(f"{p}\n" for p in [*ours, *PROOF]))
        log = Path(tmp) / "bisect.json"
        start = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "roadtest", "bisect", "--series", str(series)]
            + ["--good", str(len(ours)), "--json", str(log), "--", OPT3001_TEST],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.monotonic() - start
        if proc.returncode != 0:
            print(f"bisection failed ({proc.returncode}):\n{proc.stderr}")
            return
        steps = json.loads(log.read_text())["steps"]
    booted = [s for s in steps if not s["reused_from"] and s["oracle_seconds"]]
    reused = [s for s in steps if s["reused_from"]]
    print(f"the proof's bisection (series mode, {len(PROOF)} patches after ours), warm:")
    print(f"  {proc.stdout.splitlines()[0]}")
    print(
        f"  {wall:.0f} s wall, {len(steps)} steps: {len(booted)} booted, {len(reused)} "
        f"decided by module identity (boots saved), "
        f"build {sum(s['build_seconds'] for s in steps):.0f} s, "
        f"oracle {sum(s['oracle_seconds'] for s in steps):.0f} s"
    )
    for s in steps:
        print(
            f"    {s['role']:<8} {s['commit'][:12]} {s['verdict']:<4} "
            f"build {s['build_seconds']:5.1f} s ({s['build']}) oracle {s['oracle_seconds']:4.1f} s"
        )


if __name__ == "__main__":
    steps_figures()
    proof_figures()
