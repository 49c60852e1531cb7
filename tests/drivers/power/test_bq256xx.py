"""TI bq25600 charger (drivers/power/supply/bq256xx_charger.c), against the sweep's register
file: no model of the chip, its registers as a plan says.

Without a monitored battery the driver means to program the chip's own defaults ("battery
info missing, default values will be applied"). On 6.12 it wrote them through a pointer
the battery lookup had left uninitialized, and the probe crashed the guest
(kernel-patches/power/0002).

From the bq25600 datasheet: the fast charge current goes up to 3.0 A; the precharge and
termination currents are 4-bit codes in register 0x03 (bits 7:4 and 3:0), 60 mA plus 60 mA a
step, both 180 mA at reset. The power supply ABI
(Documentation/ABI/testing/sysfs-class-power) gives currents in microamps.
"""

from __future__ import annotations

import pytest

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import BoundDevice, I2CDevice, RoadtestSession, read_int
from roadtest.testing.guestpath import GuestPath

# The power-supply core's deferred registration work (a few ms after the probe registers
# the supply) reads the status register on the guest's clock: on a real-time guest
# (x86_64) that read lands between the probe's last writes, under simulated time after
# them. A golden trace cannot hold both: the test runs live, under simulated time only.
pytestmark = pytest.mark.roadtest_time("sim")

FAST_CHARGE_MAX_UA = 3_000_000
PRECHARGE_DEFAULT_UA = 180_000
TERMINATION_DEFAULT_UA = 180_000


def bq25600() -> RegisterFile:
    return RegisterFile(RegisterPlan())


# No monitored-battery: a board that says nothing of its battery.
CHARGER = I2CDevice(
    compatible="ti,bq25600",
    model=bq25600,
    dts="""
        charger@$addr$ {
            compatible = "ti,bq25600";
            reg = <0x$addr$>;
        };
    """,
)


def supply(dev: BoundDevice[RegisterFile], name: str) -> GuestPath:
    return (dev.path / "power_supply").only(name)


def test_defaults_without_a_monitored_battery(guest: RoadtestSession) -> None:
    with guest.bound(CHARGER) as dev:
        charger = supply(dev, "bq256xx-charger")
        assert read_int(charger / "precharge_current") == PRECHARGE_DEFAULT_UA
        assert read_int(charger / "charge_term_current") == TERMINATION_DEFAULT_UA
        battery = supply(dev, "bq256xx-battery")
        assert read_int(battery / "constant_charge_current_max") == FAST_CHARGE_MAX_UA
