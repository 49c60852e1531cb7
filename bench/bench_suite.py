"""Driver-suite wall time: live on one worker and on two, recording, and replay.

Run by hand (`.venv/bin/python bench/bench_suite.py`), kernel built, golden
traces in traces/. The variants alternate within each round, so all see the
same machine load; compare their medians as ratios. Targets: the suite in
under 10 s on one worker; recording adds at most 5 %; replay no slower than live.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import median_ms, roadtest_run_seconds

from roadtest.checkout import repo_root
from roadtest.kernel import ensure_kernel

ROOT = repo_root()


def command_seconds(*args: str) -> float:
    roadtest = Path(sys.executable).with_name("roadtest")
    start = time.monotonic()
    subprocess.run([str(roadtest), *args], check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--suite", default=str(ROOT / "tests/drivers"))
    args = parser.parse_args()
    ensure_kernel(ROOT)
    walls: dict[str, list[float]] = {"live": [], "live -n 2": [], "record": [], "replay": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            walls["live"].append(roadtest_run_seconds([args.suite]))
            walls["live -n 2"].append(roadtest_run_seconds(["-n", "2", args.suite]))
            walls["record"].append(command_seconds("record", "--out", tmp, args.suite))
            walls["replay"].append(command_seconds("replay", "--golden", str(ROOT / "traces")))
    for name, samples in walls.items():
        print(f"driver suite, {name + ':':11s} {median_ms(samples)} wall, kernel cached")
    med = {name: statistics.median(samples) for name, samples in walls.items()}
    print("target: live under 10 s on one worker")
    print(f"-n 1 / -n 2 wall ratio:  {med['live'] / med['live -n 2']:.2f}")
    print(f"record / live:           {med['record'] / med['live']:.3f} (target <= 1.05)")
    print(f"replay / live:           {med['replay'] / med['live']:.3f} (target <= 1.0)")


if __name__ == "__main__":
    main()
