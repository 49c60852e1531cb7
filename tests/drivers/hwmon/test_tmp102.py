"""TMP102 temperature sensor (drivers/hwmon/tmp102.c), against TI's datasheet SBOS397.

The hwmon ABI (Documentation/hwmon/sysfs-interface.rst): temperatures in millidegrees
Celsius.
"""

import pytest

from roadtest.models.tmp102 import TMP102
from roadtest.testing import I2CDevice, RoadtestSession, read_int, write_int

SENSOR = I2CDevice(
    compatible="ti,tmp102",
    model=TMP102,
    dts="""
        temperature-sensor@$addr$ {
            compatible = "ti,tmp102";
            reg = <0x$addr$>;
        };
    """,
)

# A conversion takes at most 35 ms (datasheet, "Electrical Characteristics"), and the
# driver refuses reads (EAGAIN) until one has completed after probe. It counts the 35 ms
# in jiffies from the jiffy under way, so allow one more jiffy (10 ms: CONFIG_HZ=100),
# and one more again: early after boot UML's jiffies can run a tick ahead of its clock
# (under simulated time, 10.0 ms after boot: jiffies 2 ticks past INITIAL_JIFFIES), and a
# probe then counts from a jiffy that has not begun.
FIRST_CONVERSION = 0.035 + 2 * 0.010


@pytest.mark.parametrize("degc", [150, 128, 100, 25, 0.25, 0, -0.25, -25, -55])
def test_temperature(guest: RoadtestSession, degc: float) -> None:
    # The temperatures of the datasheet's 13-bit table ("Temperature Register"):
    # 150 degC is above the 12-bit range, so it reads right only in extended mode.
    with guest.bound(SENSOR) as dev:
        dev.model.temperature = degc
        guest.sleep(FIRST_CONVERSION)
        hwmon = (dev.path / "hwmon").only("hwmon*")
        assert read_int(hwmon / "temp1_input") == degc * 1000


def test_limits(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        hwmon = (dev.path / "hwmon").only("hwmon*")
        write_int(hwmon / "temp1_max", 100_000)
        write_int(hwmon / "temp1_max_hyst", 90_000)
        # 13-bit limits, as the temperature: 100 degC = 1600 counts of 0.0625 degC in
        # D15..D3; T_HIGH is register 0b11, T_LOW 0b10 ("Pointer Register").
        dev.model.assert_reg_write_once(0b11, 1600 << 3)
        dev.model.assert_reg_write_once(0b10, 1440 << 3)
        assert read_int(hwmon / "temp1_max") == 100_000
        assert read_int(hwmon / "temp1_max_hyst") == 90_000


def test_unbind_restores_configuration(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        pass
    # The driver puts back what it found: the power-up value ("Configuration Register").
    dev.model.assert_last_reg_write(0b01, 0x60A0)
