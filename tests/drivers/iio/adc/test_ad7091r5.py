"""AD7091R-5 4-channel, 12-bit ADC (drivers/iio/adc/ad7091r5.c with ad7091r-base.c),
against the sweep's register file: no model of the chip, the registers as a plan says.

Every read of a channel attribute takes the driver's lock, which 6.12 never initialized:
on a kernel with lock debugging the first read warned, and panicked the guest
(kernel-patches/iio/0005).

From the AD7091R-5 datasheet: the registers are 16 bits, the conversion result register
(0x00) holds the channel ID in bits 14:13 and the result in bits 11:0, and the internal
reference, used when no external one is given, is 2.5 V.
"""

from __future__ import annotations

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import BoundDevice, I2CDevice, RoadtestSession, read_float, read_int
from roadtest.testing.guestpath import GuestPath

REG_RESULT = 0x00
INTERNAL_REFERENCE_MV = 2500
RESULT_BITS = 12

# Channel 0 (ID 0 in bits 14:13) converted 0x123.
PLAN = RegisterPlan(registers=((REG_RESULT, 0x0123),))


def ad7091r5() -> RegisterFile:
    """The AD7091R-5's registers as the plan has them, 16 bits, most significant byte first
    on the bus (the datasheet's I2C read and write frames)."""
    return RegisterFile(PLAN, value_bits=16, byteorder="big")


ADC = I2CDevice(
    compatible="adi,ad7091r5",
    model=ad7091r5,
    dts="""
        adc@$addr$ {
            compatible = "adi,ad7091r5";
            reg = <0x$addr$>;
        };
    """,
)


def iio_dir(dev: BoundDevice[RegisterFile]) -> GuestPath:
    return dev.path.only("iio:device*")


def test_scale_is_the_internal_reference_over_12_bits(guest: RoadtestSession) -> None:
    with guest.bound(ADC) as dev:
        scale = read_float(iio_dir(dev) / "in_voltage_scale")
        assert abs(scale - INTERNAL_REFERENCE_MV / 2**RESULT_BITS) < 1e-6


def test_raw_reads_the_conversion_result(guest: RoadtestSession) -> None:
    with guest.bound(ADC) as dev:
        assert read_int(iio_dir(dev) / "in_voltage0_raw") == 0x123
        # A second read takes the lock again, after the first released it.
        assert read_int(iio_dir(dev) / "in_voltage0_raw") == 0x123
