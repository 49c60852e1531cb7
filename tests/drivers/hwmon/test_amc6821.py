"""TI AMC6821 fan controller (drivers/hwmon/amc6821.c), against the sweep's register file:
no model of the chip, its registers as a plan says.

The automatic fan control attributes take the driver's update lock, which 6.12 never
initialized: on a kernel with lock debugging the first read warned, and panicked the
guest (kernel-patches/hwmon/0002).

From the AMC6821 datasheet: the passive cooling temperature register (0x1C) holds the
temperature, in degrees Celsius, below which the fan runs at its lowest duty cycle, and
bits 7:3 of the local temperature-fan control register (0x24) hold the temperature at
which the fan starts to speed up, in steps of 4 degrees Celsius. The hwmon ABI
(Documentation/hwmon/sysfs-interface.rst) gives them in millidegrees Celsius as
temp1_auto_point1_temp and temp1_auto_point2_temp.
"""

from __future__ import annotations

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import BoundDevice, I2CDevice, RoadtestSession, read_int
from roadtest.testing.guestpath import GuestPath

REG_PSV_TEMP = 0x1C
REG_LTEMP_FAN_CTRL = 0x24

PASSIVE_COOLING_DEGC = 40
LOW_TEMPERATURE_DEGC = 48  # 12 steps of 4 degrees, in bits 7:3

PLAN = RegisterPlan(
    registers=(
        (REG_PSV_TEMP, PASSIVE_COOLING_DEGC),
        (REG_LTEMP_FAN_CTRL, (LOW_TEMPERATURE_DEGC // 4) << 3),
    )
)


def amc6821() -> RegisterFile:
    return RegisterFile(PLAN)


FAN_CONTROLLER = I2CDevice(
    compatible="ti,amc6821",
    model=amc6821,
    dts="""
        fan-controller@$addr$ {
            compatible = "ti,amc6821";
            reg = <0x$addr$>;
        };
    """,
)


def hwmon(dev: BoundDevice[RegisterFile]) -> GuestPath:
    return (dev.path / "hwmon").only("hwmon*")


def test_auto_point_temperatures(guest: RoadtestSession) -> None:
    with guest.bound(FAN_CONTROLLER) as dev:
        point1 = hwmon(dev) / "temp1_auto_point1_temp"
        assert read_int(point1) == PASSIVE_COOLING_DEGC * 1000
        assert read_int(hwmon(dev) / "temp1_auto_point2_temp") == LOW_TEMPERATURE_DEGC * 1000
        # A second read takes the lock again, after the first released it.
        assert read_int(point1) == PASSIVE_COOLING_DEGC * 1000
