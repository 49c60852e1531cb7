"""Driver-suite wall time: the whole of tests/drivers, one worker and two.

Run by hand (`.venv/bin/python bench/bench_suite.py`), kernel built. The
one-worker and two-worker runs alternate, so both see the same machine load;
compare their medians as a ratio. Target: the suite in under 10 s on one worker.
"""

from __future__ import annotations

import argparse
import statistics

from common import median_ms, roadtest_run_seconds

from roadtest.kernel import ensure_kernel
from roadtest.testing.plugin import repo_root

ROOT = repo_root()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--suite", default=str(ROOT / "tests/drivers"))
    args = parser.parse_args()
    ensure_kernel(ROOT)
    one: list[float] = []
    two: list[float] = []
    for _ in range(args.runs):
        one.append(roadtest_run_seconds([args.suite]))
        two.append(roadtest_run_seconds(["-n", "2", args.suite]))
    print(f"driver suite, 1 worker:   {median_ms(one)} wall, kernel cached (target < 10 s)")
    print(f"driver suite, 2 workers:  {median_ms(two)} wall")
    ratio = statistics.median(one) / statistics.median(two)
    print(f"-n 1 / -n 2 wall ratio:   {ratio:.2f}")


if __name__ == "__main__":
    main()
