"""Foundation benchmarks: guest boot, one opt3001 test run, I2C round trips.

Run by hand (`.venv/bin/python bench/bench_foundation.py`), with the kernel
built. Prints figures; asserts nothing. Each figure is the median of several
runs in this one invocation, so ratios between them are meaningful even on a
noisy shared machine; absolute numbers are only indicative.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from common import median_ms, roadtest_run_seconds

from roadtest.checkout import repo_root
from roadtest.kernel import ensure_kernel
from roadtest.machine.base import BootConfig, TimeMode
from roadtest.machine.uml import UMLGuest
from roadtest.models.base import SimpleSMBusModel
from roadtest.testing.devices import I2CDevice
from roadtest.testing.session import RoadtestSession

ROOT = repo_root()
BENCH_DEVICE = I2CDevice(
    compatible="roadtest,bench",  # no driver has it: the bus address is served by the model only
    model=lambda: SimpleSMBusModel(regs={0: 0x12}, regbytes=2, byteorder="big"),
    dts="""
        bench@$addr$ {
            compatible = "roadtest,bench";
            reg = <0x$addr$>;
        };
    """,
    origin="bench",
)


def bench_boot(runs: int, cpu: int) -> None:
    kernel = ensure_kernel(ROOT)
    boots, totals = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(runs):
            guest = UMLGuest(BootConfig(image=kernel.image, workdir=Path(tmp) / str(i), cpu=cpu))
            start = time.monotonic()
            guest.start()
            boots.append(guest.boot_seconds)
            guest.stop()
            totals.append(time.monotonic() - start)
    print(f"boot to agent ready:      {median_ms(boots)}")
    print(f"boot to poweroff:         {median_ms(totals)}")


def bench_opt3001_run(runs: int) -> None:
    test = ROOT / "tests/drivers/iio/light/test_opt3001.py"
    walls = [roadtest_run_seconds([str(test)]) for _ in range(runs)]
    print(f"`roadtest run` opt3001:   {median_ms(walls)} wall, kernel cached")


def guest_loop_seconds(
    session: RoadtestSession, binary: Path, bus: int, addr: int, count: int
) -> float:
    rc, out, err = session.agent.run(
        [str(binary), f"/dev/i2c-{bus}", hex(addr), str(count)], timeout=600
    )
    if rc != 0:
        raise SystemExit(f"i2c loop failed: {err.decode().strip()}")
    return float(out)


def bench_i2c(count: int, repeats: int, guest_cpu: int, host_cpu: int | None) -> None:
    kernel = ensure_kernel(ROOT)
    # The backend thread inherits this affinity when the session starts it.
    os.sched_setaffinity(0, {host_cpu} if host_cpu is not None else range(os.cpu_count() or 1))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        binary = work / "i2c_rdwr_loop"
        subprocess.run(
            ["gcc", "-O2", "-o", str(binary), str(ROOT / "bench/i2c_rdwr_loop.c")], check=True
        )
        session = RoadtestSession(
            kernel, [BENCH_DEVICE], work / "session", cpu=guest_cpu, time=TimeMode.REAL
        )
        session.start()
        try:
            dev = session.attach(BENCH_DEVICE)
            per_transfer = []
            for _ in range(repeats):
                t0 = time.monotonic()
                guest_loop_seconds(session, binary, session.i2c_bus_number, dev.addr, 0)
                t1 = time.monotonic()
                guest_loop_seconds(session, binary, session.i2c_bus_number, dev.addr, count)
                t2 = time.monotonic()
                per_transfer.append(((t2 - t1) - (t1 - t0)) / count)
            med = statistics.median(per_transfer)
            where = "unpinned" if host_cpu is None else f"CPU {host_cpu}"
            print(
                f"I2C_RDWR (2 msgs), guest CPU {guest_cpu}, backend {where}: "
                f"{med * 1e6:.1f} us per transfer median ({1 / med:,.0f}/s; "
                f"N=0 vs N={count} measured from the host, {repeats} repeats, "
                f"min {min(per_transfer) * 1e6:.1f} us)"
            )
        finally:
            session.stop()


def bench_guest_syscall(cpu: int) -> None:
    kernel = ensure_kernel(ROOT)
    with tempfile.TemporaryDirectory() as tmp:
        binary = Path(tmp) / "guest_syscall_loop"
        subprocess.run(
            ["gcc", "-O2", "-o", str(binary), str(ROOT / "bench/guest_syscall_loop.c")], check=True
        )
        guest = UMLGuest(
            BootConfig(image=kernel.image, workdir=Path(tmp) / "g", cpu=cpu, time=TimeMode.REAL)
        )
        guest.start()
        try:
            _, out, _ = guest.agent.run([str(binary), "20000"])
        finally:
            guest.stop()
    print(
        f"guest getppid() syscall:  {out.decode().strip()} "
        "(UML's ptrace round trip: the floor under any transfer)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--count", type=int, default=20000, help="I2C transfers per guest loop")
    parser.add_argument(
        "--only", choices=["boot", "run", "i2c", "syscall", "backend"], action="append"
    )
    args = parser.parse_args()
    only = set(args.only or ["boot", "run", "i2c", "syscall", "backend"])
    print(
        f"host: {os.cpu_count()} CPUs; guest pinned to CPU 0; backend is a thread of this process"
    )
    if "boot" in only:
        bench_boot(args.runs, cpu=0)
    if "run" in only:
        bench_opt3001_run(args.runs)
    if "syscall" in only:
        bench_guest_syscall(cpu=0)
    if "i2c" in only:
        for host_cpu in (0, 1, None):
            bench_i2c(args.count, 3, guest_cpu=0, host_cpu=host_cpu)


if __name__ == "__main__":
    main()
