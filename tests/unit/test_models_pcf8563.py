"""The PCF8563 model against its datasheet: registers, the clock's carries, alarm, timer, INT."""

from __future__ import annotations

import datetime

import pytest

from roadtest.backend.gpio import GpioLine, VirtioGpio
from roadtest.models import ModelError
from roadtest.models.bcd_clock import bcd, from_bcd
from roadtest.models.pcf8563 import (
    AE,
    CENTURY,
    CS1_STOP,
    CS2_AF,
    CS2_AIE,
    CS2_TIE,
    PCF8563,
    REG_CENTURY_MONTHS,
    REG_CONTROL_STATUS_1,
    REG_CONTROL_STATUS_2,
    REG_DAY_ALARM,
    REG_HOUR_ALARM,
    REG_MINUTE_ALARM,
    REG_MINUTES,
    REG_TIMER,
    REG_TIMER_CONTROL,
    REG_VL_SECONDS,
    REG_WEEKDAY_ALARM,
    REG_YEARS,
    TIMER_TE,
    VL,
)


def read(model: PCF8563, addr: int, length: int) -> bytes:
    model.write(bytes([addr]))
    return model.read(length)


def write(model: PCF8563, addr: int, *values: int) -> None:
    model.write(bytes([addr, *values]))


def irq_line(model: PCF8563) -> GpioLine:
    line = VirtioGpio(ngpio=1).line(0)
    model.irq = line
    return line


def test_reset_values() -> None:
    assert read(PCF8563(), 0x00, 16) == bytes(
        [0x08, 0x00, VL, 0, 0, 0, 0, 0, 0, AE, AE, AE, AE, 0x80, 0x03, 0x00]
    )


def test_address_auto_increments_wraps_and_persists() -> None:
    m = PCF8563()
    write(m, 0x0E, 0x02, 0x2A, 0x00)  # timer control, timer, then wraps to control/status 1
    assert m.register(REG_TIMER_CONTROL) == 0x02
    assert m.register(REG_TIMER) == 0x2A
    assert m.all_reg_writes() == [(0x0E, 0x02), (0x0F, 0x2A), (0x00, 0x00)]
    assert read(m, 0x0F, 2) == bytes([0x2A, 0x00])
    # The pointer stays where the last access left it: the next read goes on from 01h.
    assert m.read(1) == bytes([0x00])
    assert m.read(1) == bytes([VL])


def test_bcd() -> None:
    assert bcd(59) == 0x59 and from_bcd(0x59) == 59
    with pytest.raises(ValueError):
        from_bcd(0x1A)
    with pytest.raises(ValueError):
        bcd(100)


def test_time_registers_and_weekday() -> None:
    m = PCF8563()
    m.set_time(datetime.datetime(2021, 12, 25, 11, 10, 37), century=True)
    assert read(m, 0x02, 7) == bytes([0x37, 0x10, 0x11, 0x25, 6, CENTURY | 0x12, 0x21])
    assert m.time == datetime.datetime(2021, 12, 25, 11, 10, 37)
    assert not m.voltage_low


def test_writes_set_the_time_and_clear_vl() -> None:
    m = PCF8563()
    assert m.voltage_low
    write(m, 0x02, 0x59, 0x59, 0x23, 0x28, 1, 0x02, 0x00)  # 2000-02-28 23:59:59, Monday
    assert not m.voltage_low
    m.advance(1)
    assert m.time == datetime.datetime(2000, 2, 29)  # year 00 is a leap year
    assert m.weekday == 2


def test_invalid_time_cannot_count() -> None:
    m = PCF8563()  # reset: day 00, month 00
    with pytest.raises(ModelError, match="holds 0x00"):
        m.advance(1)
    m.set_time(datetime.datetime(2021, 2, 28))
    write(m, 0x05, 0x31)  # 31 February: the driver had not written the month yet
    with pytest.raises(ModelError, match="valid date"):
        m.advance(1)


