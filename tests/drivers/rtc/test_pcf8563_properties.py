"""PCF8563 datasheet properties (drivers/rtc/rtc-pcf8563.c), through /dev/rtcN's RTC_RD_TIME.

Datasheet PCF8563 Rev. 11, 8.4 "Time and date registers": seconds (02h, with VL in bit
7), minutes, hours, days, weekdays, months (07h, with the century bit C in bit 7) and
years hold their values in BCD, with the ranges 00-59, 00-59, 00-23, 01-31, 0-6, 01-12
and 00-99; bits marked x are not implemented and "may differ from what was previously
written". 8.4.1.1: VL set means "the integrity of the clock information is not
guaranteed".
"""

from __future__ import annotations

import calendar
import datetime
import errno

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roadtest.models.pcf8563 import (
    PCF8563,
    REG_CENTURY_MONTHS,
    REG_DAYS,
    REG_HOURS,
    REG_MINUTES,
    REG_VL_SECONDS,
    REG_YEARS,
)
from roadtest.testing import I2CDevice, RoadtestSession
from roadtest.testing.rtc import RTC, RTC_VL_DATA_INVALID

# start-year (Documentation/devicetree/bindings/rtc/rtc.yaml): the RTC core reports the
# chip's 100 years as start-year and on. Without it the driver's window starts in 1970,
# and years 70-99 read as 1970-1999 (the core's offsetting, not the chip's calendar).
CLOCK = I2CDevice(
    compatible="nxp,pcf8563",
    model=PCF8563,
    dts="""
        rtc@$addr$ {
            compatible = "nxp,pcf8563";
            reg = <0x$addr$>;
            start-year = <2000>;
        };
    """,
)

# Whole seconds: the clock has no finer unit.
DATES = st.datetimes(
    datetime.datetime(2000, 1, 1), datetime.datetime(2099, 12, 31, 23, 59, 59)
).map(lambda when: when.replace(microsecond=0))
# Each BCD time register: (its value bits, the highest value the datasheet allows).
FIELDS = {
    REG_VL_SECONDS: (0x7F, 59),
    REG_MINUTES: (0x7F, 59),
    REG_HOURS: (0x3F, 23),
    REG_DAYS: (0x3F, 31),
    REG_CENTURY_MONTHS: (0x1F, 12),
    REG_YEARS: (0xFF, 99),
}


def is_bcd(value: int) -> bool:
    return value & 0xF <= 9 and value >> 4 <= 9


def from_bcd(value: int) -> int:
    return (value >> 4) * 10 + (value & 0xF)


def clock(guest: RoadtestSession, when: datetime.datetime, century: bool, x_bits: bool) -> PCF8563:
    """The kept clock, holding `when` (VL clear), its x bits reading as `x_bits`."""
    model = guest.bound_for_examples(CLOCK).model
    model.set_time(when, century=century)
    model.undefined_bits_read_as_one = x_bits
    return model


@given(when=DATES, century=st.booleans(), x_bits=st.booleans())
def test_every_valid_date_reads_back_exactly(
    guest: RoadtestSession, when: datetime.datetime, century: bool, x_bits: bool
) -> None:
    """Any date and time of 2000-2099 in the BCD registers, with either C and whatever
    the x bits read, is what RTC_RD_TIME reports; tm_wday is the weekday register."""
    model = clock(guest, when, century, x_bits)
    with RTC(guest.bound_for_examples(CLOCK).path) as rtc:
        tm = rtc.read_rtc_time()
        assert tm.to_datetime() == when
        assert tm.tm_wday == model.weekday
        assert rtc.vl_read() == 0


@given(when=DATES, century=st.booleans(), x_bits=st.booleans())
def test_voltage_low_is_an_error(
    guest: RoadtestSession, when: datetime.datetime, century: bool, x_bits: bool
) -> None:
    """VL set: whatever date the registers hold, no date is reported (EINVAL), and
    RTC_VL_READ says the data is invalid."""
    model = clock(guest, when, century, x_bits)
    model.voltage_low = True
    with RTC(guest.bound_for_examples(CLOCK).path) as rtc:
        with pytest.raises(OSError) as info:
            rtc.read_time()
        assert info.value.errno == errno.EINVAL
        assert rtc.vl_read() & RTC_VL_DATA_INVALID


@st.composite
def dates_with_a_value_out_of_range(draw: st.DrawFn) -> tuple[datetime.datetime, int, int]:
    """(a date, a time register, BCD digits beyond that register's range in that date:
    seconds 60-79, hour 24-39, day 00 or past the month's end, month 00 or 13-19).
    Every two-digit year is one."""
    when = draw(DATES)
    reg = draw(st.sampled_from(sorted(set(FIELDS) - {REG_YEARS})))
    mask, highest = FIELDS[reg]
    if reg == REG_DAYS:
        highest = calendar.monthrange(when.year, when.month)[1]
    values = [v for v in range(mask + 1) if is_bcd(v) and from_bcd(v) > highest]
    if reg in (REG_DAYS, REG_CENTURY_MONTHS):
        values.append(0x00)  # they count from 1
    return when, reg, draw(st.sampled_from(values))


@given(case=dates_with_a_value_out_of_range())
def test_an_out_of_range_value_is_an_error(
    guest: RoadtestSession, case: tuple[datetime.datetime, int, int]
) -> None:
    """A time register holding BCD digits beyond its range gives EINVAL, never a date."""
    when, reg, value = case
    model = clock(guest, when, century=False, x_bits=False)
    model.regs[reg] = value
    with RTC(guest.bound_for_examples(CLOCK).path) as rtc:
        with pytest.raises(OSError) as info:
            rtc.read_time()
        assert info.value.errno == errno.EINVAL


@st.composite
def dates_with_a_digit_above_nine(draw: st.DrawFn) -> tuple[datetime.datetime, int, int]:
    """(a date, a time register, a value of its bits with a digit A-F: not BCD)."""
    when = draw(DATES)
    reg = draw(st.sampled_from(sorted(FIELDS)))
    mask, _ = FIELDS[reg]
    return when, reg, draw(st.sampled_from([v for v in range(mask + 1) if not is_bcd(v)]))


@given(case=dates_with_a_digit_above_nine())
def test_a_digit_above_nine_is_an_error(
    guest: RoadtestSession, case: tuple[datetime.datetime, int, int]
) -> None:
    """A time register whose digits are not BCD (a nibble A-F) gives EINVAL, never a
    date: the datasheet defines no such value. Found by this property (seconds 0x0a read
    as 00:00:10, years 0xbd as 2123); the regression test of kernel-patches/rtc/0001
    (tests/guest/test_fuzz_finds_real_bugs.py shows it failing without the patch)."""
    when, reg, value = case
    model = clock(guest, when, century=False, x_bits=False)
    model.regs[reg] = value
    with RTC(guest.bound_for_examples(CLOCK).path) as rtc:
        with pytest.raises(OSError) as info:
            rtc.read_time()
        assert info.value.errno == errno.EINVAL
