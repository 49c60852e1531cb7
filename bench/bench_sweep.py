"""The sweep's figures (issue: `roadtest sweep`), printed, not asserted:

- a one-driver sweep, command to verdict, the sweep kernel cached (`roadtest sweep
  drivers/rtc/rtc-pcf8563.c --again`);
- the probe success rate by subsystem over a sample of drivers, three ways: blind (no
  mined constants, no KCOV feedback), with the mined constants, and with both;
- throughput of that sample on one worker and on `-n 2`, in drivers per hour.

The whole sweep's figures come from its own results database: pass `--results FILE` of a
full run (`roadtest sweep --results FILE`) to print its table too.

    .venv/bin/python bench/bench_sweep.py [--sample N] [--results FILE]

Each configuration writes its own results database in a temporary directory; the sweep
kernel is built first if the cache has none (its build time is then printed).
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from roadtest.arch.um import UM
from roadtest.checkout import repo_root
from roadtest.kernel import default_cache_dir, kernel_in
from roadtest.kernel.variants import MAIN
from roadtest.sweep.command import load_inventory
from roadtest.sweep.report import summary
from roadtest.sweep.results import ResultsDB

ROADTEST = str(Path(sys.executable).with_name("roadtest"))


KERNEL: list[str] = []  # ["--kernel", DIR] when the bench is given one


def sweep(args: list[str], results: Path) -> float:
    """Wall seconds of one `roadtest sweep ARGS` (findings make it exit 1: not an error)."""
    start = time.monotonic()
    done = subprocess.run(
        [ROADTEST, "sweep", "--again", "--results", str(results), *KERNEL, *args],
        stdout=subprocess.DEVNULL,
        check=False,
    )
    if done.returncode not in (0, 1):
        raise SystemExit(f"roadtest sweep {' '.join(args)} failed: exit {done.returncode}")
    return time.monotonic() - start


def table(results: Path) -> list[str]:
    with ResultsDB.existing(results) as db:
        return summary(db.results())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=60, help="drivers in the sample")
    parser.add_argument("--results", type=Path, help="a full sweep's results database")
    parser.add_argument("--kernel", help="a sweep kernel built before (roadtest sweep --kernel)")
    options = parser.parse_args()
    if options.kernel:
        KERNEL[:] = ["--kernel", options.kernel]

    root = repo_root()
    source = kernel_in(Path(options.kernel), UM) if options.kernel else MAIN.ensure(root, UM)
    tree = source.source_dir.resolve()
    drivers = load_inventory(tree, cache_dir=default_cache_dir(), repo_root=root, progress=print)
    built = [d for d in drivers if d.builds.get("um")]
    # The same sample every run: a fixed seed over the inventory's order.
    sample = sorted(
        random.Random(0).sample(built, min(options.sample, len(built))), key=lambda d: d.source
    )
    with tempfile.TemporaryDirectory(prefix="roadtest-bench-sweep-") as scratch:
        work = Path(scratch)
        # The first sweep builds the kernel if needed: its time is the build's, not a figure.
        start = time.monotonic()
        sweep(["drivers/rtc/rtc-pcf8563.c"], work / "warm.sqlite")
        print(
            f"first sweep (the sweep kernel built if the cache had none): "
            f"{time.monotonic() - start:.0f} s"
        )
        one = sweep(["drivers/rtc/rtc-pcf8563.c"], work / "one.sqlite")
        print(f"one driver, command to verdict, kernel cached: {one:.1f} s")

        names = [d.source for d in sample]
        print(f"\nsample: {len(sample)} drivers (seed 0)")
        for label, extra in (
            ("blind (no mined constants, no feedback)", ["--no-mined", "--no-feedback"]),
            ("mined constants, no feedback", ["--no-feedback"]),
            ("mined constants and KCOV feedback", []),
        ):
            db = work / f"{len(extra)}.sqlite"
            seconds = sweep([*extra, *names], db)
            print(f"\n{label}: {seconds:.0f} s, {len(sample) / seconds * 3600:.0f} drivers/h")
            for line in table(db):
                print(f"  {line}")
        two = sweep(["-n", "2", *names], work / "n2.sqlite")
        print(f"\n-n 2: {two:.0f} s, {len(sample) / two * 3600:.0f} drivers/h")
    if options.results is not None:
        print(f"\nthe full sweep ({options.results}):")
        for line in table(options.results):
            print(f"  {line}")


if __name__ == "__main__":
    main()
