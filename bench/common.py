"""What the benchmarks share: medians, and timing one `roadtest run` from the outside."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path


def median_ms(samples: list[float]) -> str:
    med, low = statistics.median(samples) * 1000, min(samples) * 1000
    return f"{med:.0f} ms (min {low:.0f}, n={len(samples)})"


def roadtest_run_seconds(args: list[str]) -> float:
    """Wall time of one `roadtest run ARGS` (it must pass), as a user would see it."""
    roadtest = Path(sys.executable).with_name("roadtest")
    start = time.monotonic()
    subprocess.run(
        [str(roadtest), "run", "-q", "-p", "no:cacheprovider", *args],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.monotonic() - start
