"""OPT3001 ambient light sensor (drivers/iio/light/opt3001.c).

test_illuminance is also the regression test for "iio: light: opt3001: Fixed
timeout error when 0 lux": a result register of 0 used to read as a timeout.
"""

from roadtest.models.opt3001 import OPT3001
from roadtest.testing import I2CDevice, RoadtestSession, read_float

SENSOR = I2CDevice(
    compatible="ti,opt3001",
    model=OPT3001,
    dts="""
        light-sensor@$addr$ {
            compatible = "ti,opt3001";
            reg = <0x$addr$>;
        };
    """,
)


def test_illuminance(guest: RoadtestSession) -> None:
    data = [
        # Values from the datasheet's examples, and 0.
        (0b_0000_0000_0000_0000, 0),
        (0b_0000_0000_0000_0001, 0.01),
        (0b_0011_0100_0101_0110, 88.80),
        (0b_0111_1000_1001_1010, 2818.56),
    ]
    with guest.bound(SENSOR) as dev:
        lux_file = dev.path.only("iio:device*") / "in_illuminance_input"
        for regval, lux in data:
            dev.model.result = regval
            assert read_float(lux_file) == lux, f"result register {regval:#06x}"
