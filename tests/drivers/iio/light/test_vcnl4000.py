"""VCNL4000 proximity and light sensor (drivers/iio/light/vcnl4000.c), as in the RFC."""

import errno

import pytest

from roadtest.models.vcnl4000 import VCNL4000
from roadtest.testing import I2CDevice, RoadtestSession, read_float, read_int, read_str

SENSOR = I2CDevice(
    compatible="vishay,vcnl4000",
    model=VCNL4000,
    dts="""
        light-sensor@$addr$ {
            compatible = "vishay,vcnl4000";
            reg = <0x$addr$>;
        };
    """,
)


def test_lux(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        iio = dev.path.only("iio:device*")
        assert read_float(iio / "in_illuminance_scale") == 0.25
        for high, low in [(0x00, 0x00), (0x12, 0x34), (0xFF, 0xFF)]:
            dev.model.als_result = high << 8 | low
            assert read_int(iio / "in_illuminance_raw") == high << 8 | low


def test_lux_timeout(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        dev.model.measurements_complete = False
        with pytest.raises(OSError) as info:
            read_str(dev.path.only("iio:device*") / "in_illuminance_raw")
        assert info.value.errno == errno.EIO
