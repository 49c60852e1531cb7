"""Fuzzing benchmarks: examples per second of the opt3001 lux property and where an
example's time goes, the time from a kernel crash to the next example, and hostile-mode
examples per second.

Run by hand (`.venv/bin/python bench/bench_fuzz.py`), with the kernel built. Prints
figures; asserts nothing. Every figure comes from this one invocation, so ratios between
them are meaningful on a noisy machine; absolute numbers are only indicative.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import textwrap
from pathlib import Path

import pytest
from common import OPT3001_SOURCE
from hypothesis import settings

from roadtest.checkout import repo_root
from roadtest.fuzz import profiles
from roadtest.kernel import default_cache_dir, ensure_kernel
from roadtest.pytest_plugin.examples import ExampleStats
from roadtest.pytest_plugin.main import pytest_main
from roadtest.pytest_plugin.stash import EXAMPLE_STATS

ROOT = repo_root()

PROPERTIES = (
    OPT3001_SOURCE
    + """
import json, os, time
from hypothesis import given, strategies as st

OUT = os.environ["BENCH_OUT"]


def lux(result):
    return round(0.01 * (1 << (result >> 12)) * (result & 0xFFF), 2)


@given(result=st.integers(0, 0xFFFF))
def test_lux(guest, result):
    dev = guest.bound_for_examples(SENSOR)
    dev.model.result = result
    assert read_float(dev.path.only("iio:device*") / "in_illuminance_input") == lux(result)


def test_where_the_time_goes(guest):
    n = int(os.environ["BENCH_N"])
    timings = {}
    with guest.bound(SENSOR) as dev:
        path = dev.path.only("iio:device*") / "in_illuminance_input"
        agent = guest.agent
        guest_vm = guest.ensure_guest()
        steps = {
            "agent round trip (ping)": agent.ping,
            "the property's sysfs read": lambda: read_float(path),
            "the property's glob of iio:device*": lambda: dev.path.only("iio:device*"),
            "end-of-example console flush": lambda: guest_vm.flush_console(
                "bench marker", guest_vm.console.mark(), 2.0
            ),
        }
        for name, step in steps.items():
            start = time.perf_counter()
            for _ in range(n):
                step()
            timings[name] = (time.perf_counter() - start) / n

    @given(result=st.integers(0, 0xFFFF))
    def bare(result):
        lux(result)

    start = time.perf_counter()
    for _ in range(max(1, n // 100)):
        bare()
    timings["Hypothesis alone (per example)"] = (
        (time.perf_counter() - start) / (max(1, n // 100) * 100)
    )
    with open(OUT, "w") as out:
        json.dump(timings, out)


STARTS, CRASHES = [], []


@given(result=st.integers(0, 0xFFFF))
def test_crash(guest, result):
    STARTS.append(time.monotonic())
    guest.bound_for_examples(SENSOR)
    with open(OUT, "w") as out:
        json.dump({"starts": STARTS, "crashes": CRASHES}, out)
    CRASHES.append(time.monotonic())
    guest.agent.write_file("/proc/sysrq-trigger", "c")
"""
)


class Stats:
    """The run's ExampleStats, for the figures."""

    def __init__(self) -> None:
        self.stats = ExampleStats()

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[EXAMPLE_STATS] = self.stats


def run(args: list[str], examples: int) -> ExampleStats:
    settings.register_profile(
        "bench", settings.get_profile(profiles.FUZZ), max_examples=examples, database=None
    )
    settings.load_profile("bench")
    stats = Stats()
    quiet = ["-qq", "--tb=no", "-p", "no:logging", "-p", "no:cacheprovider", "--timeout=0"]
    quiet += ["-W", "ignore::pytest.PytestAssertRewriteWarning"]  # Hypothesis: imported already
    pytest_main([*args, *quiet], [stats])
    return stats.stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--cpu", type=int, default=0)
    opts = parser.parse_args()
    ensure_kernel(ROOT)
    profiles.register(default_cache_dir())
    cpu = f"--roadtest-cpu={opts.cpu}"
    import json
    import os

    with tempfile.TemporaryDirectory() as tmp:
        test_file = Path(tmp) / "test_bench_fuzz.py"
        test_file.write_text(textwrap.dedent(PROPERTIES))
        out = Path(tmp) / "out.json"
        os.environ["BENCH_OUT"] = str(out)
        os.environ["BENCH_N"] = str(opts.examples)

        stats = run([f"{test_file}::test_lux", cpu], opts.examples)
        rate = stats.examples / stats.seconds
        print(
            f"opt3001 lux property: {stats.examples} examples, {rate:.0f} examples/s "
            f"({1000 / rate:.2f} ms each)"
        )
        run([f"{test_file}::test_where_the_time_goes", cpu], 1)
        for name, seconds in json.loads(out.read_text()).items():
            print(f"  {name}: {seconds * 1000:.3f} ms")

        run([f"{test_file}::test_crash", cpu], 10)
        times = json.loads(out.read_text())
        gaps = [s - c for c, s in zip(times["crashes"], times["starts"][1:], strict=False)]
        print(
            f"kernel crash to the next example running: median {statistics.median(gaps):.3f} s "
            f"(min {min(gaps):.3f}, max {max(gaps):.3f}, n={len(gaps)})"
        )

        hostile_examples = max(50, opts.examples // 10)
        stats = run(
            ["--roadtest-hostile", str(ROOT / "tests/drivers/iio/light/test_opt3001.py"), cpu],
            hostile_examples,
        )
        rate = stats.examples / stats.seconds
        print(
            f"hostile opt3001: {stats.examples} examples, {rate:.1f} examples/s, "
            f"{stats.restarts} guest restarts"
        )


if __name__ == "__main__":
    main()
