"""The PCF85063A/TP model against its datasheets (PCF85063A Rev. 7, PCF85063TP Rev. 4):
reset values, access, the OS flag, the offset and CLKOUT tables, the alarm, timer and INT."""

from __future__ import annotations

import datetime

import pytest

from roadtest.backend.gpio import GpioLine, VirtioGpio
from roadtest.models import ModelError
from roadtest.models.bcd_clock import bcd, from_bcd, is_bcd
from roadtest.models.bcd_clock import weekday_sunday0 as weekday
from roadtest.models.pcf85063 import (
    AEN,
    CTRL1_12_24,
    CTRL1_CAP_SEL,
    CTRL1_STOP,
    CTRL2_AF,
    CTRL2_AIE,
    CTRL2_MI,
    CTRL2_TF,
    OS,
    PCF85063,
    PCF85063A,
    PCF85063TP,
    REG_CONTROL_1,
    REG_CONTROL_2,
    REG_HOURS,
    REG_OFFSET,
    REG_RAM_BYTE,
    REG_SECOND_ALARM,
    REG_SECONDS,
    REG_TIMER_MODE,
    REG_TIMER_VALUE,
    REG_WEEKDAY_ALARM,
    REG_YEARS,
    SOFTWARE_RESET,
    hour_register,
    offset_register,
)

START = datetime.datetime(2021, 1, 1, 1, 1, 10)  # a Friday


def read(model: PCF85063, addr: int, length: int) -> bytes:
    model.write(bytes([addr]))
    return model.read(length)


def irq_line(model: PCF85063) -> GpioLine:
    line = VirtioGpio(ngpio=1).line(0)
    model.irq = line
    return line


def test_bcd_helpers() -> None:
    assert bcd(59) == 0x59 and from_bcd(0x59) == 59
    assert is_bcd(0x99) and not is_bcd(0x9A) and not is_bcd(0xA0)
    with pytest.raises(ValueError):
        from_bcd(0x1A)
    with pytest.raises(ValueError):
        bcd(100)
    assert weekday(datetime.date(2000, 1, 1)) == 6  # a Saturday


def test_reset_values() -> None:
    # Register overview, reset values: OS set, 2000-01-01 (a Saturday, weekday 6)
    # 00:00:00, the alarms disabled (AEN_x = 1), Timer_mode TCF = 11 (1/60 Hz).
    assert read(PCF85063A(), 0x00, 0x12) == bytes(
        [0, 0, 0, 0, OS, 0, 0, 1, 6, 1, 0, AEN, AEN, AEN, AEN, AEN, 0, 0x18]
    )
    assert read(PCF85063TP(), 0x00, 0x0B) == bytes([0, 0, 0, 0, OS, 0, 0, 1, 6, 1, 0])


def test_address_auto_increments_wraps_and_persists() -> None:
    model = PCF85063A()
    model.write(bytes([0x11]))
    assert model.read(2) == bytes([0x18, 0x00])  # 11h, then 00h
    assert model.read(1) == bytes([0x00])  # 01h: kept from the last transfer
    tp = PCF85063TP()
    tp.write(bytes([0x0A]))
    assert tp.read(2) == bytes([0x00, 0x00])  # 0Ah, then 00h
    tp.write(bytes([0x0A, 0x21, CTRL1_CAP_SEL]))  # Years, then Control_1 after the wrap
    assert tp.register(REG_YEARS) == 0x21
    assert tp.register(REG_CONTROL_1) == CTRL1_CAP_SEL


def test_registers_past_the_last_do_not_exist() -> None:
    with pytest.raises(ModelError, match="0x12"):
        PCF85063A().write(bytes([0x12]))
    with pytest.raises(ModelError, match="0x0b"):
        PCF85063TP().write(bytes([0x0B, 0x00]))


def test_software_reset() -> None:
    model = PCF85063A()
    model.set_time(START)
    model.write(bytes([REG_RAM_BYTE, 0x42]))
    model.write(bytes([REG_CONTROL_1, CTRL1_CAP_SEL]))
    model.write(bytes([REG_CONTROL_1, SOFTWARE_RESET]))
    assert model.software_resets == 1
    assert read(model, 0x00, 0x12) == read(PCF85063A(), 0x00, 0x12)
    assert model.register(REG_CONTROL_1) == 0  # SR reads 0
    # SR, bit 6 or bit 3 in anything but 58h is not the command.
    for value in (0x10, 0x40, 0x08, 0x59):
        with pytest.raises(ModelError, match="58h"):
            model.write(bytes([REG_CONTROL_1, value]))


