"""HX9023S capacitive proximity sensor (drivers/iio/proximity/hx9023s.c), against the
sweep's register file: no model of the chip, the registers as a plan says (DEVICE_ID,
0x60, reads the chip's ID 0x1d; every other register 0).

The sampling frequency is the inverse of the chip's scan period, one of a table of
periods in milliseconds. The driver turned a written frequency into a period by dividing
10^9 by the frequency in micro-hertz, truncated to 32 bits: a frequency whose micro-hertz
are a multiple of 2^32 (4294.967296 Hz, or -2147483648 Hz) divided by zero and killed the
kernel (kernel-patches/iio/0011). No period of the table matches such a frequency: the
write is refused, and the sampling frequency stays what it was.
"""

from __future__ import annotations

import pytest

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import BoundDevice, I2CDevice, RoadtestSession, read_float, write_str
from roadtest.testing.guestpath import GuestPath

pytestmark = pytest.mark.roadtest_kernel(
    ">=6.12",
    reason="60df548277b7 (\"iio: proximity: Add driver support for TYHX's HX9023S capacitive "
    'proximity sensor", v6.12) added the driver',
)

REG_DEVICE_ID = 0x60
HX9023S_ID = 0x1D


def hx9023s() -> RegisterFile:
    return RegisterFile(RegisterPlan(registers=((REG_DEVICE_ID, HX9023S_ID),)))


SENSOR = I2CDevice(
    compatible="tyhx,hx9023s",
    model=hx9023s,
    dts="""
        proximity@$addr$ {
            compatible = "tyhx,hx9023s";
            reg = <0x$addr$>;
        };
    """,
)


def sampling_frequency(dev: BoundDevice[RegisterFile]) -> GuestPath:
    return dev.path.only("iio:device*") / "sampling_frequency"


@pytest.mark.parametrize("hertz", ["1", "10", "0.5"])
def test_sampling_frequency_reads_back(guest: RoadtestSession, hertz: str) -> None:
    """A frequency whose period (1 s, 100 ms, 2 s) the chip has reads back as written."""
    with guest.bound(SENSOR) as dev:
        write_str(sampling_frequency(dev), hertz)
        assert read_float(sampling_frequency(dev)) == pytest.approx(float(hertz))


@pytest.mark.parametrize("hertz", ["0", "4294.967296", "-2147483648", "-1", "-0.5"])
def test_a_frequency_of_no_period_is_refused(guest: RoadtestSession, hertz: str) -> None:
    """0, a negative frequency, or one too high for any period: refused, and the
    sampling frequency is the one set before."""
    with guest.bound(SENSOR) as dev:
        write_str(sampling_frequency(dev), "10")
        with pytest.raises(OSError):
            write_str(sampling_frequency(dev), hertz)
        assert read_float(sampling_frequency(dev)) == pytest.approx(10.0)
