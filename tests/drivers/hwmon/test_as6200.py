"""ams AS6200 temperature sensor through the lm75 driver (drivers/hwmon/lm75.c).

Expected values come from the AS6200 datasheet's register description:
temperatures are 12-bit two's complement in bits 15:4 at 0.0625 degC per step,
TLOW and THIGH reset to 75 and 80 degC, CR selects 0.25/1/4/8 conversions a
second, CF 1/2/4/6 consecutive faults, POL the ALERT pin's polarity; the
alarm is the CONFIG register's AL bit. The hwmon ABI
(Documentation/hwmon/sysfs-interface.rst) gives temperatures in millidegrees
Celsius and update_interval in milliseconds.

The driver sets CF to 4 faults and POL to active high at probe
(`.set_mask = 0x94C0`), so only the active-high ALERT can be tested through it.
"""

from __future__ import annotations

import pytest

from roadtest.models.as6200 import AS6200, CONFIG_AL, REG_CONFIG, REG_THIGH, RESET
from roadtest.models.interrupt import Polarity
from roadtest.testing import (
    BoundDevice,
    GuestPath,
    I2CDevice,
    RoadtestSession,
    read_int,
    write_int,
)

# ALERT is open drain; the binding's example asks for both edges, so userspace
# hears of the alarm going on and off.
# lm75 binds no ams,as6200 before the chip was added to it.
pytestmark = pytest.mark.roadtest_kernel(
    ">=6.8",
    reason='4b6358e1fe46 ("hwmon: (lm75) Add AMS AS6200 temperature sensor", v6.8) added the chip',
)

SENSOR = I2CDevice(
    compatible="ams,as6200",
    model=AS6200,
    gpios=("irq",),
    dts="""
        temperature-sensor@$addr$ {
            compatible = "ams,as6200";
            reg = <0x$addr$>;
            interrupt-parent = <&gpio>;
            interrupts = <$irq$ IRQ_TYPE_EDGE_BOTH>;
        };
    """,
)


def hwmon(dev: BoundDevice[AS6200]) -> GuestPath:
    return (dev.path / "hwmon").only("hwmon*")


@pytest.mark.parametrize(
    ("degc", "millidegc"),
    [
        (25.0, 25_000),  # 0x1900, the datasheet's example
        (0.125, 125),  # two steps of 0.0625
        (-40.125, -40_125),  # two's complement
        (125.0, 125_000),  # the top of the operating range
    ],
)
def test_temperature(guest: RoadtestSession, degc: float, millidegc: int) -> None:
    with guest.bound(SENSOR) as dev:
        dev.model.temperature = degc
        dev.model.convert()
        assert read_int(hwmon(dev) / "temp1_input") == millidegc


def test_limits(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        assert read_int(hwmon(dev) / "temp1_max") == 80_000  # THIGH at reset
        assert read_int(hwmon(dev) / "temp1_max_hyst") == 75_000  # TLOW at reset
        write_int(hwmon(dev) / "temp1_max", 30_000)
        dev.model.assert_reg_write_once(
            REG_THIGH, (30 * 16) << 4
        )  # 30 / 0.0625 steps, in bits 15:4
        assert read_int(hwmon(dev) / "temp1_max") == 30_000


def test_update_interval(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        model = dev.model
        assert model.conversion_rate_hz == 8.0  # what the driver picks
        assert read_int(hwmon(dev) / "update_interval") == 125  # 1/8 s
        write_int(hwmon(dev) / "update_interval", 1000)
        assert model.conversion_rate_hz == 1.0
        assert read_int(hwmon(dev) / "update_interval") == 1000


def test_alarm_is_notified(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        model = dev.model
        assert model.irq is not None
        # POL = 1: ALERT is active high, and its open drain holds the line low while quiet.
        assert model.irq.input is False
        alarm = hwmon(dev) / "temp1_alarm"
        with alarm.watch() as watch:
            assert watch.value == "0"
            model.temperature = 85.0  # above THIGH (80 degC)
            model.convert(3)
            assert not model.alert  # the fault queue wants 4 in a row
            model.convert()
            assert watch.wait() == "1"
            assert model.irq.input is True  # released: the pull-up raises the line
            model.temperature = 70.0  # below TLOW (75 degC)
            model.convert(4)
            assert watch.wait() == "0"
            assert model.irq.input is False


def test_unbind_restores_the_configuration(guest: RoadtestSession) -> None:
    """lm75 puts back, at unbind, the configuration it found at probe: here the
    AS6200's reset value, 0x40A0 (CF 1 fault, POL active low, CR 4 conversions a
    second; AL is read-only). CONFIG is 16 bits wide and written MSB first, in one
    two-byte write (the datasheet's register description). On 6.12, lm75_remove()
    writes it with an SMBus byte write of orig_conf's low byte, 0xA0, which lands in
    CONFIG's high byte: kernel-patches/hwmon/0001 is the fix."""
    reset = RESET[REG_CONFIG]
    with guest.bound(SENSOR) as dev:
        model = dev.model
        assert model.config != reset & ~CONFIG_AL  # the driver's own settings meanwhile
        model.reset_reg_writes()
    assert model.reg_writes(REG_CONFIG) == [reset]
    assert model.config == reset & ~CONFIG_AL
    assert model.conversion_rate_hz == 4.0  # CR = 0b10 at reset
    assert model.int_output.polarity == Polarity.ACTIVE_LOW  # POL = 0 at reset
