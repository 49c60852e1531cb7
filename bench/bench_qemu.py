"""QEMU's costs: the driver suite's wall time on UML, on --machine x86_64 and under --vm
qemu (as ratios to UML's), and an x86_64 guest's boot to its agent, with what boot
options buy.

Run by hand (`.venv/bin/python bench/bench_qemu.py [--suite SELECTION]`), with the UML
and x86_64 kernels built (`roadtest build`, `roadtest build --machine x86_64`). The
three suite runs go one after the other in one run of this script; boot variants
alternate, so their ratios hold on a noisy machine. Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from roadtest.arch.x86_64 import X86_64
from roadtest.checkout import repo_root
from roadtest.kernel import Kernel, ensure_kernel
from roadtest.machine.base import BootConfig
from roadtest.machine.qemu import QEMUGuest, accelerator, find_qemu

ROOT = repo_root()
ROADTEST = [sys.executable, "-m", "roadtest.cli"]

# Kernel arguments to try, each against the default: what each buys of the boot.
VARIANTS: dict[str, list[str]] = {
    "default": [],
    "printk on the console (no quiet)": ["loglevel=7"],
    "lpj= (no delay-loop calibration)": ["lpj=4000000"],
    "no ACPI (acpi=off)": ["acpi=off"],
}


def boot_once(kernel: Kernel, extra: list[str], cpu: int) -> tuple[float, float]:
    """Host seconds from starting QEMU to the agent's ready, and the guest's uptime then
    (the kernel's part is up to `Run ... as init`, the rest is Python over 9p)."""
    with tempfile.TemporaryDirectory(prefix="bench-qemu-") as tmp:
        guest = QEMUGuest(
            BootConfig(image=kernel.image, workdir=Path(tmp), cpu=cpu, extra_args=extra)
        )
        guest.start()
        try:
            uptime = float(guest.agent.read_file("/proc/uptime").split()[0])
            return guest.boot_seconds, uptime
        finally:
            guest.stop()


def suite_seconds(args: list[str]) -> tuple[float, int]:
    start = time.monotonic()
    proc = subprocess.run([*ROADTEST, *args], cwd=ROOT, capture_output=True, text=True)
    elapsed = time.monotonic() - start
    tail = (proc.stdout.strip().splitlines() or [""])[-1]
    print(f"  roadtest {' '.join(args)}: {elapsed:.1f} s, status {proc.returncode}: {tail}")
    return elapsed, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boots", type=int, default=3, help="boots per variant")
    parser.add_argument("--cpu", type=int, default=1)
    parser.add_argument("--suite", default="tests/drivers", help="the selection the suites run")
    parser.add_argument("--no-suites", action="store_true", help="only the boot figures")
    opts = parser.parse_args()
    kernel = ensure_kernel(ROOT, target=X86_64)
    ensure_kernel(ROOT)
    accel = accelerator()
    print(f"{find_qemu().describe}, {accel.name} ({accel.why}); kernel {kernel.image}")

    results: dict[str, list[tuple[float, float]]] = {name: [] for name in VARIANTS}
    for _ in range(opts.boots):
        for name, extra in VARIANTS.items():  # alternating: a noisy minute hits all alike
            results[name].append(boot_once(kernel, extra, opts.cpu))
    base = statistics.median(b for b, _ in results["default"])
    print("x86_64 boot to agent ready (median of", opts.boots, "each):")
    for name, runs in results.items():
        host = statistics.median(b for b, _ in runs)
        guest = statistics.median(u for _, u in runs)
        print(f"  {name:36s} {host:5.2f} s host, guest uptime {guest:5.2f} s, x{host / base:.2f}")

    if opts.no_suites:
        return
    print(f"suite wall time ({opts.suite}):")
    uml, _ = suite_seconds(["run", opts.suite, "-q", "-p", "no:cacheprovider"])
    x86, _ = suite_seconds(
        ["run", "--machine", "x86_64", opts.suite, "-q", "-p", "no:cacheprovider"]
    )
    vm, _ = suite_seconds(["run", "--vm", "qemu", opts.suite, "-q", "-p", "no:cacheprovider"])
    print(f"  ratios to UML: x86_64 x{x86 / uml:.1f}, --vm qemu x{vm / uml:.1f}")


if __name__ == "__main__":
    main()
