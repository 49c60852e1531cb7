"""The sanitizer kernel's costs: boot, guest memory and kmemleak scans, against the main kernel.

Run by hand (`.venv/bin/python bench/bench_sanitizers.py`), with both kernels built
(`roadtest build`, `roadtest build --sanitizers`). Boots alternate between the two
kernels, so their ratio holds on a noisy machine; prints figures, asserts nothing.
The driver suite's wall time on each: time `roadtest run [--sanitizers] <tests>`.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import median_ms

from roadtest.arch.um import UM
from roadtest.checkout import repo_root
from roadtest.kernel import Kernel, ensure_kernel
from roadtest.kernel.variants import SANITIZERS
from roadtest.machine.base import BootConfig, Machine
from roadtest.machine.uml import UMLGuest
from roadtest.testing import kmemleak

ROOT = repo_root()


def _boot(kernel: Kernel, workdir: Path, cpu: int, args: tuple[str, ...]) -> Machine:
    guest = UMLGuest(BootConfig(image=kernel.image, workdir=workdir, cpu=cpu, extra_args=[*args]))
    guest.start()
    return guest


def _available_kb(guest: Machine) -> int:
    for line in guest.agent.read_file("/proc/meminfo").decode().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1])
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def _sleeper(guest: Machine) -> Callable[[float], None]:
    """RoadtestSession.sleep, for a bare guest."""

    def sleep(seconds: float) -> None:
        guest.agent.run(["/bin/sleep", f"{seconds:g}"], timeout=30.0 + seconds)

    return sleep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cpu", type=int, default=0)
    opts = parser.parse_args()
    main_kernel = ensure_kernel(ROOT)
    fuzz_kernel = SANITIZERS.ensure(ROOT, UM)
    kinds = {"main": (main_kernel, ()), "sanitizer": (fuzz_kernel, SANITIZERS.boot_args)}
    boots: dict[str, list[float]] = {k: [] for k in kinds}
    available: dict[str, list[int]] = {k: [] for k in kinds}
    scans: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(opts.runs):
            for name, (kernel, args) in kinds.items():
                guest = _boot(kernel, Path(tmp) / f"{name}-{i}", opts.cpu, args)
                boots[name].append(guest.boot_seconds)
                available[name].append(_available_kb(guest))
                if name == "sanitizer":
                    start = time.monotonic()
                    kmemleak.scan(guest.agent, _sleeper(guest))
                    scans.append(time.monotonic() - start)
                guest.stop()
    for name in kinds:
        print(f"boot to agent ready, {name + ':':11} {median_ms(boots[name])}")
    ratio = statistics.median(boots["sanitizer"]) / statistics.median(boots["main"])
    print(f"boot, sanitizer / main:        {ratio:.2f}")
    for name in kinds:
        print(f"MemAvailable after boot, {name + ':':11} {statistics.median(available[name])} kB")
    print(f"kmemleak_scan() after boot:    {median_ms(scans)}")


if __name__ == "__main__":
    main()
