"""Make tracecmd-report.txt, the real `trace-cmd report` the importer's unit tests read.

Run by hand (`.venv/bin/python tests/unit/data/capture_tracecmd_report.py`), with the
kernel built. It boots a guest, turns on the kernel's i2c events with trace-cmd
(roadtest/pytest_plugin/tracecmd_capture.py, as --roadtest-trace-cmd does), and makes:

- the opt3001 driver's traffic at 0x44: probe, one lux reading (result 0x3456), remove;
- I2C_RDWR transfers from a program in the guest: to a register model at 0x50 (a
  write + read, a three-message transfer, a write of 80 values and a read of 70 bytes,
  more than the 64 the kernel's own trace file shows, a zero-length write, a lone
  read, a transfer that also reads the model at 0x51); a read the model at 0x51
  refuses after its register write succeeded (ret=1 of 2); and a transfer to 0x77,
  where nothing answers (ret=0).

Then `trace-cmd report` (its default format: microsecond timestamps) of the capture
is written next to this file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from roadtest.checkout import repo_root
from roadtest.kernel import ensure_kernel
from roadtest.models.base import ModelError, SimpleSMBusModel
from roadtest.models.opt3001 import OPT3001
from roadtest.pytest_plugin.tracecmd_capture import TraceCmdCapture
from roadtest.testing.devices import I2CDevice
from roadtest.testing.session import RoadtestSession
from roadtest.testing.sysfs import read_float

OUT = Path(__file__).with_name("tracecmd-report.txt")

SENSOR = I2CDevice(
    compatible="ti,opt3001",
    model=OPT3001,
    dts='light-sensor@$addr$ { compatible = "ti,opt3001"; reg = <0x$addr$>; };',
    addr=0x44,
    origin="capture.SENSOR",
)


class Refusing(SimpleSMBusModel):
    def reg_read(self, addr: int) -> int:
        if addr == 0xF0:
            raise ModelError("register 0xf0 is not readable (on purpose)")
        return super().reg_read(addr)


REGS = I2CDevice(
    compatible="roadtest,capture-regs",  # no driver: only the model answers there
    model=lambda: SimpleSMBusModel({r: r ^ 0x5A for r in range(256)}),
    dts='regs@$addr$ { compatible = "roadtest,capture-regs"; reg = <0x$addr$>; };',
    addr=0x50,
    origin="capture.REGS",
)
REFUSING = I2CDevice(
    compatible="roadtest,capture-refusing",
    model=lambda: Refusing({r: r for r in range(256)}),
    dts='refusing@$addr$ { compatible = "roadtest,capture-refusing"; reg = <0x$addr$>; };',
    addr=0x51,
    origin="capture.REFUSING",
)

# Each transfer: messages [addr, "w", hex bytes] or [addr, "r", length].
TRANSFERS = [
    [[0x50, "w", "10"], [0x50, "r", 4]],
    [[0x50, "w", "20"], [0x50, "r", 1], [0x50, "r", 2]],
    [[0x50, "w", "00" + bytes(range(0x80, 0xD0)).hex()]],
    [[0x50, "w", "00"], [0x50, "r", 70]],
    [[0x50, "w", ""]],
    [[0x50, "r", 2]],
    [[0x50, "w", "30"], [0x51, "r", 1]],
    [[0x51, "w", "f0"], [0x51, "r", 1]],
    [[0x77, "w", "00"], [0x77, "r", 1]],
]

# Runs in the guest, with the host's /usr/bin/python3: one I2C_RDWR ioctl per transfer.
I2C_RDWR_PROGRAM = r"""
import ctypes, fcntl, json, os, sys

class Msg(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_uint16), ("flags", ctypes.c_uint16),
                ("len", ctypes.c_uint16), ("buf", ctypes.c_void_p)]

class Data(ctypes.Structure):
    _fields_ = [("msgs", ctypes.POINTER(Msg)), ("nmsgs", ctypes.c_uint32)]

fd = os.open(sys.argv[1], os.O_RDWR)
for transfer in json.loads(sys.argv[2]):
    msgs = (Msg * len(transfer))()
    keep = []
    for i, (addr, kind, arg) in enumerate(transfer):
        data = bytes.fromhex(arg) if kind == "w" else bytes(arg)
        buf = (ctypes.c_char * max(len(data), 1)).from_buffer_copy(data or b"\0")
        keep.append(buf)
        msgs[i] = Msg(addr, 1 if kind == "r" else 0, len(data), ctypes.addressof(buf))
    rdwr = Data(msgs, len(transfer))
    try:
        print(fcntl.ioctl(fd, 0x0707, ctypes.addressof(rdwr)))
    except OSError as err:
        print(err)
"""


def main() -> int:
    kernel = ensure_kernel(repo_root())
    with tempfile.TemporaryDirectory() as tmp:
        session = RoadtestSession(kernel, [SENSOR, REGS, REFUSING], Path(tmp) / "session")
        session.start()
        try:
            guest = session.ensure_guest()
            capture = TraceCmdCapture(Path(tmp) / "capture")
            regs, refusing = session.attach(REGS), session.attach(REFUSING)
            capture.start(guest)
            with session.bound(SENSOR) as dev:
                dev.model.result = 0x3456
                print("lux", read_float(dev.path.only("iio:device*") / "in_illuminance_input"))
            rc, out, err = session.agent.run(
                [
                    "/usr/bin/python3",
                    "-I",
                    "-c",
                    I2C_RDWR_PROGRAM,
                    f"/dev/i2c-{session.i2c_bus_number}",
                    json.dumps(TRANSFERS),
                ]
            )
            print("I2C_RDWR results:", out.decode().split(), err.decode())
            session.detach(regs)
            session.detach(refusing)
            dat = capture.finish(guest, "capture")
            assert dat is not None
            report = subprocess.run(
                ["trace-cmd", "report", "-i", str(dat)], capture_output=True, text=True, check=True
            )
        finally:
            session.stop()
    OUT.write_text(report.stdout)
    print(f"wrote {OUT} ({len(report.stdout.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    sys.exit(main())