def test_carries_and_century_toggle() -> None:
    m = PCF8563()
    m.set_time(datetime.datetime(2099, 12, 31, 23, 59, 59), century=False)
    assert m.weekday == 4  # Thursday
    m.advance(1)
    assert read(m, 0x02, 7) == bytes([0x00, 0x00, 0x00, 0x01, 5, CENTURY | 0x01, 0x00])
    # The chip's year 00 has a 29 February (2100 would not).
    m.advance(59 * 86400)
    assert m.time == datetime.datetime(2000, 2, 29)
    assert m.weekday == (5 + 59) % 7
    # A century later C toggles back.
    m.set_time(datetime.datetime(2099, 12, 31, 23, 59, 59))
    m.advance(1)
    assert not m.century


def test_vl_stays_while_counting() -> None:
    m = PCF8563()
    m.set_time(datetime.datetime(2021, 1, 1), voltage_low=True)
    m.advance(61)
    assert m.voltage_low and m.time == datetime.datetime(2021, 1, 1, 0, 1, 1)


def test_stop_holds_the_clock() -> None:
    m = PCF8563()
    m.set_time(datetime.datetime(2021, 1, 1))
    write(m, REG_CONTROL_STATUS_1, CS1_STOP)
    m.advance(3600)
    assert m.time == datetime.datetime(2021, 1, 1)
    write(m, REG_CONTROL_STATUS_1, 0)
    m.advance(3600)
    assert m.time == datetime.datetime(2021, 1, 1, 1)


def set_alarm(m: PCF8563, minute: int, hour: int, day: int, wday: int) -> None:
    """The alarm registers, as the driver writes them (one byte a transfer); -1 disables one."""
    for reg, value in zip(
        (REG_MINUTE_ALARM, REG_HOUR_ALARM, REG_DAY_ALARM, REG_WEEKDAY_ALARM),
        (minute, hour, day, wday),
        strict=True,
    ):
        write(m, reg, AE if value < 0 else bcd(value))


def test_alarm_sets_af_when_the_clock_counts_into_a_match() -> None:
    m = PCF8563()
    line = irq_line(m)
    assert line.input  # INT idle is high, driven as soon as the line is wired
    m.set_time(datetime.datetime(2021, 1, 1, 1, 1, 10))  # a Friday
    set_alarm(m, 2, 1, 1, 5)
    write(m, REG_CONTROL_STATUS_2, CS2_AIE)
    m.advance(49)
    assert not m.alarm_flag and line.input
    m.advance(1)
    assert m.alarm_flag and not line.input  # INT active low
    # AF: writing 1 leaves it, writing 0 clears it (and releases INT).
    write(m, REG_CONTROL_STATUS_2, CS2_AIE | CS2_AF)
    assert m.alarm_flag
    write(m, REG_CONTROL_STATUS_2, CS2_AIE)
    assert not m.alarm_flag and line.input
    # Not again until the clock counts into a match once more.
    m.advance(3600)
    assert not m.alarm_flag


def test_alarm_ignores_disabled_fields_and_flags_without_aie() -> None:
    m = PCF8563()
    line = irq_line(m)
    m.set_time(datetime.datetime(2021, 1, 1, 23, 58))
    set_alarm(m, 0, -1, -1, -1)  # minute 00 of every hour
    m.advance(5 * 60)
    assert m.alarm_flag
    assert line.input  # AIE off: AF does not drive INT
    # AIE on, AF written 1 so that it stays: now INT follows AF.
    write(m, REG_CONTROL_STATUS_2, CS2_AIE | CS2_AF)
    assert not line.input


def test_alarm_match_on_write_does_not_fire() -> None:
    m = PCF8563()
    m.set_time(datetime.datetime(2021, 1, 1, 1, 2, 30))
    set_alarm(m, 2, -1, -1, -1)  # already 01:02
    m.advance(20)
    assert not m.alarm_flag


def test_no_alarm_when_every_ae_is_set() -> None:
    m = PCF8563()
    m.set_time(datetime.datetime(2021, 1, 1))
    m.advance(2 * 86400)
    assert not m.alarm_flag


def test_long_advance_passes_the_alarm_minute() -> None:
    m = PCF8563()
    m.set_time(datetime.datetime(2021, 1, 1, 1, 1, 10))
    set_alarm(m, 30, 3, -1, -1)
    m.advance(3 * 3600)  # passes 03:30 on the way to 04:01
    assert m.alarm_flag and m.time == datetime.datetime(2021, 1, 1, 4, 1, 10)


