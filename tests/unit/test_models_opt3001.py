"""The OPT3001 model against its datasheet (TI SBOS681B), without a guest.

Expected values are the datasheet's: its register map and reset values, the
result register's exponent and mantissa (lux = 0.01 * 2^E * R, with its
decoding examples), and the configuration register's fields.
"""

from __future__ import annotations

import pytest

from roadtest.models import ModelError
from roadtest.models.opt3001 import OPT3001

# Configuration register fields.
M_SHUTDOWN = 0b00 << 9
M_SINGLE = 0b01 << 9
M_CONTINUOUS = 0b10 << 9
M_MASK = 0b11 << 9
OVF, CRF, FH, FL = 1 << 8, 1 << 7, 1 << 6, 1 << 5
RN_AUTO = 0b1100 << 12
CT_800MS = 1 << 11


def read16(m: OPT3001, reg: int) -> int:
    """A register as the host reads it: pointer write, then two bytes, MSB first."""
    m.write(bytes([reg]))
    data = m.read(2)
    return data[0] << 8 | data[1]


def write16(m: OPT3001, reg: int, value: int) -> None:
    m.write(bytes([reg, value >> 8, value & 0xFF]))


def lux(result: int) -> float:
    """The datasheet's formula: E is bits 15:12, R bits 11:0, lux = 0.01 * 2^E * R."""
    exponent, mantissa = result >> 12, result & 0x0FFF
    return round(0.01 * (1 << exponent) * mantissa, 2)


@pytest.mark.parametrize(
    ("reg", "reset"),
    [
        (0x00, 0x0000),  # Result
        (0x01, 0xC810),  # Configuration: automatic range, 800 ms, shutdown, latch
        (0x02, 0xC000),  # Low Limit
        (0x03, 0xBFFF),  # High Limit
        (0x7E, 0x5449),  # Manufacturer ID: "TI"
        (0x7F, 0x3001),  # Device ID
    ],
)
def test_reset_values(reg: int, reset: int) -> None:
    assert read16(OPT3001(), reg) == reset


def test_registers_go_msb_first() -> None:
    m = OPT3001()
    m.write(bytes([0x7E]))
    assert m.read(2) == b"TI"
    write16(m, 0x02, 0x1234)
    m.write(bytes([0x02]))
    assert m.read(2) == b"\x12\x34"


@pytest.mark.parametrize(
    ("exponent", "mantissa", "expected_lux"),
    [
        # The datasheet's decoding examples, and the full-scale ends.
        (0b0000, 0b0000_0000_0001, 0.01),
        (0b0011, 0b0100_0101_0110, 88.80),
        (0b0111, 0b1000_1001_1010, 2818.56),
        (0b0000, 0b1111_1111_1111, 40.95),
        (0b1011, 0b1111_1111_1111, 83865.60),
    ],
)
def test_a_conversion_puts_exponent_and_mantissa_in_the_result_register(
    exponent: int, mantissa: int, expected_lux: float
) -> None:
    m = OPT3001()
    m.result = exponent << 12 | mantissa
    write16(m, 0x01, RN_AUTO | CT_800MS | M_CONTINUOUS)
    m.write(bytes([0x00]))
    high, low = m.read(2)
    assert high >> 4 == exponent  # E3:E0 are the first byte's high nibble
    assert (high & 0x0F) << 8 | low == mantissa
    assert lux(high << 8 | low) == expected_lux


def test_result_holds_until_the_next_conversion() -> None:
    m = OPT3001()
    m.result = 0x3456
    assert read16(m, 0x00) == 0x0000  # shut down: no conversion yet
    write16(m, 0x01, RN_AUTO | M_CONTINUOUS)
    m.result = 0x0001
    assert read16(m, 0x00) == 0x3456


def test_single_shot_sets_crf_and_returns_to_shutdown() -> None:
    m = OPT3001()
    m.result = 0x0FFF
    write16(m, 0x01, RN_AUTO | CT_800MS | M_SINGLE)
    config = read16(m, 0x01)
    assert config & M_MASK == M_SHUTDOWN
    assert config & CRF
    assert read16(m, 0x00) == 0x0FFF


def test_reading_the_configuration_clears_crf() -> None:
    m = OPT3001()
    write16(m, 0x01, RN_AUTO | M_CONTINUOUS)
    assert read16(m, 0x01) & CRF
    assert not read16(m, 0x01) & CRF


def test_the_status_flags_are_read_only() -> None:
    m = OPT3001()
    write16(m, 0x01, RN_AUTO | OVF | CRF | FH | FL)  # shutdown: no conversion sets CRF
    assert read16(m, 0x01) & (OVF | CRF | FH | FL) == 0
    assert read16(m, 0x01) == RN_AUTO


@pytest.mark.parametrize("reg", [0x00, 0x7E, 0x7F])
def test_writing_a_read_only_register_is_a_model_error(reg: int) -> None:
    m = OPT3001()
    with pytest.raises(
        ModelError, match=f"OPT3001: write of 0x0001 to read-only register {reg:#04x}"
    ):
        write16(m, reg, 0x0001)
    assert read16(m, reg) == {0x00: 0x0000, 0x7E: 0x5449, 0x7F: 0x3001}[reg]


@pytest.mark.parametrize("reg", [0x04, 0x7D, 0x80, 0xFF])
def test_an_undefined_register_is_a_model_error(reg: int) -> None:
    m = OPT3001()
    with pytest.raises(ModelError, match=f"OPT3001: read of undefined register {reg:#04x}"):
        read16(m, reg)
    with pytest.raises(
        ModelError, match=f"OPT3001: write of 0x0000 to undefined register {reg:#04x}"
    ):
        write16(m, reg, 0x0000)
