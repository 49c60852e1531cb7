"""TI bq24150 charger (drivers/power/supply/bq2415x_charger.c), against the sweep's register
file: no model of the chip, its registers as a plan says.

The charger's `registers` attribute lists the chip's five registers, one `register=value`
line each. On 6.12 it printed the second and later lines with sysfs_emit() at a pointer
into the page, which sysfs_emit() refuses with a WARN (a panic with panic_on_warn), and
so showed only the first register (kernel-patches/power/0001).

From the bq24150/bq24150A datasheet: the chip has five 8-bit registers, 0x00 to 0x04
(status/control, control, control/battery voltage, vendor/part/revision, battery
termination/fast charge current); bits 7:5 of the vendor register read 010.
"""

from __future__ import annotations

import pytest

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import BoundDevice, I2CDevice, RoadtestSession
from roadtest.testing.guestpath import GuestPath

# The driver's timer work (its 32-second watchdog reset) and the power-supply core's
# deferred work read the status register on the guest's clock: on a real-time guest
# (x86_64) such a read landed among the unbind's writes (make test's x86_64 replay,
# 3287c1c), under simulated time never. A golden trace cannot hold both: the test runs
# live, under simulated time only.
pytestmark = pytest.mark.roadtest_time("sim")

REG_VENDOR = 0x03

PLAN = RegisterPlan(registers=((REG_VENDOR, 0b010 << 5),))


def bq24150() -> RegisterFile:
    return RegisterFile(PLAN)


CHARGER = I2CDevice(
    compatible="ti,bq24150",
    model=bq24150,
    dts="""
        charger@$addr$ {
            compatible = "ti,bq24150";
            reg = <0x$addr$>;
            ti,current-limit = <100>;
            ti,weak-battery-voltage = <3400>;
            ti,battery-regulation-voltage = <4200>;
            ti,charge-current = <650>;
            ti,termination-current = <100>;
            ti,resistor-sense = <68>;
        };
    """,
)

# What the chip's five registers hold when the attribute is read: a distinct value in each.
# The status register's bit 7 is set already, as the driver's 32-second timer reset sets it.
HELD = {0x00: 0x90, 0x01: 0x78, 0x02: 0x8C, 0x03: 0x48, 0x04: 0x51}


def charger(dev: BoundDevice[RegisterFile]) -> GuestPath:
    return (dev.path / "power_supply").only("bq24150-*")


def parse_registers(text: str) -> dict[int, int]:
    """The `register=value` lines of the attribute, both numbers in hexadecimal."""
    shown: dict[int, int] = {}
    for line in text.splitlines():
        register, value = line.split("=")
        shown[int(register, 16)] = int(value, 16)
    return shown


def test_registers_lists_every_register(guest: RoadtestSession) -> None:
    with guest.bound(CHARGER) as dev:
        for address, value in HELD.items():
            dev.model.reg_write(address, value)
        text = (charger(dev) / "registers").read_text()
        assert text.endswith("\n")
        assert parse_registers(text) == HELD
