"""ADS1119 16-bit ADC (drivers/iio/adc/ti-ads1119.c), against the sweep's register file:
no model of the chip, the registers as a plan says (every one 0: nothing is converted).

A channel's scale is written as 1/gain, the driver's `in_voltage_scale_available`; it
divided one million by the written value before checking it, so writing 0 divided by zero
and killed the kernel (kernel-patches/iio/0008).

From the ADS1119 datasheet: the internal reference is 2.048 V, the gain 1 or 4, and the
result 16-bit two's complement, so one code is 2.048 V / gain / 2^15.
"""

from __future__ import annotations

import pytest

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import BoundDevice, I2CDevice, RoadtestSession, read_float, write_str
from roadtest.testing.guestpath import GuestPath

INTERNAL_REFERENCE_MV = 2048
RESULT_BITS = 16


def ads1119() -> RegisterFile:
    return RegisterFile(RegisterPlan())


ADC = I2CDevice(
    compatible="ti,ads1119",
    model=ads1119,
    dts="""
        adc@$addr$ {
            compatible = "ti,ads1119";
            reg = <0x$addr$>;
            #address-cells = <1>;
            #size-cells = <0>;
            #io-channel-cells = <1>;

            channel@0 {
                reg = <0>;
                single-channel = <0>;
            };
        };
    """,
)


def scale(dev: BoundDevice[RegisterFile]) -> GuestPath:
    return dev.path.only("iio:device*") / "in_voltage0_scale"


def mv_per_code(gain: int) -> float:
    return INTERNAL_REFERENCE_MV / gain / (1 << (RESULT_BITS - 1))


def test_gain_1_and_4(guest: RoadtestSession) -> None:
    with guest.bound(ADC) as dev:
        assert read_float(scale(dev)) == pytest.approx(mv_per_code(1))
        write_str(scale(dev), "0.25")
        assert read_float(scale(dev)) == pytest.approx(mv_per_code(4))
        write_str(scale(dev), "1")
        assert read_float(scale(dev)) == pytest.approx(mv_per_code(1))


@pytest.mark.parametrize("value", ["0", "0.0", "-0.25", "2"])
def test_a_scale_of_no_gain_is_refused(guest: RoadtestSession, value: str) -> None:
    """0 (1/gain of no gain at all), a negative scale or one above 1: EINVAL, and the
    channel keeps its gain."""
    with guest.bound(ADC) as dev:
        write_str(scale(dev), "0.25")
        with pytest.raises(OSError):
            write_str(scale(dev), value)
        assert read_float(scale(dev)) == pytest.approx(mv_per_code(4))
