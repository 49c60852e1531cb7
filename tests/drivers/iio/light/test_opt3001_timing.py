"""OPT3001's conversion time, which only simulated time lets a test see.

With no interrupt wired, drivers/iio/light/opt3001.c starts a single-shot
conversion, sleeps, and reads CONFIGURATION for CRF (conversion ready) before it
reads RESULT. Datasheet SBOS681B, table 11 (CT): a conversion takes 100 ms or
800 ms. The model finishes its conversion after that time of the guest's clock,
and notes when the driver started one and when it saw CRF set.
"""

import errno

import pytest

from roadtest.models.opt3001 import CONFIGURATION, CT, OPT3001
from roadtest.testing import I2CDevice, RoadtestSession, read_float

# Not SENSOR (see test_opt3001_properties.py).
TIMED_SENSOR = I2CDevice(
    compatible="ti,opt3001",
    model=OPT3001,
    dts="""
        light-sensor@$addr$ {
            compatible = "ti,opt3001";
            reg = <0x$addr$>;
        };
    """,
)

pytestmark = pytest.mark.roadtest_time("sim")

MS = 1_000_000
DATASHEET_CONVERSION_NS = {0: 100 * MS, 1: 800 * MS}  # table 11, by CT


def test_the_driver_reads_the_result_once_the_conversion_is_done(
    guest: RoadtestSession,
) -> None:
    with guest.bound(TIMED_SENSOR) as dev:
        model = dev.model
        model.result = 0b_0011_0100_0101_0110  # 88.80 lux, the datasheet's example
        lux_file = dev.path.only("iio:device*") / "in_illuminance_input"
        assert read_float(lux_file) == 88.80
        started, ready = model.conversions[-1], model.ready_reads[-1]
        ct = CT.get(model.regs[CONFIGURATION.address])
        # The driver waited the datasheet's conversion time, and no less.
        assert ready - started >= DATASHEET_CONVERSION_NS[ct]


def test_a_conversion_slower_than_the_driver_waits_is_a_timeout(guest: RoadtestSession) -> None:
    with guest.bound(TIMED_SENSOR) as dev:
        model = dev.model
        model.result = 0b_0011_0100_0101_0110
        # A part far outside the datasheet: conversions take 5 s.
        model.conversion_times = {0: 5_000 * MS, 1: 5_000 * MS}
        lux_file = dev.path.only("iio:device*") / "in_illuminance_input"
        with pytest.raises(OSError) as raised:
            read_float(lux_file)
        # Not a stale RESULT: the driver saw CRF clear and said so.
        assert raised.value.errno == errno.ETIMEDOUT
        assert model.ready_reads == []
