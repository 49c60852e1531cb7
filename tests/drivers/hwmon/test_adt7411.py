"""Analog Devices ADT7411 temperature and voltage monitor (drivers/hwmon/adt7411.c), against
the sweep's register file: no model of the chip, its registers as a plan says.

With Vdd as the reference of the AIN inputs (adc_ref_vdd), a voltage limit is converted
with the chip's Vdd measurement. On 6.12 a limit written while the chip reported a Vdd
of 0 divided by zero, and the guest panicked (kernel-patches/hwmon/0004).

From the ADT7411 datasheet: the manufacturer ID register (0x4E) reads 0x41 and the device
ID register (0x4D) 0x02; the AIN inputs are measured against the internal 2.25 V
reference, or against Vdd when bit 4 of Control Configuration 3 is set; their high and
low limits are 8 bits, the top of the 10-bit conversion, so a step of 2250 mV / 256 with
the internal reference. The hwmon ABI gives voltages in millivolts.
"""

from __future__ import annotations

import pytest

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import BoundDevice, I2CDevice, RoadtestSession, read_int, write_int
from roadtest.testing.guestpath import GuestPath

REG_DEVICE_ID = 0x4D
REG_MANUFACTURER_ID = 0x4E

# The ID registers; every other register, the Vdd measurement among them, reads 0.
PLAN = RegisterPlan(registers=((REG_MANUFACTURER_ID, 0x41), (REG_DEVICE_ID, 0x02)))

INTERNAL_REFERENCE_MV = 2250


def adt7411() -> RegisterFile:
    return RegisterFile(PLAN)


MONITOR = I2CDevice(
    compatible="adi,adt7411",
    model=adt7411,
    dts="""
        hardware-monitor@$addr$ {
            compatible = "adi,adt7411";
            reg = <0x$addr$>;
        };
    """,
)


def hwmon(dev: BoundDevice[RegisterFile]) -> GuestPath:
    return (dev.path / "hwmon").only("hwmon*")


def test_limit_against_the_internal_reference(guest: RoadtestSession) -> None:
    with guest.bound(MONITOR) as dev:
        assert read_int(hwmon(dev) / "adc_ref_vdd") == 0
        half = INTERNAL_REFERENCE_MV // 2  # 128 steps of 2250 mV / 256
        write_int(hwmon(dev) / "in3_max", half)
        assert read_int(hwmon(dev) / "in3_max") == half


def test_limit_against_an_unmeasured_vdd_is_refused(guest: RoadtestSession) -> None:
    with guest.bound(MONITOR) as dev:
        write_int(hwmon(dev) / "adc_ref_vdd", 1)
        assert read_int(hwmon(dev) / "adc_ref_vdd") == 1
        assert read_int(hwmon(dev) / "in0_input") == 0  # Vdd, in millivolts, as reported
        with pytest.raises(OSError):
            write_int(hwmon(dev) / "in3_max", 1000)
        # The driver is still there, and answers.
        assert read_int(hwmon(dev) / "in3_max") == 0
