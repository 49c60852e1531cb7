"""VCNL4200 proximity and light sensor (drivers/iio/light/vcnl4000.c), as in the RFC.

The RFC's scale, 0.024 lux/step, still holds in 6.12 at the reset
integration time; what changed is that it now follows ALS_IT.
"""

from __future__ import annotations

import pytest

from roadtest.models.vcnl4040 import PS_CONF2_HD, REG_PS_CONF1, VCNL4200
from roadtest.testing import (
    I2CDevice,
    RoadtestSession,
    read_float,
    read_int,
    write_str,
)

SENSOR = I2CDevice(
    compatible="vishay,vcnl4200",
    model=VCNL4200,
    dts="""
        light-sensor@$addr$ {
            compatible = "vishay,vcnl4200";
            reg = <0x$addr$>;
        };
    """,
)


@pytest.mark.roadtest_kernel(
    ">=6.6",
    reason='"iio: light: vcnl4000: Add als_it for vcnl4040/4200" (Astrid Rost, applied for '
    "v6.6) added in_illuminance_integration_time",
)
def test_illuminance_scale(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        model = dev.model
        iio = dev.path.only("iio:device*")
        assert model.als_integration_index == 0  # 50 ms, the reset value
        assert read_float(iio / "in_illuminance_scale") == 0.024
        # Since "iio: light: vcnl4000: Add als_it for vcnl4040/4200" (Astrid Rost,
        # 2023) the scale is ulux_step (24000) * 50 ms / ALS_IT, vcnl4040_write_als_it();
        # the datasheet's 0.024, 0.012, 0.006 and 0.003 lux/step for 50-400 ms.
        for index, (it, scale) in enumerate(
            [("0.1", 0.012), ("0.2", 0.006), ("0.4", 0.003), ("0.05", 0.024)], start=1
        ):
            write_str(iio / "in_illuminance_integration_time", it)
            assert model.als_integration_index == index % 4
            assert read_float(iio / "in_illuminance_scale") == scale


def test_illuminance(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        model = dev.model
        luxfile = dev.path.only("iio:device*") / "in_illuminance_raw"
        for regval in [0x0000, 0x1234, 0xFFFF]:
            model.als_result = regval
            assert read_int(luxfile) == regval


@pytest.mark.roadtest_kernel(
    ">=6.9",
    reason='44b90383453c ("iio: light: vcnl4000: Set ps high definition for 4040/4200", '
    "v6.9) set PS_HD",
)
def test_proximity(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        model = dev.model
        rawfile = dev.path.only("iio:device*") / "in_proximity_raw"
        assert model.regs[REG_PS_CONF1] & PS_CONF2_HD  # 16-bit proximity data
        for regval in [0x0000, 0x1234, 0xFFFF]:
            model.prox_result = regval
            # raw / 16 since "iio: light: vcnl4000: Set ps high definition for
            # 4040/4200" (2024), where the RFC read the register as an integer.
            assert read_float(rawfile) == regval / 16
