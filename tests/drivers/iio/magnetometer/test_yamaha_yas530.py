"""YAS530 magnetometer (drivers/iio/magnetometer/yamaha-yas530.c), against the sweep's
register file: no model of the chip, the registers as a plan says.

At probe the driver reads the chip's calibration (16 bytes from 0x90) and takes its
version from the two low bits of the last one. The driver knows versions A (0) and B (1)
only, and named them from a table of two: a version 2 or 3 read past it (UBSAN
array-index-out-of-bounds, which panicked the guest; kernel-patches/iio/0009).

From the driver's registers (the YAS530 datasheet is not public): DEVICE_ID (0x80) reads
0x01; the measurement data (0xb0) has its busy flag in bit 7 of its first byte, clear
here, so each measurement of probe's offset search is ready at once.
"""

from __future__ import annotations

import pytest

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import BindError, I2CDevice, RoadtestSession, read_str

# The driver's I/O after probe follows its clock (its runtime-PM autosuspend writes the
# power-down register when the delay has passed): on a real-time guest (x86_64) that
# write lands before the unbind, under simulated time after. A golden trace cannot hold
# both: the tests run live, under simulated time only.
pytestmark = pytest.mark.roadtest_time("sim")

REG_DEVICE_ID = 0x80
REG_CAL_LAST = 0x9F  # the 16th calibration byte: the version in bits 1:0
YAS530_ID = 0x01


VERSION_A, VERSION_B = 0, 1


def yas530(version: int = VERSION_A) -> RegisterFile:
    return RegisterFile(
        RegisterPlan(registers=((REG_DEVICE_ID, YAS530_ID), (REG_CAL_LAST, version)))
    )


MAGNETOMETER = I2CDevice(
    compatible="yamaha,yas530",
    model=yas530,
    dts="""
        magnetometer@$addr$ {
            compatible = "yamaha,yas530";
            reg = <0x$addr$>;
        };
    """,
)


@pytest.mark.parametrize("version", [VERSION_A, VERSION_B], ids=["A", "B"])
def test_known_versions_bind(guest: RoadtestSession, version: int) -> None:
    with guest.bound(MAGNETOMETER, yas530(version)) as dev:
        assert read_str(dev.path.only("iio:device*") / "name") == "yas530"


@pytest.mark.parametrize("version", [2, 3])
def test_an_unknown_version_is_refused(guest: RoadtestSession, version: int) -> None:
    """Versions 2 and 3, which the calibration's two bits can hold: no chip the driver
    knows, and no crash either."""
    with pytest.raises(BindError):
        with guest.bound(MAGNETOMETER, yas530(version)):
            pass
