"""Melexis MLX90632 infrared thermometer (drivers/iio/temperature/mlx90632.c), against a
model of its memory (roadtest/models/mlx90632.py cites the datasheet), through the IIO
sysfs ABI (Documentation/ABI/testing/sysfs-bus-iio).

The datasheet's ambient temperature divides by VR_Ta, which the ambient readings RAM_6
and RAM_9 and the calibration constant Gb give; the object temperature by more terms of
the RAM and EEPROM, and by the emissivity. A chip whose RAM and EEPROM read 0 (blank, or
not the chip its version claims) makes these 0: the driver divided by them, a kernel
crash (SIGFPE under UML). It also took an emissivity of 0 (or below its resolution,
0.001) and divided by it at the next object reading. A temperature that cannot be
computed is an error to read, and an emissivity of 0 one to write (emissivity is in
(0, 1]); kernel-patches/iio/0027 makes them so.
"""

from __future__ import annotations

import errno

import pytest

from roadtest.models.mlx90632 import MLX90632
from roadtest.testing import BoundDevice, I2CDevice, RoadtestSession, read_str, write_str
from roadtest.testing.guestpath import GuestPath

THERMOMETER = I2CDevice(
    compatible="melexis,mlx90632",
    model=MLX90632,
    dts="""
        thermometer@$addr$ {
            compatible = "melexis,mlx90632";
            reg = <0x$addr$>;
        };
    """,
)


def iio(dev: BoundDevice[MLX90632]) -> GuestPath:
    return dev.path.only("iio:device*")


def test_a_blank_chip_has_no_ambient_temperature(guest: RoadtestSession) -> None:
    """RAM and EEPROM all 0 (but the version): VR_Ta is 0, no temperature to give."""
    with guest.bound(THERMOMETER, MLX90632()) as dev:
        with pytest.raises(OSError):
            read_str(iio(dev) / "in_temp_ambient_input")


@pytest.mark.parametrize("cycle_position", [1, 2])
def test_a_blank_chip_has_no_object_temperature(
    guest: RoadtestSession, cycle_position: int
) -> None:
    """The same blank chip, a measurement at either cycle position: no temperature."""
    with guest.bound(THERMOMETER, MLX90632()) as dev:
        dev.model.set_status(cycle_position)
        with pytest.raises(OSError):
            read_str(iio(dev) / "in_temp_object_input")


@pytest.mark.parametrize("emissivity", ["0", "0.0005"])
def test_an_emissivity_of_0_is_refused(guest: RoadtestSession, emissivity: str) -> None:
    """0, and what the driver's resolution of 0.001 makes 0, are refused; the emissivity
    stays what it was."""
    with guest.bound(THERMOMETER, MLX90632()) as dev:
        attr = iio(dev) / "in_temp_object_calibemissivity"
        write_str(attr, "0.5")
        with pytest.raises(OSError) as raised:
            write_str(attr, emissivity)
        assert raised.value.errno == errno.EINVAL
        assert float(read_str(attr)) == 0.5
