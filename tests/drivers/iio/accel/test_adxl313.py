"""ADXL313 accelerometer (drivers/iio/accel/adxl313_core.c, adxl313_i2c.c): its sampling
frequency, against the sweep's register file: no model of the chip, the registers as a
plan says.

The driver reads the sampling frequency from BW_RATE at each read. Its table starts at
6.25 Hz; 6.12 indexed it with a lower rate code too, reading before the table (UBSAN
panicked the guest; kernel-patches/iio/0007).

From the ADXL313 datasheet: DEVID_0 (0x00) 0xAD, DEVID_1 (0x01) 0x1D, PARTID (0x02) 0xCB;
BW_RATE (0x2C) bits 3:0 are the rate code, 0x0A (100 Hz) at reset; the output data rates
are 6.25 Hz to 3200 Hz, codes 0110 to 1111, each twice the one before.
"""

from __future__ import annotations

import pytest

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import BoundDevice, I2CDevice, RoadtestSession, read_float
from roadtest.testing.guestpath import GuestPath

REG_BW_RATE = 0x2C
RATE_100HZ = 0x0A
# Rate code: output data rate in Hz.
RATES = {0x06 + n: 6.25 * 2**n for n in range(10)}

PLAN = RegisterPlan(registers=((0x00, 0xAD), (0x01, 0x1D), (0x02, 0xCB), (REG_BW_RATE, RATE_100HZ)))


def adxl313() -> RegisterFile:
    return RegisterFile(PLAN)


SENSOR = I2CDevice(
    compatible="adi,adxl313",
    model=adxl313,
    dts="""
        accelerometer@$addr$ {
            compatible = "adi,adxl313";
            reg = <0x$addr$>;
        };
    """,
)


def frequency(dev: BoundDevice[RegisterFile]) -> GuestPath:
    return dev.path.only("iio:device*") / "in_accel_sampling_frequency"


def test_sampling_frequency_of_each_rate_code(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        assert read_float(frequency(dev)) == 100.0
        for code, hz in RATES.items():
            dev.model.reg_write(REG_BW_RATE, code)
            assert read_float(frequency(dev)) == hz, f"rate code {code:#x}"


def test_rate_code_below_the_table(guest: RoadtestSession) -> None:
    """A rate code below 0110, which BW_RATE's four bits can hold (written by someone else
    than this driver), is no rate of the ADXL313: reading the frequency fails."""
    with guest.bound(SENSOR) as dev:
        for code in range(0x06):
            dev.model.reg_write(REG_BW_RATE, code)
            with pytest.raises(OSError):
                read_float(frequency(dev))
        dev.model.reg_write(REG_BW_RATE, RATE_100HZ)
        assert read_float(frequency(dev)) == 100.0
