"""HDC1080 datasheet property (drivers/iio/humidity/hdc100x.c), through the IIO sysfs ABI.

Datasheet TI SNAS672A, "Temperature Register" and "Humidity Register": a result is a
16-bit code, T = raw / 2^16 * 165 - 40 degC and RH = raw / 2^16 * 100 %RH; at 14-bit
resolution (the driver's setting after probe) bits 1:0 read 0.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roadtest.models.hdc100x import HDC100x
from roadtest.testing import I2CDevice, RoadtestSession, read_float, read_int

# Not the SENSOR of test_hdc100x.py: kept bound for the examples, a device of its own.
KEPT_SENSOR = I2CDevice(
    compatible="ti,hdc1080",
    model=HDC100x,
    dts="""
        humidity-sensor@$addr$ {
            compatible = "ti,hdc1080";
            reg = <0x$addr$>;
        };
    """,
)


@given(
    degc=st.floats(-40, 125, allow_nan=False),
    rh=st.floats(0, 100, allow_nan=False),
)
def test_every_reading_is_the_datasheet_formula(
    guest: RoadtestSession, degc: float, rh: float
) -> None:
    dev = guest.bound_for_examples(KEPT_SENSOR)
    dev.model.temperature, dev.model.humidity = degc, rh
    channel = dev.path.only("iio:device*")

    temp_raw = read_int(channel / "in_temp_raw")
    assert temp_raw & 0b11 == 0 and 0 <= temp_raw <= 0xFFFF
    # Within one 14-bit step of the temperature the chip measured.
    assert temp_raw / 2**16 * 165 - 40 == pytest.approx(degc, abs=165 / 2**14 + 1e-9)
    temp_mdegc = (temp_raw + read_float(channel / "in_temp_offset")) * read_float(
        channel / "in_temp_scale"
    )
    assert temp_mdegc == pytest.approx((temp_raw / 2**16 * 165 - 40) * 1000, abs=0.01)

    rh_raw = read_int(channel / "in_humidityrelative_raw")
    assert rh_raw & 0b11 == 0 and 0 <= rh_raw <= 0xFFFF
    assert rh_raw / 2**16 * 100 == pytest.approx(rh, abs=100 / 2**14 + 1e-9)
    rh_milli = rh_raw * read_float(channel / "in_humidityrelative_scale")
    assert rh_milli == pytest.approx(rh_raw / 2**16 * 100 * 1000, abs=0.01)