def test_os_flag_until_cleared() -> None:
    model = PCF85063A()
    assert model.oscillator_stopped
    model.write(bytes([REG_SECONDS, 0x00, 0x10, 0x11, 0x25, 0x06, 0x12, 0x21]))
    assert not model.oscillator_stopped  # written with OS = 0
    assert model.time == datetime.datetime(2021, 12, 25, 11, 10, 0)
    model.oscillator_stopped = True
    assert model.register(REG_SECONDS) == OS | 0x00


@pytest.mark.parametrize(
    ("reg", "value"),
    [(REG_SECONDS, 0x60), (REG_SECONDS, 0x0A), (0x06, 0x24), (0x07, 0x00), (0x08, 0x07),
     (0x09, 0x13), (REG_YEARS, 0xA0), (REG_SECOND_ALARM, 0x5F)],
)  # fmt: skip
def test_values_outside_bcd_ranges_are_refused(reg: int, value: int) -> None:
    with pytest.raises(ModelError, match="not a BCD value in range"):
        PCF85063A().write(bytes([reg, value]))


def test_disabled_alarm_value_is_not_checked() -> None:
    model = PCF85063A()
    model.write(bytes([REG_WEEKDAY_ALARM, AEN | 0x07]))
    assert model.register(REG_WEEKDAY_ALARM) == AEN | 0x07


@pytest.mark.parametrize(
    ("register", "ppm"),
    [
        # PCF85063TP Rev. 4 Table 13 (the same table as the PCF85063A's)
        (0x3F, 273.420), (0x3E, 269.080), (0x01, 4.340), (0x00, 0.0), (0x7F, -4.340),
        (0x41, -273.420), (0x40, -277.760),
        (0xBF, 256.347), (0x81, 4.069), (0x80, 0.0), (0xFF, -4.069), (0xC0, -260.416),
    ],
)  # fmt: skip
def test_offset_table(register: int, ppm: float) -> None:
    model = PCF85063A()
    model.write(bytes([REG_OFFSET, register]))
    assert model.offset_ppm() == pytest.approx(ppm, abs=5e-4)


def test_offset_register() -> None:
    assert offset_register(0, -64) == 0x40
    assert offset_register(1, 63) == 0xBF
    with pytest.raises(ValueError):
        offset_register(0, 64)


@pytest.mark.parametrize(
    ("cof", "hz"),
    [(0, 32768), (1, 16384), (2, 8192), (3, 4096), (4, 2048), (5, 1024), (6, 1), (7, 0)],
)
def test_clkout_frequencies(cof: int, hz: int) -> None:
    model = PCF85063A()
    assert model.clkout_hz == 32768  # the reset value
    model.write(bytes([REG_CONTROL_2, cof]))
    assert model.clkout_hz == hz


def test_cap_sel() -> None:
    model = PCF85063A()
    assert model.load_capacitance_pf == 7.0
    model.write(bytes([REG_CONTROL_1, CTRL1_CAP_SEL]))
    assert model.load_capacitance_pf == 12.5


def test_unmodelled_control_bits_are_refused() -> None:
    model = PCF85063A()
    for value, what in ((0x80, "EXT_TEST"), (0x04, "CIE")):
        with pytest.raises(ModelError, match=what):
            model.write(bytes([REG_CONTROL_1, value]))
    with pytest.raises(ModelError, match="TI_TP"):
        model.write(bytes([REG_TIMER_MODE, 0x19]))


def test_twelve_hour_mode() -> None:
    assert [hour_register(h, True) for h in (0, 1, 11, 12, 13, 23)] == [
        0x12, 0x01, 0x11, 0x32, 0x21, 0x31
    ]  # fmt: skip
    model = PCF85063A()
    model.set_time(datetime.datetime(2021, 1, 1, 13, 59, 59), twelve_hour=True)
    assert model.register(REG_CONTROL_1) & CTRL1_12_24
    assert model.register(REG_HOURS) == 0x21  # PM, 01
    model.advance(1)
    assert model.register(REG_HOURS) == 0x22
    assert model.time == datetime.datetime(2021, 1, 1, 14, 0, 0)
    with pytest.raises(ModelError):
        model.write(bytes([REG_HOURS, 0x13]))  # 13 is no 12-hour value


