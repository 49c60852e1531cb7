"""The DS1307-family model against its datasheets: maps, power-on values, the pointer's
wrap, BCD ranges, CH and OSF, 12-hour mode, century bits, alarms and INTA, the trickle
charger."""

from __future__ import annotations

import datetime

import pytest

from roadtest.backend.gpio import GpioLine, VirtioGpio
from roadtest.models import ModelError
from roadtest.models.ds1307 import (
    A1F,
    A1IE,
    A2F,
    A2IE,
    AM,
    CB,
    CEB,
    CENTURY,
    CH,
    CTRL_OSF,
    DS1307,
    DS1337,
    DS1338,
    DS1340,
    DY_DT,
    H12,
    INTCN,
    M41T00,
    NEOSC,
    OSF,
    PM,
    REG_A1_SECONDS,
    REG_A2_MINUTES,
    REG_CONTROL,
    REG_DAY,
    REG_DS1337_CONTROL,
    REG_DS1337_STATUS,
    REG_FLAG,
    REG_HOURS,
    REG_MONTH,
    REG_SECONDS,
    REG_TRICKLE,
    REG_YEAR,
    DS1307Family,
)


def read(model: DS1307Family, addr: int, length: int) -> bytes:
    model.write(bytes([addr]))
    return model.read(length)


def write(model: DS1307Family, addr: int, *values: int) -> None:
    model.write(bytes([addr, *values]))


def irq_line(model: DS1337) -> GpioLine:
    line = VirtioGpio(ngpio=1).line(0)
    model.irq = line
    return line


CHRISTMAS = datetime.datetime(2021, 12, 25, 23, 10, 37)  # a Saturday: day 7 with Sunday 1


def test_power_on_values() -> None:
    # DS1307 Rev 3: 01/01/00 01 00:00:00 with CH set; control RS1 = RS0 = 1.
    assert read(DS1307(), 0x00, 8) == bytes([CH, 0, 0, 1, 1, 1, 0, 0x03])
    assert read(DS1338(), 0x00, 8) == bytes([CH, 0, 0, 1, 1, 1, 0, 0xB3])
    assert read(DS1337(), 0x00, 16) == bytes([0, 0, 0, 1, 1, 1, 0] + [0] * 7 + [0x18, OSF])
    assert read(DS1340(), 0x00, 10) == bytes([0, 0, 0, 1, 1, 1, 0, 0x80, 0x00, OSF])
    assert read(M41T00(), 0x00, 8) == bytes([CH, 0, 0, 1, 1, 1, 0, 0x80])


@pytest.mark.parametrize(
    ("model", "last"),
    [(DS1307, 0x3F), (DS1338, 0x3F), (DS1337, 0x0F), (DS1340, 0x09), (M41T00, 0x07)],
)
def test_pointer_wraps_after_the_last_address_and_persists(
    model: type[DS1307Family], last: int
) -> None:
    m = model()
    first = read(m, 0x00, 1)
    assert read(m, last, 2)[1:] == first
    # The pointer stays where the last access left it: 01h, after the wrap.
    assert m.read(1) == read(m, 0x01, 1)
    with pytest.raises(ModelError, match="does not exist"):
        m.write(bytes([last + 1]))


def test_ds1307_ram_wraps_into_the_clock() -> None:
    m = DS1307()
    write(m, 0x3E, 0xAB, 0xCD, 0x59)  # the last two RAM bytes, then seconds
    assert m.nvram[-2:] == bytes([0xAB, 0xCD])
    assert m.register(REG_SECONDS) == 0x59  # CH cleared by the write
    assert m.all_reg_writes() == [(0x3E, 0xAB), (0x3F, 0xCD), (0x00, 0x59)]


def test_time_registers_read_back() -> None:
    m = DS1307()
    m.set_time(CHRISTMAS)
    assert read(m, 0x00, 7) == bytes([0x37, 0x10, 0x23, 7, 0x25, 0x12, 0x21])
    assert m.time == CHRISTMAS and not m.halted


def test_twelve_hour_mode() -> None:
    m = DS1337()
    m.set_time(CHRISTMAS, hour24=False)
    # Bit 6 set: 12-hour mode; bit 5 PM; 11 in BCD.
    assert m.register(REG_HOURS) == H12 | PM | 0x11
    assert not m.hour24 and m.time == CHRISTMAS
    m.advance(3600)  # 11 PM -> 12 AM, the date on
    assert m.register(REG_HOURS) == H12 | 0x12
    assert m.time == CHRISTMAS + datetime.timedelta(hours=1)
    assert m.weekday == 1  # day 7 -> 1 at midnight


