"""Bus errors at probe for the register chips on SPI (and the BMP280 on I2C too): the
driver's probe meets a failed transfer (virtio-spi's TRANS_ERR; on I2C a NACK) and fails
with EIO, which the driver core reports. The devices are those of tests/drivers/rtc/
test_pcf2123.py and tests/drivers/iio/pressure/test_bmp280.py.

Here, not beside those tests in tests/drivers: a script of failed transfers is not a
golden trace's I/O (a replay applies the script again, before the trace's player), and
tests/drivers is replayed against its traces.
"""

from __future__ import annotations

import errno

import pytest

from roadtest.fuzz.events import TransferFails
from roadtest.models.bmp280 import BMP280
from roadtest.models.pcf2123 import PCF2123
from roadtest.testing import BindError, I2CDevice, RoadtestSession, SPIDevice

PCF2123_RTC = SPIDevice(
    compatible="nxp,pcf2123",
    model=PCF2123,
    dts="""
        rtc@$addr$ {
            compatible = "nxp,pcf2123";
            reg = <$addr$>;
            spi-cs-high;
            spi-max-frequency = <1000000>;
        };
    """,
)
BMP280_I2C = I2CDevice(
    compatible="bosch,bmp280",
    model=BMP280,
    dts="""
        pressure-sensor@$addr$ {
            compatible = "bosch,bmp280";
            reg = <0x$addr$>;
        };
    """,
)
BMP280_SPI = SPIDevice(
    compatible="bosch,bmp280",
    model=BMP280,
    dts="""
        pressure-sensor@$addr$ {
            compatible = "bosch,bmp280";
            reg = <$addr$>;
            spi-max-frequency = <10000000>;
        };
    """,
)


def test_pcf2123_bus_errors_fail_the_probe(guest: RoadtestSession) -> None:
    """TRANS_ERR on the probe's time read, then on the chip reset the driver tries next
    (it takes any failed read of the time for an invalid time): the probe fails with EIO."""
    with (
        guest.device_events([TransferFails(0), TransferFails(0)]),
        pytest.raises(BindError),
        guest.bound(PCF2123_RTC),
    ):
        pass
    guest.assert_kernel_log(r"chip not found")
    guest.assert_kernel_log(rf"probe with driver rtc-pcf2123 failed with error -{errno.EIO}\b")


@pytest.mark.parametrize("device", [BMP280_I2C, BMP280_SPI], ids=["i2c", "spi"])
def test_bmp280_bus_error_at_probe(
    guest: RoadtestSession, device: I2CDevice[BMP280] | SPIDevice[BMP280]
) -> None:
    """The chip id read fails: the probe fails with EIO."""
    with (
        guest.device_events([TransferFails(0)]),
        pytest.raises(BindError),
        guest.bound(device),
    ):
        pass
    guest.assert_kernel_log(r"failed to read chip id")
    guest.assert_kernel_log(rf"probe with driver bmp280 failed with error -{errno.EIO}\b")
