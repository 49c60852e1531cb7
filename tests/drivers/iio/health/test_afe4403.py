"""TI AFE4403 heart rate and pulse oximeter front end over SPI (drivers/iio/health/afe4403.c),
against a model of its register interface (roadtest/models/afe4403.py cites the
datasheet), through the IIO sysfs ABI (Documentation/ABI/testing/sysfs-bus-iio).

The driver's channels: in_intensity1_raw to in_intensity6_raw, the ADC's results (LED2,
ALED2, LED1, ALED1, LED2-ALED2, LED1-ALED1: registers 2Ah to 2Fh, which only the chip
writes), and out_current1_raw and out_current3_raw, the LED2 and LED1 currents (their
fields of LEDCNTRL, 22h). IIO makes every `_raw` attribute writable where the driver has
write_raw; a write to a result is not a thing the chip can do, so the driver must refuse it
(EINVAL) and write nothing.

afe4403_write_raw() looked the channel up in its table of the two LED current fields
before it checked the channel's type, so a write to in_intensity4_raw to
in_intensity6_raw read past that table (UBSAN array-index-out-of-bounds;
kernel-patches/iio/0022 looks it up for a current channel only).
"""

from __future__ import annotations

import errno

import pytest

from roadtest.models.afe4403 import AFE4403, LED1_ALED1VAL, LED2VAL, LEDCNTRL
from roadtest.testing import BoundDevice, RoadtestSession, SPIDevice, read_int, write_str
from roadtest.testing.guestpath import GuestPath

INTENSITY_CHANNELS = range(1, LED1_ALED1VAL - LED2VAL + 2)  # 1..6
CURRENT_CHANNELS = (1, 3)  # LED2, LED1

AFE = SPIDevice(
    compatible="ti,afe4403",
    model=AFE4403,
    dts="""
        heart-mon@$addr$ {
            compatible = "ti,afe4403";
            reg = <$addr$>;
            spi-max-frequency = <1000000>;
        };
    """,
)


def iio(dev: BoundDevice[AFE4403]) -> GuestPath:
    return dev.path.only("iio:device*")


def test_led_currents_are_written_to_ledcntrl(guest: RoadtestSession) -> None:
    """Each LED's current is its own 8-bit field of LEDCNTRL: writing one leaves the
    other, and each reads back what was written."""
    with guest.bound(AFE) as dev:
        write_str(iio(dev) / "out_current1_raw", "32")
        write_str(iio(dev) / "out_current3_raw", "200")
        assert read_int(iio(dev) / "out_current1_raw") == 32
        assert read_int(iio(dev) / "out_current3_raw") == 200
        ledcntrl = dev.model.regs[LEDCNTRL]
        assert ledcntrl >> 16 == 0
        assert sorted([ledcntrl >> 8 & 0xFF, ledcntrl & 0xFF]) == [32, 200]


@pytest.mark.parametrize("channel", INTENSITY_CHANNELS)
def test_a_result_channel_is_not_writable(guest: RoadtestSession, channel: int) -> None:
    """Writing in_intensityN_raw fails with EINVAL and writes no register: the results
    are the chip's, and the LED currents keep what they were set to."""
    with guest.bound(AFE) as dev:
        write_str(iio(dev) / "out_current1_raw", "32")
        before = len(dev.model.writes)
        ledcntrl = dev.model.regs[LEDCNTRL]
        with pytest.raises(OSError) as raised:
            write_str(iio(dev) / f"in_intensity{channel}_raw", "1")
        assert raised.value.errno == errno.EINVAL
        assert dev.model.writes[before:] == []
        assert dev.model.regs[LEDCNTRL] == ledcntrl
        assert read_int(iio(dev) / "out_current1_raw") == 32


def test_a_result_reads_its_register(guest: RoadtestSession) -> None:
    """in_intensityN_raw reads register 2Ah + N - 1, through SPI_READ (a read with it clear
    would give nothing)."""
    with guest.bound(AFE) as dev:
        for channel in INTENSITY_CHANNELS:
            dev.model.regs[LED2VAL + channel - 1] = 0x1000 * channel + 0x23
        for channel in INTENSITY_CHANNELS:
            assert read_int(iio(dev) / f"in_intensity{channel}_raw") == 0x1000 * channel + 0x23
        assert not dev.model.spi_read  # cleared again, so that writes reach the registers