def test_ch_halts_the_clock() -> None:
    m = DS1307()
    m.set_time(CHRISTMAS)
    write(m, REG_SECONDS, CH | 0x37)
    assert m.halted
    m.advance(100)
    assert m.time == CHRISTMAS
    write(m, REG_SECONDS, 0x37)
    m.advance(100)
    assert m.time == CHRISTMAS + datetime.timedelta(seconds=100)


def test_ds1338_osf_is_written_0_to_clear_and_set_by_ch() -> None:
    m = DS1338()
    assert m.oscillator_stop_flag
    write(m, REG_CONTROL, 0xB3)  # a 1 written leaves it
    assert m.oscillator_stop_flag
    write(m, REG_CONTROL, 0x93)
    assert not m.oscillator_stop_flag
    m.set_time(CHRISTMAS)
    write(m, REG_SECONDS, CH)  # the oscillator stopped by software
    assert m.register(REG_CONTROL) & CTRL_OSF


def test_ds1337_eosc_stops_the_oscillator_and_sets_osf() -> None:
    m = DS1337()
    m.set_time(CHRISTMAS)
    assert not m.oscillator_stop_flag
    write(m, REG_DS1337_CONTROL, NEOSC)
    assert m.halted and m.oscillator_stop_flag
    m.advance(10)
    assert m.time == CHRISTMAS


def test_ds1340_eosc_does_not_stop_it_on_vcc() -> None:
    m = DS1340()
    m.set_time(CHRISTMAS)
    write(m, REG_SECONDS, NEOSC | 0x37)
    m.advance(1)
    assert m.time == CHRISTMAS + datetime.timedelta(seconds=1)
    assert m.register(REG_SECONDS) & NEOSC


def test_century_bits_toggle_at_99_to_00() -> None:
    m = DS1337()
    m.set_time(datetime.datetime(2099, 12, 31, 23, 59, 59), century=False)
    m.advance(1)
    assert m.register(REG_MONTH) == CENTURY | 0x01 and m.register(REG_YEAR) == 0x00
    d = DS1340()
    d.set_time(datetime.datetime(2099, 12, 31, 23, 59, 59), century=False)
    assert d.register(REG_HOURS) == CEB | 0x23
    d.advance(1)
    assert d.register(REG_HOURS) == CEB | CB and d.century
    # Without CEB, CB stays.
    write(d, REG_HOURS, 0x23)
    d.set_time(datetime.datetime(2099, 12, 31, 23, 59, 59))
    d.advance(1)
    assert d.register(REG_HOURS) == 0x00


@pytest.mark.parametrize(
    ("addr", "value", "match"),
    [
        (REG_SECONDS, 0x60, "BCD 0-59"),
        (REG_SECONDS, 0x5A, "BCD 0-59"),
        (REG_HOURS, 0x24, "hours register"),
        (REG_HOURS, H12 | 0x13, "hours register"),
        (REG_HOURS, H12 | 0x00, "hours register"),
        (REG_DAY, 0x00, "BCD 1-7"),
        (REG_DAY, 0x08, "BCD 1-7"),
        (0x04, 0x32, "BCD 1-31"),
        (REG_MONTH, 0x13, "BCD 1-12"),
        (REG_YEAR, 0xA0, "BCD 0-99"),
    ],
)
def test_illogical_time_writes_are_model_errors(addr: int, value: int, match: str) -> None:
    with pytest.raises(ModelError, match=match):
        write(DS1307(), addr, value)


def test_ds1340_hours_are_24_hour_with_century_bits() -> None:
    m = DS1340()
    write(m, REG_HOURS, CEB | CB | 0x23)
    assert m.register(REG_HOURS) == CEB | CB | 0x23
    with pytest.raises(ModelError):
        write(m, REG_HOURS, 0x24)


def test_zero_bits_read_zero() -> None:
    m = DS1307()
    write(m, REG_CONTROL, 0xFF)
    assert m.register(REG_CONTROL) == 0x93  # OUT, SQWE, RS1, RS0
    s = DS1337()
    write(s, REG_DS1337_STATUS, 0xFC)
    assert s.register(REG_DS1337_STATUS) == OSF  # bits 6-2 are 0; OSF written 1 stays


def test_ds1337_alarm1_sets_a1f_and_inta() -> None:
    m = DS1337()
    line = irq_line(m)
    assert line.input  # INTA idle: released, pulled up
    m.set_time(datetime.datetime(2021, 1, 1, 1, 1, 50))  # a Friday
    write(m, REG_A1_SECONDS, 0x00, 0x02, 0x01, 0x01)  # 01:02:00 on the 1st
    write(m, REG_DS1337_CONTROL, INTCN | A1IE)
    m.advance(9)
    assert not m.alarm1_flag and line.input
    m.advance(1)
    assert m.alarm1_flag and not line.input
    # A1F: a 1 written leaves it; a 0 written clears it and releases INTA.
    write(m, REG_DS1337_STATUS, A1F)
    assert m.alarm1_flag
    write(m, REG_DS1337_STATUS, 0)
    assert not m.alarm1_flag and line.input
    m.advance(59)
    assert not m.alarm1_flag  # the date and time do not match again


