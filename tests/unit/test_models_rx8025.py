"""The RX-8025 model against its application manual: framing, the digital offset, hours."""

from __future__ import annotations

import datetime

import pytest

from roadtest.models import ModelError
from roadtest.models.rx8025 import (
    CTRL1_24H,
    CTRL2_DAFG,
    CTRL2_PON,
    CTRL2_VDET,
    CTRL2_XST,
    PM,
    REG_CONTROL_1,
    REG_CONTROL_2,
    REG_DIGITAL_OFFSET,
    REG_HOURS,
    REG_SECONDS,
    RX8025,
    hour_of,
    hours_register,
    offset_code_ppb,
)


def read(model: RX8025, reg: int, length: int) -> bytes:
    model.start_transfer()
    model.write(bytes([reg << 4]))
    data = model.read(length)
    model.end_transfer()
    return data


def write(model: RX8025, reg: int, *values: int) -> None:
    model.start_transfer()
    model.write(bytes([reg << 4, *values]))
    model.end_transfer()


def test_power_on_reset() -> None:
    model = RX8025()
    assert read(model, REG_DIGITAL_OFFSET, 1) == b"\x00"
    assert read(model, REG_CONTROL_1, 2) == bytes([0x00, CTRL2_PON])
    assert model.power_on_reset and model.oscillator_stopped and not model.hour24


def test_the_address_is_the_upper_nibble_and_wraps_from_fh_to_0h() -> None:
    model = RX8025()
    model.set_time(datetime.datetime(2021, 12, 25, 23, 10, 37))
    assert read(model, REG_CONTROL_2, 2) == bytes([CTRL2_XST, 0x37])
    with pytest.raises(ModelError, match="transfer format 4h"):
        model.write(bytes([0x04]))


def test_a_read_needs_an_address_in_its_transfer() -> None:
    model = RX8025()
    model.start_transfer()
    with pytest.raises(ModelError, match="without an address"):
        model.read(1)


@pytest.mark.parametrize(
    ("code", "ppm_x100"),
    [
        (0x00, 0),
        (0x01, 0),
        (0x02, 305),
        (0x03, 610),
        (0x3F, 18910),
        (0x7F, -305),
        (0x7E, -610),
        (0x42, -18910),
    ],
)
def test_digital_offset_steps_of_3_05_ppm(code: int, ppm_x100: int) -> None:
    assert offset_code_ppb(code) == ppm_x100 * 10
    model = RX8025()
    write(model, REG_DIGITAL_OFFSET, code)
    assert model.correction_ppb == ppm_x100 * 10


@pytest.mark.parametrize("code", [0x40, 0x41, 0x80])
def test_digital_offsets_outside_the_table_and_test_are_refused(code: int) -> None:
    with pytest.raises(ModelError):
        write(RX8025(), REG_DIGITAL_OFFSET, code)


@pytest.mark.parametrize(
    ("hour", "twelve", "twenty_four"),
    [(0, 0x12, 0x00), (1, 0x01, 0x01), (11, 0x11, 0x11), (12, 0x32, 0x12), (23, 0x31, 0x23)],
)
def test_hours_in_both_modes(hour: int, twelve: int, twenty_four: int) -> None:
    assert hours_register(hour, hour24=False) == twelve
    assert hours_register(hour, hour24=True) == twenty_four
    assert hour_of(twelve, hour24=False) == hour
    assert hour_of(twenty_four, hour24=True) == hour


def test_an_hour_is_checked_in_the_current_mode() -> None:
    model = RX8025()
    with pytest.raises(ModelError, match="12-hour mode"):
        write(model, REG_HOURS, 0x00)  # no hour 00 on a 12-hour clock
    write(model, REG_HOURS, PM | 0x12)
    model.hour24 = True
    with pytest.raises(ModelError, match="24-hour mode"):
        write(model, REG_HOURS, 0x24)
    write(model, REG_HOURS, 0x23)
    assert model.register(REG_CONTROL_1) == CTRL1_24H


def test_control_2_flags_clear_on_0_and_stay_on_1() -> None:
    model = RX8025()
    model.regs[REG_CONTROL_2] = CTRL2_VDET | CTRL2_PON | CTRL2_DAFG
    write(model, REG_CONTROL_2, CTRL2_VDET | CTRL2_XST)
    assert model.register(REG_CONTROL_2) == CTRL2_VDET | CTRL2_XST
    write(model, REG_CONTROL_2, CTRL2_PON | CTRL2_XST)  # writing 1 does not set PON
    assert model.register(REG_CONTROL_2) == CTRL2_XST


def test_bcd_and_zero_bits() -> None:
    model = RX8025()
    with pytest.raises(ModelError, match="not BCD 0-59"):
        write(model, REG_SECONDS, 0x5A)
    with pytest.raises(ModelError, match="must be written 0"):
        write(model, REG_SECONDS, 0x80)
    with pytest.raises(ModelError, match="reserved"):
        read(model, 0xD, 1)
