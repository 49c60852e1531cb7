"""The TMP102 model against its datasheet (TI SBOS397), without a guest.

Expected values are the datasheet's: the power-up register values, and the
temperature register's 12-bit and 13-bit (extended mode) data formats with the
temperatures of its tables.
"""

from __future__ import annotations

import pytest

from roadtest.models import ModelError
from roadtest.models.tmp102 import TMP102

TEMPERATURE, CONFIG, T_LOW, T_HIGH = 0b00, 0b01, 0b10, 0b11
EM = 1 << 4  # configuration register, byte 2 bit 4


def read16(m: TMP102, reg: int) -> int:
    """A register as the host reads it: pointer write, then two bytes, MSB first."""
    m.write(bytes([reg]))
    data = m.read(2)
    return data[0] << 8 | data[1]


def write16(m: TMP102, reg: int, value: int) -> None:
    m.write(bytes([reg, value >> 8, value & 0xFF]))


def test_power_up_values() -> None:
    m = TMP102()
    assert read16(m, CONFIG) == 0x60A0
    assert read16(m, T_LOW) == 0x4B00  # 75 degC
    assert read16(m, T_HIGH) == 0x5000  # 80 degC


# The 12-bit table: (temperature, digital output); the register holds it in D15..D4.
NORMAL = [(127.9375, 0x7FF), (100, 0x640), (25, 0x190), (0.0625, 0x001), (0, 0x000)]
NORMAL += [(-0.25, 0xFFC), (-25, 0xE70), (-55, 0xC90)]
# The 13-bit table: in D15..D3, with D0 set to say the format is extended.
EXTENDED = [(150, 0x0960), (128, 0x0800), (127.9375, 0x07FF), (0.0625, 0x0001)]
EXTENDED += [(0, 0x0000), (-0.0625, 0x1FFF), (-25, 0x1E70), (-55, 0x1C90)]


@pytest.mark.parametrize(("degc", "code"), NORMAL)
def test_temperature_normal_mode(degc: float, code: int) -> None:
    m = TMP102()
    m.temperature = degc
    assert read16(m, TEMPERATURE) == code << 4


@pytest.mark.parametrize(("degc", "code"), EXTENDED)
def test_temperature_extended_mode(degc: float, code: int) -> None:
    m = TMP102()
    write16(m, CONFIG, 0x60A0 | EM)
    m.temperature = degc
    assert read16(m, TEMPERATURE) == code << 3 | 1


def test_read_only_bits_and_registers() -> None:
    m = TMP102()
    write16(m, CONFIG, 0x0000)  # R1, R0 and AL cannot be cleared
    assert read16(m, CONFIG) == 0x60A0 & (0b11 << 13 | 1 << 5)
    with pytest.raises(ModelError, match="read-only"):
        write16(m, TEMPERATURE, 0x1234)


def test_temperature_out_of_range() -> None:
    m = TMP102()
    m.temperature = 150  # fits 13 bits only
    with pytest.raises(ModelError, match="does not fit 12 bits"):
        read16(m, TEMPERATURE)
