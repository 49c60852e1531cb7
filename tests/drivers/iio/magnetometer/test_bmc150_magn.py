"""Bosch BMC150 magnetometer (a BMM150) on I2C (drivers/iio/magnetometer/bmc150_magn.c and
bmc150_magn_i2c.c), against a model of its registers (roadtest/models/bmm150.py cites
the datasheet), through the IIO sysfs ABI (Documentation/ABI/testing/sysfs-bus-iio).

The driver compensates each reading with the trim data Bosch programs into 5Dh-71h,
which the datasheet leaves to Bosch's software. It divided by the trim word xyz1 where
the measured hall resistance RHALL read 0, and for Z by a sum of the trim words z1 and z2
scaled by RHALL: a blank trim area (all zeros) divided by zero on every reading, a kernel
crash (SIGFPE under UML). What a chip without trim data should report is not written
anywhere; the kernel must at least live on (kernel-patches/iio/0026 reports such a
reading as the driver's overflow value, -2147483648, as it does an overflowed axis).
"""

from __future__ import annotations

import pytest

from roadtest.models.bmm150 import BMM150
from roadtest.testing import BoundDevice, I2CDevice, RoadtestSession, read_int
from roadtest.testing.guestpath import GuestPath

OVERFLOW = -(1 << 31)  # the driver's value for an axis it cannot give

MAGNETOMETER = I2CDevice(
    compatible="bosch,bmc150_magn",
    model=BMM150,
    dts="""
        magnetometer@$addr$ {
            compatible = "bosch,bmc150_magn";
            reg = <0x$addr$>;
        };
    """,
)


def iio(dev: BoundDevice[BMM150]) -> GuestPath:
    return dev.path.only("iio:device*")


@pytest.mark.parametrize("rhall", [0, 6000])
def test_a_blank_trim_area_does_not_crash_a_reading(guest: RoadtestSession, rhall: int) -> None:
    """All trim bytes 0, with the hall resistance 0 or not: each axis reads (the
    overflow value, as the driver has no compensation to give), and the kernel lives."""
    with guest.bound(MAGNETOMETER, BMM150()) as dev:
        dev.model.measure(x=100, y=-100, z=200, rhall=rhall)
        for axis in "xyz":
            value = read_int(iio(dev) / f"in_magn_{axis}_raw")
            if rhall == 0 or axis == "z":
                assert value == OVERFLOW
