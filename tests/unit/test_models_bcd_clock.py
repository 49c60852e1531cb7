"""The shared BCD clock pieces: digits, 12/24-hour registers, the two-digit calendar."""

from __future__ import annotations

import datetime

import pytest

from roadtest.models.bcd_clock import (
    PM_BIT,
    advance_calendar,
    bcd,
    bcd_in_range,
    from_bcd,
    hour_of,
    hours_register,
    weekday_sunday0,
)


def test_bcd_round_trip() -> None:
    for value in range(100):
        assert from_bcd(bcd(value)) == value
    assert bcd(59) == 0x59
    with pytest.raises(ValueError):
        bcd(100)
    with pytest.raises(ValueError):
        bcd(-1)
    for bad in (0x0A, 0xA0, 0x1F, 0xFF):
        with pytest.raises(ValueError):
            from_bcd(bad)


def test_bcd_in_range() -> None:
    assert bcd_in_range(0x59, 0x7F, 0, 59)
    assert bcd_in_range(0x80 | 0x59, 0x7F, 0, 59)  # a flag beside the field is not its value
    assert not bcd_in_range(0x60, 0x7F, 0, 59)
    assert not bcd_in_range(0x1A, 0x7F, 0, 59)
    assert not bcd_in_range(0x00, 0x3F, 1, 31)


@pytest.mark.parametrize(
    ("hour", "register"),
    [
        (0, 0x12),
        (1, 0x01),
        (11, 0x11),
        (12, PM_BIT | 0x12),
        (13, PM_BIT | 0x01),
        (23, PM_BIT | 0x11),
    ],
)
def test_twelve_hour_registers(hour: int, register: int) -> None:
    # 12 AM is midnight, 12 PM noon: the datasheets' 12-hour clock.
    assert hours_register(hour, hour24=False) == register
    assert hour_of(register, hour24=False) == hour
    assert hours_register(hour, hour24=False, mode_bit=0x40) == 0x40 | register
    assert hour_of(0x40 | register, hour24=False) == hour


def test_twenty_four_hour_registers() -> None:
    for hour in range(24):
        assert hour_of(hours_register(hour, hour24=True), hour24=True) == hour
    assert hours_register(23, hour24=True) == 0x23
    for bad in (0x24, 0x3A):
        with pytest.raises(ValueError):
            hour_of(bad, hour24=True)
    for bad in (0x00, 0x13):
        with pytest.raises(ValueError):
            hour_of(bad, hour24=False)
    with pytest.raises(ValueError):
        hours_register(24, hour24=True)


def test_weekday() -> None:
    assert weekday_sunday0(datetime.date(2021, 12, 26)) == 0  # a Sunday
    assert weekday_sunday0(datetime.date(2021, 12, 25)) == 6


def test_advance_calendar_carries() -> None:
    then, wraps, days = advance_calendar(datetime.datetime(2020, 2, 28, 23, 59, 59), 1)
    assert (then, wraps, days) == (datetime.datetime(2020, 2, 29), 0, 1)
    then, wraps, days = advance_calendar(datetime.datetime(2021, 1, 1), 59)
    assert (then, wraps, days) == (datetime.datetime(2021, 1, 1, 0, 0, 59), 0, 0)


def test_advance_calendar_wraps_the_century_onto_a_leap_year_00() -> None:
    then, wraps, days = advance_calendar(datetime.datetime(2099, 12, 31, 23, 59, 59), 1)
    assert (then, wraps, days) == (datetime.datetime(2000, 1, 1), 1, 1)
    # The chips' year 00 has a 29 February (the year 2100 would not).
    then, _, _ = advance_calendar(datetime.datetime(2099, 12, 31, 23, 59, 59), 1 + 59 * 86400)
    assert then == datetime.datetime(2000, 2, 29)
    # Two centuries: two wraps.
    seconds = int((datetime.datetime(2100, 1, 1) - datetime.datetime(2000, 1, 1)).total_seconds())
    then, wraps, days = advance_calendar(datetime.datetime(2000, 1, 1), 2 * seconds)
    assert (then, wraps, days) == (datetime.datetime(2000, 1, 1), 2, 2 * 36525)


def test_advance_calendar_refuses() -> None:
    with pytest.raises(ValueError):
        advance_calendar(datetime.datetime(2021, 1, 1), -1)
    with pytest.raises(ValueError):
        advance_calendar(datetime.datetime(1999, 12, 31), 1)
