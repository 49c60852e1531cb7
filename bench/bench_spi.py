"""An SPI register read's round trip beside an I2C one, under simulated time and time-travel.

Run by hand (`.venv/bin/python bench/bench_spi.py`), with the kernel built. Prints
figures; asserts nothing. One guest carries both devices, so each pair of loops runs in
the same guest: the I2C read is I2C_RDWR of two messages (write the register number,
read two bytes: i2c_rdwr_loop.c), the SPI read SPI_IOC_MESSAGE of two transfers (write
the register number, read two bytes, the chip select held: spi_message_loop.c) through
spidev, the guest's spi-virtio and the backend's virtio-spi device. Each loop's time is
measured from the host (N round trips less an empty loop, per round trip); guests are
booted side by side (sim, travel, sim, travel, ...), medians of `--runs`; the guest and
the test process (with its backend) are pinned to one CPU, as in make test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench_foundation import BENCH_DEVICE, guest_loop_seconds
from common import own_cpu

from roadtest.backend.i2c_transfer import DEFAULT_BUS_HZ
from roadtest.checkout import repo_root
from roadtest.kernel import ensure_kernel
from roadtest.machine.base import TimeMode
from roadtest.models.base import SPIModel
from roadtest.testing.devices import SPIDevice
from roadtest.testing.session import RoadtestSession

ROOT = repo_root()
MODES = ("sim", "travel")
SPI_HZ = 1_000_000


class SPIRegisters(SPIModel):
    """A register-style SPI chip as small as BENCH_DEVICE's: a message's first byte is the
    register number (bit 7 set: a read), the bytes after it register 0's 0x1234."""

    def __init__(self) -> None:
        self.sent = 0

    def select(self) -> None:
        self.sent = 0

    def transfer(self, tx: bytes | None, length: int, mode: int, bits_per_word: int) -> bytes:
        stream = b"\xff\x12\x34"
        out = bytes(stream[i] if i < len(stream) else 0xFF for i in range(self.sent, length))
        self.sent += length
        return out.ljust(length, b"\xff")


SPI_BENCH = SPIDevice(
    compatible="rohm,dh2228fv",  # in spidev's table: /dev/spidevB.C
    model=SPIRegisters,
    dts=f"""
        spidev@$addr$ {{
            compatible = "rohm,dh2228fv";
            reg = <$addr$>;
            spi-max-frequency = <{SPI_HZ}>;
        }};
    """,
    origin="bench_spi",
)


class Guest:
    """A booted session in one time mode with both bench devices bound."""

    def __init__(self, mode: str, cpu: int, work: Path, binaries: dict[str, Path]) -> None:
        kernel = ensure_kernel(ROOT)
        self.binaries = binaries
        self.session = RoadtestSession(
            kernel, [BENCH_DEVICE, SPI_BENCH], work, cpu=cpu, time=TimeMode(mode)
        )
        self.session.start()
        self.i2c = self.session.attach(BENCH_DEVICE)
        spi = self.session.attach(SPI_BENCH)
        spi.bind()
        node = self.session.agent.listdir(f"{spi.path}/spidev")[0]
        self.spidev = f"/dev/{node}"

    def loop(self, bus: str, count: int) -> None:
        if bus == "i2c":
            session = self.session
            guest_loop_seconds(
                session, self.binaries["i2c"], session.i2c_bus_number, self.i2c.addr, count
            )
            return
        rc, _, err = self.session.agent.run(
            [str(self.binaries["spi"]), self.spidev, str(count)], timeout=600
        )
        if rc != 0:
            raise SystemExit(f"spi loop failed: {err.decode().strip()}")

    def seconds(self, bus: str, count: int) -> float:
        """Host seconds per round trip: N round trips less an empty loop."""
        t0 = time.monotonic()
        self.loop(bus, 0)
        t1 = time.monotonic()
        self.loop(bus, count)
        t2 = time.monotonic()
        return ((t2 - t1) - (t1 - t0)) / count

    def guest_ns(self, bus: str, count: int) -> float:
        """Simulated ns that a round trip moves the guest's clock (sim only)."""
        controller = self.session.backend.controller
        assert controller is not None
        t0 = controller.now
        self.loop(bus, 0)
        t1 = controller.now
        self.loop(bus, count)
        t2 = controller.now
        return float((t2 - t1) - (t1 - t0)) / count

    def stop(self) -> None:
        self.session.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--count", type=int, default=1000, help="round trips per loop")
    parser.add_argument("--cpu", type=int, default=own_cpu())
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.cpu})  # the backend's thread inherits it
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        binaries = {"i2c": work / "i2c_rdwr_loop", "spi": work / "spi_message_loop"}
        for bus, binary in binaries.items():
            source = "i2c_rdwr_loop.c" if bus == "i2c" else "spi_message_loop.c"
            subprocess.run(
                ["gcc", "-O2", "-o", str(binary), str(ROOT / "bench" / source)], check=True
            )
        figures: dict[tuple[str, str], list[float]] = {
            (mode, bus): [] for mode in MODES for bus in ("i2c", "spi")
        }
        guest_time: dict[str, list[float]] = {"i2c": [], "spi": []}
        for run in range(args.runs):
            for mode in MODES:
                guest = Guest(mode, args.cpu, work / f"{mode}-{run}", binaries)
                try:
                    for bus in ("i2c", "spi", "i2c", "spi"):
                        figures[(mode, bus)].append(guest.seconds(bus, args.count))
                    if mode == "sim":
                        for bus in ("i2c", "spi"):
                            guest_time[bus].append(guest.guest_ns(bus, args.count))
                finally:
                    guest.stop()

        def med(mode: str, bus: str) -> float:
            return statistics.median(figures[(mode, bus)])

        print(
            f"guest and test process on CPU {args.cpu}; {args.count} round trips a loop; "
            f"medians of {args.runs} guests a mode, 2 loops a bus each"
        )
        print(f"{'round trip (host us)':<24}{'I2C':>10}{'SPI':>10}{'SPI/I2C':>10}")
        for mode in MODES:
            i2c, spi = med(mode, "i2c"), med(mode, "spi")
            print(f"{mode:<24}{i2c * 1e6:>10.1f}{spi * 1e6:>10.1f}{spi / i2c:>10.2f}")
        for bus in ("i2c", "spi"):
            sim, travel = med("sim", bus), med("travel", bus)
            print(f"{bus.upper()} sim/travel: {sim / travel:.2f}")
        # Bus time of one round trip: I2C a start, address and ack, the register byte, a
        # repeated start, address, two bytes, a stop; SPI 3 bytes at the node's clock.
        i2c_bits = (1 + 9 * 2) + (1 + 9 * 3) + 1
        expected = {"i2c": i2c_bits * 1e9 / DEFAULT_BUS_HZ, "spi": 3 * 8 * 1e9 / SPI_HZ}
        for bus in ("i2c", "spi"):
            per = statistics.median(guest_time[bus])
            print(
                f"{bus.upper()} guest time a round trip under sim: {per / 1e3:.2f} us; its bus "
                f"time: {expected[bus] / 1e3:.2f} us (ratio {per / expected[bus]:.3f})"
            )


if __name__ == "__main__":
    main()
