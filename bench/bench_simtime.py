"""Simulated time against basic time-travel: idle CPU, guest time per transfer, round trips, boot.

Run by hand (`.venv/bin/python bench/bench_simtime.py`), with the kernel built.
Prints figures; asserts nothing. Each pair is measured side by side in this one
invocation (sim, travel, sim, travel, ...), medians of `--runs`; the guest and
the test process (with its backend) are pinned to one CPU, as in make test.
The suite's wall time, `-n 2` against `-n 1`, is farm-bench's (docs/internals.md,
Benchmarks): see the note of the simulated-time issue.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_foundation import BENCH_DEVICE, guest_loop_seconds
from common import own_cpu

from roadtest.backend.i2c_transfer import DEFAULT_BUS_HZ
from roadtest.checkout import repo_root
from roadtest.kernel import ensure_kernel
from roadtest.machine.base import TimeMode
from roadtest.machine.process import ProcessGuest
from roadtest.testing.session import RoadtestSession

ROOT = repo_root()
MODES = ("sim", "travel")


class Guest:
    """A booted session in one time mode, with the bench device and the I2C loop."""

    def __init__(self, mode: str, cpu: int, work: Path, binary: Path) -> None:
        kernel = ensure_kernel(ROOT)
        self.mode = mode
        self.binary = binary
        self.session = RoadtestSession(kernel, [BENCH_DEVICE], work, cpu=cpu, time=TimeMode(mode))
        started = time.monotonic()
        self.session.start()
        self.boot = time.monotonic() - started
        self.device = self.session.attach(BENCH_DEVICE)
        guest = self.session.machine
        assert isinstance(guest, ProcessGuest)
        self.machine = guest

    def idle_cpu(self, seconds: float) -> float:
        before = self.machine.cpu_seconds()
        time.sleep(seconds)
        return (self.machine.cpu_seconds() - before) / seconds

    def i2c_seconds(self, count: int) -> float:
        """Host seconds per transfer: N transfers less an empty loop, from the host."""
        bus, addr = self.session.i2c_bus_number, self.device.addr
        t0 = time.monotonic()
        guest_loop_seconds(self.session, self.binary, bus, addr, 0)
        t1 = time.monotonic()
        guest_loop_seconds(self.session, self.binary, bus, addr, count)
        t2 = time.monotonic()
        return ((t2 - t1) - (t1 - t0)) / count

    def guest_ns_per_transfer(self, count: int) -> float:
        """Simulated ns that N transfers move the guest's clock, less an empty loop's."""
        controller = self.session.backend.controller
        assert controller is not None
        bus, addr = self.session.i2c_bus_number, self.device.addr
        t0 = controller.now
        guest_loop_seconds(self.session, self.binary, bus, addr, 0)
        t1 = controller.now
        guest_loop_seconds(self.session, self.binary, bus, addr, count)
        t2 = controller.now
        return ((t2 - t1) - (t1 - t0)) / count

    def ping_seconds(self, count: int) -> float:
        agent = self.session.agent
        start = time.monotonic()
        for _ in range(count):
            agent.ping()
        return (time.monotonic() - start) / count

    def stop(self) -> None:
        self.session.stop()


def side_by_side(
    runs: int, make: Callable[[str], Guest], measure: Callable[[Guest], float]
) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {mode: [] for mode in MODES}
    for _ in range(runs):
        for mode in MODES:
            guest = make(mode)
            try:
                figures[mode].append(measure(guest))
            finally:
                guest.stop()
    return figures


def show(what: str, figures: dict[str, list[float]], unit: str, scale: float) -> None:
    sim, travel = (statistics.median(figures[m]) for m in MODES)
    print(
        f"{what:<34} sim {sim * scale:9.1f} {unit}   travel {travel * scale:9.1f} {unit}"
        f"   sim/travel {sim / travel if travel else float('inf'):.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--count", type=int, default=1000, help="I2C transfers per loop")
    parser.add_argument("--cpu", type=int, default=own_cpu())
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.cpu})  # the backend's thread inherits it
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        binary = work / "i2c_rdwr_loop"
        subprocess.run(
            ["gcc", "-O2", "-o", str(binary), str(ROOT / "bench/i2c_rdwr_loop.c")], check=True
        )
        boots = iter(range(1 << 30))

        def make(mode: str) -> Guest:
            return Guest(mode, args.cpu, work / f"{mode}-{next(boots)}", binary)

        print(f"guest and test process on CPU {args.cpu}; medians of {args.runs}")
        show("boot to agent ready", side_by_side(args.runs, make, lambda g: g.boot), "ms", 1e3)
        show(
            "idle guest's CPU over 2 s",
            side_by_side(args.runs, make, lambda g: g.idle_cpu(2.0)),
            "%",
            100,
        )
        show(
            "I2C_RDWR round trip (2 msgs)",
            side_by_side(args.runs, make, lambda g: g.i2c_seconds(args.count)),
            "us",
            1e6,
        )
        show("agent ping", side_by_side(args.runs, make, lambda g: g.ping_seconds(300)), "us", 1e6)
        guest = make("sim")
        try:
            per = guest.guest_ns_per_transfer(args.count)
        finally:
            guest.stop()
        # The loop's transfer: a 1-byte register write and a 2-byte read, at the bus clock.
        bits = (1 + 9 * 2) + (1 + 9 * 3) + 1
        expected = bits * 1e9 / DEFAULT_BUS_HZ
        print(
            f"guest time per transfer under sim: {per / 1e3:.2f} us for {args.count} transfers; "
            f"their bus time at {DEFAULT_BUS_HZ // 1000} kHz: {expected / 1e3:.2f} us "
            f"(ratio {per / expected:.4f})"
        )


if __name__ == "__main__":
    main()
