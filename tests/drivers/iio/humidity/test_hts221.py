"""ST HTS221 humidity and temperature sensor on I2C (drivers/iio/humidity/hts221_core.c and
hts221_i2c.c), against a model of its registers (roadtest/models/hts221.py cites the
datasheet), through the IIO sysfs ABI (Documentation/ABI/testing/sysfs-bus-iio): a
reading is (in_X_raw + in_X_offset) * in_X_scale.

The chip converts a reading by linear interpolation between two calibration points that
ST programmed (H0, H0_T0_OUT) and (H1, H1_T0_OUT), likewise (T0, T0_OUT) and (T1, T1_OUT).
The driver turns each pair into a slope and an offset at probe, dividing by the
difference of the two outputs and then, for in_X_offset, by the slope. A calibration
whose two outputs are equal (a blank or damaged calibration area) divided by zero at
probe, a kernel crash (SIGFPE under UML); one whose two humidities or temperatures are
equal has a slope of 0, which no offset and scale can express, and reading in_X_offset
divided by it. The driver now refuses both calibrations at probe (kernel-patches/iio/0023).
"""

from __future__ import annotations

import dataclasses

import pytest

from roadtest.models.hts221 import HTS221, Calibration
from roadtest.testing import BindError, BoundDevice, I2CDevice, RoadtestSession, read_float
from roadtest.testing.guestpath import GuestPath

# 20 %RH and 80 %RH; 20 degC and 40 degC.
GOOD = Calibration(
    h0_rh_x2=40,
    h1_rh_x2=160,
    h0_t0_out=1000,
    h1_t0_out=13000,
    t0_degc_x8=160,
    t1_degc_x8=320,
    t0_out=-200,
    t1_out=1400,
)

SENSOR = I2CDevice(
    compatible="st,hts221",
    model=lambda: HTS221(GOOD),
    dts="""
        humidity@$addr$ {
            compatible = "st,hts221";
            reg = <0x$addr$>;
        };
    """,
)


def iio(dev: BoundDevice[HTS221]) -> GuestPath:
    return dev.path.only("iio:device*")


def humidity(dev: BoundDevice[HTS221], h_out: int) -> float:
    """(raw + offset) * scale, the ABI's reading, for a conversion of `h_out`."""
    dev.model.outputs(h_out, 0)
    raw = read_float(iio(dev) / "in_humidityrelative_raw")
    assert raw == h_out
    offset = read_float(iio(dev) / "in_humidityrelative_offset")
    scale = read_float(iio(dev) / "in_humidityrelative_scale")
    return (raw + offset) * scale


def test_humidity_is_interpolated_between_the_calibration_points(
    guest: RoadtestSession,
) -> None:
    """The readings at H0_T0_OUT, halfway and at H1_T0_OUT stand as H0 : (H0 + H1) / 2 : H1
    (a ratio, so that it holds whatever unit the driver's scale gives)."""
    with guest.bound(SENSOR, HTS221(GOOD)) as dev:
        at_h1 = humidity(dev, GOOD.h1_t0_out)
        for h_out in (GOOD.h0_t0_out, (GOOD.h0_t0_out + GOOD.h1_t0_out) // 2):
            expected = GOOD.humidity(h_out) / GOOD.humidity(GOOD.h1_t0_out)
            assert humidity(dev, h_out) / at_h1 == pytest.approx(expected, rel=1e-6)


BAD = {
    "equal-humidity-outputs": dataclasses.replace(GOOD, h1_t0_out=GOOD.h0_t0_out),
    "equal-temperature-outputs": dataclasses.replace(GOOD, t1_out=GOOD.t0_out),
    "equal-humidities": dataclasses.replace(GOOD, h1_rh_x2=GOOD.h0_rh_x2),
    "equal-temperatures": dataclasses.replace(GOOD, t1_degc_x8=GOOD.t0_degc_x8),
}


@pytest.mark.parametrize("calibration", BAD.values(), ids=BAD.keys())
def test_a_calibration_without_two_distinct_points_is_refused(
    guest: RoadtestSession, calibration: Calibration
) -> None:
    """Two equal outputs, or two equal humidities or temperatures: no line through the
    points that (raw + offset) * scale can give. The probe fails; the kernel lives on."""
    with pytest.raises(BindError):
        with guest.bound(SENSOR, HTS221(calibration)):
            pass
