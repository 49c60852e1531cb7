"""ADS1119 16-bit ADC (drivers/iio/adc/ti-ads1119.c), against the sweep's register file:
no model of the chip, the registers as a plan says (every one 0: nothing is converted).

A channel's scale is written as 1/gain, the driver's `in_voltage_scale_available`; it
divided one million by the written value before checking it, so writing 0 divided by zero
and killed the kernel (kernel-patches/iio/0008).

With its DRDY line wired to an interrupt, the driver waits for that interrupt after each
START/SYNC; one that never comes (DRDY stuck, a lost edge) is a timeout. The driver meant
85 ms (its polling path waits that long) but gave that number of microseconds to
msecs_to_jiffies(), so the read waited 85 s, in an uninterruptible sleep that the hung
task detector reports (kernel-patches/iio/0013).

From the ADS1119 datasheet: the internal reference is 2.048 V, the gain 1 or 4, and the
result 16-bit two's complement, so one code is 2.048 V / gain / 2^15. The slowest data rate
is 20 SPS (a conversion every 50 ms); DRDY is active low.
"""

from __future__ import annotations

import errno

import pytest

from roadtest.simtime.clock import NS_PER_S
from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import BoundDevice, I2CDevice, RoadtestSession, read_float, write_str
from roadtest.testing.guestpath import GuestPath

pytestmark = pytest.mark.roadtest_kernel(
    ">=6.11", reason='a9306887eba4 ("iio: adc: ti-ads1119: Add driver", v6.11) added the driver'
)

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


ADC_WITH_DRDY = I2CDevice(
    compatible="ti,ads1119",
    model=ads1119,
    gpios=("drdy",),
    dts="""
        adc@$addr$ {
            compatible = "ti,ads1119";
            reg = <0x$addr$>;
            interrupt-parent = <&gpio>;
            interrupts = <$drdy$ IRQ_TYPE_EDGE_FALLING>;
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


@pytest.mark.roadtest_time("sim")
def test_a_conversion_drdy_never_signals_times_out_soon(guest: RoadtestSession) -> None:
    """DRDY never goes low: reading a channel fails with ETIMEDOUT, after a wait of the
    order of the slowest conversion (50 ms at 20 SPS), not a minute and more."""
    with guest.bound(ADC_WITH_DRDY) as dev:
        raw = dev.path.only("iio:device*") / "in_voltage0_raw"
        began = dev.model.clock.now()
        with pytest.raises(OSError) as raised:
            read_float(raw)
        assert raised.value.errno == errno.ETIMEDOUT
        assert dev.model.clock.now() - began < 1 * NS_PER_S