def test_ds1337_alarm_masks_and_day_of_week() -> None:
    m = DS1337()
    m.set_time(datetime.datetime(2021, 1, 1, 0, 0, 0), weekday=6)
    # Alarm 1 every minute at 30 seconds (A1M2..A1M4 set).
    write(m, REG_A1_SECONDS, 0x30, AM, AM, AM)
    m.advance(30)
    assert m.alarm1_flag
    write(m, REG_DS1337_STATUS, 0)
    # Alarm 2 on day 7 at 00:00 (DY/DT = 1): a day later.
    write(m, REG_A2_MINUTES, 0x00, 0x00, DY_DT | 7)
    m.advance(86400 - 30 - 1)
    assert not m.alarm2_flag
    m.advance(1)
    assert m.alarm2_flag and m.weekday == 7


def test_ds1337_alarm2_on_inta_only_without_intcn() -> None:
    m = DS1337()
    line = irq_line(m)
    m.set_time(datetime.datetime(2021, 1, 1, 0, 0, 59))
    write(m, REG_A2_MINUTES, 0x01, AM, AM)  # minute 01 of every hour
    write(m, REG_DS1337_CONTROL, INTCN | A2IE)
    m.advance(1)
    assert m.alarm2_flag and line.input  # INTCN = 1: alarm 2 is on SQW/INTB
    write(m, REG_DS1337_CONTROL, A2IE)
    assert not line.input  # INTCN = 0: on INTA
    write(m, REG_DS1337_STATUS, 0)
    assert line.input and m.register(REG_DS1337_STATUS) & (A1F | A2F) == 0


def test_ds1337_12_hour_alarm_hour() -> None:
    m = DS1337()
    m.set_time(datetime.datetime(2021, 1, 1, 12, 59, 59))
    write(m, REG_A1_SECONDS, 0x00, 0x00, H12 | PM | 0x01, AM)  # 1 PM
    m.advance(1)
    assert m.alarm1_flag


def test_ds1340_trickle_charger_table() -> None:
    m = DS1340()
    assert m.trickle_charger is None  # disabled at power-on
    for value, expected in [
        (0xA5, (False, 250)),
        (0xA9, (True, 250)),
        (0xA6, (False, 2000)),
        (0xAA, (True, 2000)),
        (0xA7, (False, 4000)),
        (0xAB, (True, 4000)),
        (0x5A, None),  # TCS not 1010
        (0xA1, None),  # DS 00
        (0xAD, None),  # DS 11
        (0xA4, None),  # ROUT 00
    ]:
        write(m, REG_TRICKLE, value)
        assert m.trickle_charger == expected, hex(value)


def test_ds1340_flag_register() -> None:
    m = DS1340()
    assert m.oscillator_stop_flag
    write(m, REG_FLAG, 0xFF)
    assert m.register(REG_FLAG) == OSF
    write(m, REG_FLAG, 0x00)
    assert not m.oscillator_stop_flag


def test_nvram() -> None:
    m = DS1338()
    m.nvram = bytes(range(56))
    assert read(m, 0x08, 56) == bytes(range(56))
    with pytest.raises(ValueError):
        m.nvram = b"\x00"
    with pytest.raises(AttributeError):
        DS1337().nvram  # noqa: B018


def test_invalid_time_cannot_count() -> None:
    m = DS1337()
    m.poke(0x04, 0x31)
    m.poke(REG_MONTH, 0x02)  # 31 February
    with pytest.raises(ModelError, match="valid date"):
        m.advance(1)
    with pytest.raises(ValueError):
        m.advance(-1)


def test_m41t00_stop_bit_century_and_calibration() -> None:
    m = M41T00()
    assert m.halted  # ST set: never started
    m.set_time(datetime.datetime(2099, 12, 31, 23, 59, 59), century=False)
    assert not m.halted and m.register(REG_HOURS) == CEB | 0x23
    m.advance(1)
    assert m.register(REG_HOURS) == CEB | CB
    write(m, REG_SECONDS, CH)  # ST: the oscillator stops
    m.advance(5)
    assert m.time == datetime.datetime(2000, 1, 1)
    with pytest.raises(ModelError):
        write(m, REG_HOURS, 0x24)  # 24-hour only: 00-23
    write(m, REG_CONTROL, 0x80 | 0x40 | 0x20 | 3)  # OUT, FT, S = 1, 3 steps
    assert m.frequency_test and m.calibration_ppb == 3 * 4068
    write(m, REG_CONTROL, 0x1F)  # S = 0, 31 steps
    assert not m.frequency_test and m.calibration_ppb == -31 * 2034
