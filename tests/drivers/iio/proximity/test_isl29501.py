"""ISL29501 time-of-flight sensor (drivers/iio/proximity/isl29501.c), against the sweep's
register file: no model of the chip, the registers as a plan says (DEVICE_ID, 0x00, reads
the chip's ID 0x0a; every other register 0).

The ISL29501 samples once every (n + 1) x 450 us, n the 8-bit sample period register:
sampling frequencies from 2222 Hz (n = 0) down to 8.68 Hz (n = 255). The driver turned a
written frequency into n by dividing by it in micro-hertz, an int: 0 divided by zero,
as did a frequency whose micro-hertz wrapped to 0 in 32 bits (4294.967296 Hz,
-2147483648 Hz), and killed the kernel (kernel-patches/iio/0012). Those are refused now,
and the sampling frequency stays what it was.
"""

from __future__ import annotations

import pytest

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import BoundDevice, I2CDevice, RoadtestSession, read_float, write_str
from roadtest.testing.guestpath import GuestPath

REG_DEVICE_ID = 0x00
ISL29501_ID = 0x0A
SAMPLE_STEP_S = 450e-6


def isl29501() -> RegisterFile:
    return RegisterFile(RegisterPlan(registers=((REG_DEVICE_ID, ISL29501_ID),)))


SENSOR = I2CDevice(
    compatible="renesas,isl29501",
    model=isl29501,
    dts="""
        proximity@$addr$ {
            compatible = "renesas,isl29501";
            reg = <0x$addr$>;
        };
    """,
)


def sampling_frequency(dev: BoundDevice[RegisterFile]) -> GuestPath:
    return dev.path.only("iio:device*") / "sampling_frequency"


@pytest.mark.parametrize("hertz", [10.0, 100.0, 2222.0])
def test_sampling_frequency_reads_back(guest: RoadtestSession, hertz: float) -> None:
    """A frequency in the chip's range reads back as the nearest one its period register
    gives: within one 450 us step of the period written."""
    with guest.bound(SENSOR) as dev:
        write_str(sampling_frequency(dev), f"{hertz}")
        period = 1 / read_float(sampling_frequency(dev))
        assert period == pytest.approx(1 / hertz, abs=SAMPLE_STEP_S)


@pytest.mark.parametrize("hertz", ["0", "4294.967296", "-2147483648", "-1"])
def test_a_frequency_of_no_period_is_refused(guest: RoadtestSession, hertz: str) -> None:
    """0, a negative frequency, or one above 2222 Hz: refused, and the sampling frequency
    is the one set before."""
    with guest.bound(SENSOR) as dev:
        write_str(sampling_frequency(dev), "100")
        before = read_float(sampling_frequency(dev))
        with pytest.raises(OSError):
            write_str(sampling_frequency(dev), hertz)
        assert read_float(sampling_frequency(dev)) == before
