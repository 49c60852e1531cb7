"""PCF85063A datasheet properties (drivers/rtc/rtc-pcf85063.c), through /dev/rtcN and the
RTC class's `offset` attribute.

PCF85063A Rev. 7, "Time and date registers": seconds (04h, OS in bit 7), minutes, hours,
days, weekdays, months and years (0Ah) hold 00-59, 00-59, 00-23, 01-31, 0-6, 01-12 and
00-99 in BCD; OS set means the clock's integrity is not guaranteed. The Offset register
(02h; PCF85063TP Rev. 4 section 8.2.3, Table 13, the same register): OFFSET[6:0] in two's
complement, -64..+63, at 4.34 ppm a step with MODE = 0 and 4.069 ppm with MODE = 1.
"""

from __future__ import annotations

import datetime
import errno

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roadtest.models.pcf85063 import OFFSET_PPM, PCF85063A, REG_OFFSET
from roadtest.testing import I2CDevice, RoadtestSession
from roadtest.testing.rtc import RTC, RTC_VL_DATA_INVALID

CLOCK = I2CDevice(
    compatible="nxp,pcf85063a",
    model=PCF85063A,
    dts="""
        rtc@$addr$ {
            compatible = "nxp,pcf85063a";
            reg = <0x$addr$>;
        };
    """,
)

# Whole seconds: the clock has no finer unit; its years are 2000-2099.
DATES = st.datetimes(
    datetime.datetime(2000, 1, 1), datetime.datetime(2099, 12, 31, 23, 59, 59)
).map(lambda when: when.replace(microsecond=0))
STEP_PPB = tuple(round(ppm * 1000) for ppm in OFFSET_PPM)  # 4340, 4069


def offset_ppb(register: int) -> int:
    steps = (register & 0x3F) - (register & 0x40)
    return steps * STEP_PPB[register >> 7]


def nearest_error(ppb: int) -> int:
    """How far the nearest correction the register has is from `ppb`."""
    return min(abs(ppb - steps * step) for step in STEP_PPB for steps in range(-64, 64))


@given(when=DATES)
def test_every_valid_date_reads_back_exactly(
    guest: RoadtestSession, when: datetime.datetime
) -> None:
    """Any date and time of 2000-2099 in the registers (OS clear) is what RTC_RD_TIME
    reports; tm_wday is the Weekdays register."""
    dev = guest.bound_for_examples(CLOCK)
    dev.model.set_time(when)
    with RTC(dev.path) as rtc:
        tm = rtc.read_rtc_time()
        assert tm.to_datetime() == when
        assert tm.tm_wday == dev.model.weekday
        assert rtc.vl_read() == 0


@given(when=DATES)
def test_oscillator_stop_is_an_error(guest: RoadtestSession, when: datetime.datetime) -> None:
    """OS set: whatever the registers hold, no date (EINVAL), and the data is invalid."""
    dev = guest.bound_for_examples(CLOCK)
    dev.model.set_time(when, oscillator_stopped=True)
    with RTC(dev.path) as rtc:
        with pytest.raises(OSError) as info:
            rtc.read_time()
        assert info.value.errno == errno.EINVAL
        assert rtc.vl_read() & RTC_VL_DATA_INVALID


@given(ppb=st.integers(-64 * STEP_PPB[0], 63 * STEP_PPB[0]))
def test_offset_is_the_nearest_correction(guest: RoadtestSession, ppb: int) -> None:
    """Any offset the register spans is programmed as the nearest correction of either
    mode (ties either way), and reads back as that correction."""
    dev = guest.bound_for_examples(CLOCK)
    rtc = RTC(dev.path)
    rtc.write_offset(ppb)
    written = dev.model.get_last_reg_write(REG_OFFSET)
    assert abs(ppb - offset_ppb(written)) == nearest_error(ppb)
    assert rtc.read_offset() == offset_ppb(written)
