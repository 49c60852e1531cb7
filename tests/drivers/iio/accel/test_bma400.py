"""BMA400 accelerometer (drivers/iio/accel/bma400_core.c, bma400_i2c.c), against the
sweep's register file: no model of the chip, the registers as a plan says.

The driver wakes the chip at probe and registers an action that puts it back to sleep,
taking the driver's mutex, when the device goes: at unbind, or when probe fails after
that. 6.12 initialized the mutex only at the end of probe, so a probe failing in between
ran the action on an uninitialized mutex, which warned and panicked the guest
(kernel-patches/iio/0006). A devicetree mount-matrix of three entries instead of nine makes
probe fail there (iio_read_mount_matrix(): the binding's mount-matrix is nine strings).

From the BMA400 datasheet: CHIP_ID (0x00) reads 0x90; STATUS (0x03) bits 2:1 are the
power mode (0, sleep, at power-on); ACC_CONFIG0 (0x19) bits 1:0 set the power mode (0
sleep, 2 normal); ACC_CONFIG1 (0x1a) holds the range (bits 7:6), oversampling (5:4) and
output data rate (3:0; 0x8 is 100 Hz).
"""

from __future__ import annotations

import pytest

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import BindError, I2CDevice, RoadtestSession

REG_CHIP_ID = 0x00
REG_ACC_CONFIG0 = 0x19
REG_ACC_CONFIG1 = 0x1A
CHIP_ID = 0x90
POWER_MODE_MASK = 0x03
POWER_MODE_SLEEP = 0x00
POWER_MODE_NORMAL = 0x02
ODR_100HZ = 0x08

# Asleep (STATUS 0), ±2 g, no oversampling, 100 Hz.
PLAN = RegisterPlan(registers=((REG_CHIP_ID, CHIP_ID), (REG_ACC_CONFIG1, ODR_100HZ)))


def bma400() -> RegisterFile:
    return RegisterFile(PLAN)


SENSOR = I2CDevice(
    compatible="bosch,bma400",
    model=bma400,
    dts="""
        accelerometer@$addr$ {
            compatible = "bosch,bma400";
            reg = <0x$addr$>;
        };
    """,
)

MISMOUNTED = I2CDevice(
    compatible="bosch,bma400",
    model=bma400,
    dts="""
        accelerometer@$addr$ {
            compatible = "bosch,bma400";
            reg = <0x$addr$>;
            mount-matrix = "0", "1", "0";
        };
    """,
)


def power_modes(model: RegisterFile) -> list[int]:
    """The power modes the driver set, in order."""
    return [value & POWER_MODE_MASK for value in model.reg_writes(REG_ACC_CONFIG0)]


def test_unbind_puts_the_chip_back_to_sleep(guest: RoadtestSession) -> None:
    model = bma400()
    with guest.bound(SENSOR, model) as dev:
        assert dev.path.only("iio:device*").exists()
        assert power_modes(model) == [POWER_MODE_NORMAL]
    assert power_modes(model) == [POWER_MODE_NORMAL, POWER_MODE_SLEEP]


def test_failed_probe_puts_the_chip_back_to_sleep(guest: RoadtestSession) -> None:
    model = bma400()
    with pytest.raises(BindError), guest.bound(MISMOUNTED, model):
        pass
    assert power_modes(model) == [POWER_MODE_NORMAL, POWER_MODE_SLEEP]
