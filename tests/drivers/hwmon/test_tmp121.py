"""TI TMP121 temperature sensor over SPI (drivers/hwmon/lm70.c, "ti,tmp121"), against TI's
datasheet SBOS273.

The driver reads the chip's 16 bits in one message (spi_write_then_read: no TX, 2 bytes of
RX) at each read of temp1_input, and needs SPI mode 0 (it refuses any other at probe).
The hwmon ABI (Documentation/hwmon/sysfs-interface.rst): temperatures in millidegrees
Celsius. The datasheet's table ("Temperature Register"): a 13-bit count of 0.0625 degC.
"""

import pytest

from roadtest.models.tmp121 import TMP121
from roadtest.testing import RoadtestSession, SPIDevice, read_int

SENSOR = SPIDevice(
    compatible="ti,tmp121",
    model=TMP121,
    dts="""
        temperature-sensor@$addr$ {
            compatible = "ti,tmp121";
            reg = <$addr$>;
            spi-max-frequency = <10000000>;
        };
    """,
)


@pytest.mark.parametrize("degc", [150, 125, 25, 0.0625, 0, -0.0625, -25, -55])
def test_temperature(guest: RoadtestSession, degc: float) -> None:
    with guest.bound(SENSOR) as dev:
        dev.model.temperature = degc
        hwmon = (dev.path / "hwmon").only("hwmon*")
        # Whole millidegrees, truncated toward zero (the driver's count * 625 / 10 in C's
        # integer division): 0.0625 degC reads 62.
        assert read_int(hwmon / "temp1_input") == int(degc * 1000)


def test_each_read_is_a_new_conversion(guest: RoadtestSession) -> None:
    # The driver caches nothing: each read clocks the chip's register out again.
    with guest.bound(SENSOR) as dev:
        hwmon = (dev.path / "hwmon").only("hwmon*")
        dev.model.temperature = 21.5
        assert read_int(hwmon / "temp1_input") == 21_500
        dev.model.temperature = -40
        assert read_int(hwmon / "temp1_input") == -40_000