def test_timer_counts_down_and_sets_tf() -> None:
    m = PCF8563()
    line = irq_line(m)
    m.set_time(datetime.datetime(2021, 1, 1))
    write(m, REG_TIMER, 10)
    write(m, REG_TIMER_CONTROL, TIMER_TE | 0b10)  # 1 Hz
    write(m, REG_CONTROL_STATUS_2, CS2_TIE)
    m.advance(4)
    assert read(m, REG_TIMER, 1) == bytes([6])
    assert not m.timer_flag
    m.advance(9)  # reaches 0 after 6 more ticks, reloads 10, 3 more
    assert m.timer_flag and not line.input
    assert read(m, REG_TIMER, 1) == bytes([7])
    write(m, REG_CONTROL_STATUS_2, CS2_TIE | CS2_AF)  # AF written 1, TF written 0: TF clears
    assert not m.timer_flag and line.input


def test_timer_minute_source() -> None:
    m = PCF8563()
    m.set_time(datetime.datetime(2021, 1, 1))
    write(m, REG_TIMER, 2)
    write(m, REG_TIMER_CONTROL, TIMER_TE | 0b11)  # 1/60 Hz
    m.advance(119)
    assert not m.timer_flag
    m.advance(1)
    assert m.timer_flag


def test_timer_stopped_at_zero_or_disabled() -> None:
    m = PCF8563()
    m.set_time(datetime.datetime(2021, 1, 1))
    write(m, REG_TIMER_CONTROL, TIMER_TE | 0b00)  # n = 0: stopped
    m.advance(10)
    write(m, REG_TIMER, 1)
    write(m, REG_TIMER_CONTROL, 0b00)  # disabled
    m.advance(10)
    assert not m.timer_flag


def test_undefined_bits() -> None:
    m = PCF8563()
    m.set_time(datetime.datetime(2021, 12, 25, 11, 10, 37))
    write(m, REG_MINUTES, 0x80 | 0x10)  # an 'x' bit written 1 is not kept
    assert m.register(REG_MINUTES) == 0x10
    m.undefined_bits_read_as_one = True
    assert read(m, 0x02, 7) == bytes([0x37, 0x90, 0xD1, 0xE5, 0xFE, 0x72, 0x21])
    assert read(m, REG_CONTROL_STATUS_1, 2) == bytes([0x08 | 0x57, 0xE0])


@pytest.mark.parametrize(
    ("addr", "value", "match"),
    [
        (REG_CONTROL_STATUS_1, 0x01, "must be written 0"),
        (REG_CONTROL_STATUS_1, 0x80, "TEST1"),
        (REG_CONTROL_STATUS_2, 0x20, "must be written 0"),
        (REG_CONTROL_STATUS_2, 0x10, "TI_TP"),
        (REG_VL_SECONDS, 0x60, "BCD 0-59"),
        (REG_MINUTES, 0x1A, "BCD 0-59"),
        (REG_CENTURY_MONTHS, 0x13, "BCD 1-12"),
        (REG_CENTURY_MONTHS, CENTURY, "BCD 1-12"),
        (REG_YEARS, 0xA0, "BCD 0-99"),
        (REG_DAY_ALARM, 0x00, "BCD 1-31"),
    ],
)
def test_undefined_writes_are_model_errors(addr: int, value: int, match: str) -> None:
    with pytest.raises(ModelError, match=match):
        write(PCF8563(), addr, value)


def test_disabled_alarm_register_value_is_not_checked() -> None:
    m = PCF8563()
    write(m, REG_DAY_ALARM, AE | 0x00)  # day 00, but disabled
    assert m.register(REG_DAY_ALARM) == AE


def test_addresses_beyond_0f_are_model_errors() -> None:
    m = PCF8563()
    with pytest.raises(ModelError, match="0x10"):
        m.write(bytes([0x10]))
    with pytest.raises(ModelError):
        m.register(0x10)


def test_advance_backwards_is_an_error() -> None:
    with pytest.raises(ValueError):
        PCF8563().advance(-1)