def test_flags_cleared_by_writing_zero() -> None:
    model = PCF85063A()
    model.regs[REG_CONTROL_2] = CTRL2_AF | CTRL2_TF
    model.write(bytes([REG_CONTROL_2, CTRL2_AF]))  # AF written 1: kept; TF written 0
    assert model.register(REG_CONTROL_2) == CTRL2_AF
    model.write(bytes([REG_CONTROL_2, 0]))
    assert not model.alarm_flag


def set_alarm(model: PCF85063A, second: int, minute: int, hour: int, day: int) -> None:
    model.write(bytes([REG_SECOND_ALARM, bcd(second), bcd(minute), bcd(hour), bcd(day), AEN]))


def test_alarm_sets_af_and_int() -> None:
    model = PCF85063A()
    line = irq_line(model)
    model.set_time(START)
    set_alarm(model, 0, 2, 1, 1)  # 01:02:00 on the 1st, weekday ignored
    model.write(bytes([REG_CONTROL_2, CTRL2_AIE]))
    assert line.input  # INT released: high through the pull-up
    model.advance(49)
    assert not model.alarm_flag and line.input
    model.advance(1)
    assert model.alarm_flag and not line.input  # active low
    model.write(bytes([REG_CONTROL_2, CTRL2_AIE]))  # AF written 0: cleared, INT released
    assert not model.alarm_flag and line.input
    model.advance(1)  # still matching minute, hour, day, not the second: no new AF
    assert not model.alarm_flag


def test_alarm_only_on_first_match() -> None:
    model = PCF85063A()
    model.set_time(START)
    model.write(bytes([REG_SECOND_ALARM, AEN, bcd(2), AEN, AEN, AEN]))  # minute 02 only
    model.advance(50)
    assert model.alarm_flag
    model.write(bytes([REG_CONTROL_2, 0]))
    model.advance(30)  # still minute 02: no second AF
    assert not model.alarm_flag
    model.advance(3600)  # the next hour's minute 02
    assert model.alarm_flag


def test_alarm_without_aie_does_not_assert_int() -> None:
    model = PCF85063A()
    line = irq_line(model)
    model.set_time(START)
    set_alarm(model, 11, 1, 1, 1)
    model.advance(1)
    assert model.alarm_flag and line.input


def test_stop_freezes_the_clock() -> None:
    model = PCF85063A()
    model.set_time(START)
    model.write(bytes([REG_CONTROL_1, CTRL1_STOP]))
    model.advance(100)
    assert model.time == START


def test_carries_and_the_year_2099() -> None:
    model = PCF85063A()
    model.set_time(datetime.datetime(2099, 12, 31, 23, 59, 59))  # a Thursday
    model.advance(1)
    assert model.time == datetime.datetime(2000, 1, 1)
    assert model.weekday == 5  # counts on from Thursday, whatever the real 2000-01-01 was
    model.set_time(datetime.datetime(2024, 2, 28, 23, 59, 59))
    model.advance(1)
    assert model.time == datetime.datetime(2024, 2, 29)


def test_countdown_timer() -> None:
    model = PCF85063A()
    line = irq_line(model)
    model.set_time(START)
    model.write(bytes([REG_TIMER_VALUE, 5, 0b10 << 3 | 0b110]))  # n = 5, 1 Hz, TE, TIE
    model.advance(4)
    assert not model.timer_flag and model.register(REG_TIMER_VALUE) == 1
    model.advance(1)
    assert model.timer_flag and not line.input
    assert model.register(REG_TIMER_VALUE) == 5  # reloaded


def test_minute_interrupt() -> None:
    model = PCF85063A()
    line = irq_line(model)
    model.set_time(START)
    model.write(bytes([REG_CONTROL_2, CTRL2_MI]))
    model.advance(49)
    assert not model.timer_flag
    model.advance(1)
    assert model.timer_flag and not line.input


def test_tp_has_no_alarm_and_no_int() -> None:
    model = PCF85063TP()
    line = irq_line(model)
    model.set_time(START)
    model.advance(3600)
    assert line.input
    assert model.time == START + datetime.timedelta(hours=1)
    model.write(bytes([REG_RAM_BYTE, 0xA5]))
    assert model.ram == 0xA5


def test_unused_bits_read_zero() -> None:
    model = PCF85063A()
    model.set_time(START)
    model.write(bytes([REG_WEEKDAY_ALARM, AEN | 0x78]))  # bits 6..3 unused
    assert model.register(REG_WEEKDAY_ALARM) == AEN
