"""Stress check: warm `make test` N times in a row, with a CPU hog on every CPU.

Run by hand (`.venv/bin/python bench/bench_stress_make_test.py [--runs 5]`), kernels
built (a first `make test` builds them: a run that builds is not warm). Not part of
`make test`. Each hog is `sha256sum /dev/zero` in a session of its own (setsid), pinned
to one CPU, so that the guests' real-time clocks (x86_64 under QEMU, time-travel) run
while the host is busy: a test that assumes the guest stops between two lines of Python
fails here. Prints pass or fail and the wall time of each run (each run's output goes to
a log file), and exits 1 unless every run passed. The hogs are killed at the end, on a
failure and on Ctrl-C too.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType

from roadtest.checkout import repo_root

ROOT = repo_root()


def start_hogs(cpus: list[int]) -> list[subprocess.Popen[bytes]]:
    """One `sha256sum /dev/zero` per CPU, each the leader of a session of its own."""
    hogs: list[subprocess.Popen[bytes]] = []
    for cpu in cpus:
        hog = subprocess.Popen(
            ["sha256sum", "/dev/zero"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # setsid(): Ctrl-C at the terminal does not reach it
        )
        hogs.append(hog)
        os.sched_setaffinity(hog.pid, {cpu})
    return hogs


def stop_hogs(hogs: list[subprocess.Popen[bytes]]) -> None:
    """Kill each hog's session (its process group: the hog alone), by its own id."""
    for hog in hogs:
        if hog.poll() is None:
            try:
                os.killpg(hog.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        hog.wait()


def make_test(log: Path) -> tuple[bool, float]:
    """One `make test` in the repository: (passed, wall seconds); its output goes to `log`."""
    start = time.monotonic()
    with log.open("wb") as out:
        # Its own process group, stopped whole when we are: subprocess.run's own clean-up
        # kills make alone and leaves its guests and builds running.
        proc = subprocess.Popen(
            ["make", "test"],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
        try:
            status = proc.wait()
        except BaseException:
            stop_group(proc)
            raise
    return status == 0, time.monotonic() - start


def stop_group(proc: subprocess.Popen[bytes], grace: float = 60.0) -> None:
    """SIGTERM to the process group (roadtest stops its guests on it), SIGKILL after
    `grace` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _terminated(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM as Ctrl-C: the hogs go in `finally`


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="make test runs (default 5)")
    parser.add_argument(
        "--hogs",
        type=int,
        default=len(os.sched_getaffinity(0)),
        help="CPU hogs, one per CPU from the first (default: one on each CPU)",
    )
    parser.add_argument(
        "--logs", type=Path, default=None, help="each run's output (default: a new /tmp dir)"
    )
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    logs = args.logs or Path(tempfile.mkdtemp(prefix="roadtest-stress-"))
    logs.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _terminated)
    results: list[tuple[bool, float]] = []
    hogs = start_hogs([cpus[i % len(cpus)] for i in range(args.hogs)])
    print(f"{len(hogs)} hog(s): `sha256sum /dev/zero` on CPU(s) {sorted(cpus[: len(hogs)])}")
    print(f"each run's output: {logs}/make-test-<n>.log", flush=True)
    try:
        for n in range(1, args.runs + 1):
            passed, wall = make_test(logs / f"make-test-{n}.log")
            results.append((passed, wall))
            verdict = "pass" if passed else "FAIL"
            print(f"run {n}/{args.runs}: {verdict}, {wall:.0f} s wall", flush=True)
    except KeyboardInterrupt:
        print(f"interrupted after {len(results)} of {args.runs} run(s)", file=sys.stderr)
    finally:
        stop_hogs(hogs)
    if not results:
        return 1
    green = sum(ok for ok, _ in results)
    print(f"make test under a CPU hog on each CPU: {green} of {len(results)} run(s) passed")
    walls = [wall for _, wall in results]
    median = statistics.median(walls)
    print(f"wall time: median {median:.0f} s, min {min(walls):.0f} s, max {max(walls):.0f} s")
    return 0 if green == len(results) == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
