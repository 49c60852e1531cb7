"""VCNL4040's ALS integration time, which only simulated time lets a test see.

Datasheet 84274, ALS_CONF's ALS_IT: an integration takes 80, 160, 320 or 640 ms,
and the ALS data register holds the last completed one. drivers/iio/light/
vcnl4000.c waits an integration time (and 20 %) after it powers the chip up and
between two reads, so each read gets a new integration. The model completes its
integrations on the guest's clock and notes when the driver read ALS_DATA.
"""

import pytest

from roadtest.models.vcnl4040 import VCNL4040
from roadtest.testing import I2CDevice, RoadtestSession, read_int, write_str

# Not SENSOR (see test_opt3001_properties.py).
TIMED_SENSOR = I2CDevice(
    compatible="vishay,vcnl4040",
    model=VCNL4040,
    dts="""
        light-sensor@$addr$ {
            compatible = "vishay,vcnl4040";
            reg = <0x$addr$>;
        };
    """,
)

pytestmark = pytest.mark.roadtest_time("sim")

MS = 1_000_000


@pytest.mark.parametrize(("it", "period_ms"), [("0.08", 80), ("0.32", 320)])
def test_each_read_gets_a_new_integration(guest: RoadtestSession, it: str, period_ms: int) -> None:
    with guest.bound(TIMED_SENSOR) as dev:
        model = dev.model
        iio = dev.path.only("iio:device*")
        write_str(iio / "in_illuminance_integration_time", it)
        for value in (0x0102, 0x0304, 0x0506):
            # What the sensor sees from now on; only an integration that ends later has it.
            model.als_result = value
            assert read_int(iio / "in_illuminance_raw") == value
        reads = model.als_reads[-3:]
        assert all(b - a >= period_ms * MS for a, b in zip(reads, reads[1:], strict=False))
