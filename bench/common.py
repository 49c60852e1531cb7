"""What the benchmarks share: medians, timing one `roadtest run` from the outside, and the
tests' own scaffolding (tests/guest/scaffold.py: the OPT3001 declaration, the CPUs)."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

# A benchmark runs as a script (`.venv/bin/python bench/x.py`): sys.path has bench/, and
# scaffold.py is imported by name from its directory, as the tests there import it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "guest"))
from scaffold import OPT3001_SOURCE as OPT3001_SOURCE  # noqa: E402
from scaffold import own_cpu as own_cpu  # noqa: E402


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
