"""The HDC100x model against its datasheets (TI SNAS672A for the HDC1080, SNAS643 for the
HDC1000), without a guest.

Expected values are the datasheets': the register map's reset values and IDs, the
configuration register's bits, the conversion times of "Electrical Characteristics" and
the result formulas T = raw / 2^16 * 165 - 40 and RH = raw / 2^16 * 100.
"""

from __future__ import annotations

import pytest

from roadtest.models import ModelError
from roadtest.models.hdc100x import DEVICE_ID_HDC1000, HDC100x
from roadtest.simtime.clock import ManualClock


def read16(m: HDC100x, reg: int) -> int:
    m.write(bytes([reg]))
    data = m.read(2)
    return data[0] << 8 | data[1]


def write16(m: HDC100x, reg: int, value: int) -> None:
    m.write(bytes([reg, value >> 8, value & 0xFF]))


def timed() -> tuple[HDC100x, ManualClock]:
    m = HDC100x()
    clock = ManualClock()
    m.clock = clock
    return m, clock


@pytest.mark.parametrize(
    ("reg", "reset"),
    [
        (0x02, 0x1000),  # Configuration: MODE = 1, 14-bit resolutions, heater off
        (0xFE, 0x5449),  # Manufacturer ID: "TI"
        (0xFF, 0x1050),  # Device ID of the HDC1080
    ],
)
def test_reset_values(reg: int, reset: int) -> None:
    assert read16(HDC100x(), reg) == reset


def test_hdc1000_device_id() -> None:
    assert read16(HDC100x(device_id=DEVICE_ID_HDC1000), 0xFF) == 0x1000


def test_manufacturer_id_is_ti_msb_first() -> None:
    m = HDC100x()
    m.write(b"\xfe")
    assert m.read(2) == b"TI"


@pytest.mark.parametrize(
    ("degc", "raw"),
    [
        (-40, 0x0000),  # T = 0 / 2^16 * 165 - 40
        (42.5, 0x8000),  # 32768 / 65536 * 165 - 40
        (25, 0x64D8),  # 65 / 165 * 2^16 = 25817.2: 14 bits keep D15..D2
    ],
)
def test_temperature_conversion(degc: float, raw: int) -> None:
    m = HDC100x()
    write16(m, 0x02, 0x0000)  # MODE 0: temperature alone
    m.temperature = degc
    m.write(b"\x00")
    data = m.read(2)
    assert data[0] << 8 | data[1] == raw
    assert (raw / 65536 * 165 - 40) == pytest.approx(degc, abs=165 / 2**14)


@pytest.mark.parametrize(("rh", "raw"), [(0, 0x0000), (50, 0x8000), (75, 0xC000)])
def test_humidity_conversion(rh: float, raw: int) -> None:
    m = HDC100x()
    write16(m, 0x02, 0x0000)
    m.humidity = rh
    m.write(b"\x01")
    data = m.read(2)
    assert data[0] << 8 | data[1] == raw


def test_both_in_sequence_mode() -> None:
    """MODE = 1 (the reset value): a trigger at 0x00 measures both, temperature first."""
    m = HDC100x()
    m.temperature, m.humidity = 42.5, 25
    m.write(b"\x00")
    assert m.read(4) == bytes([0x80, 0x00, 0x40, 0x00])


@pytest.mark.parametrize(
    ("config", "pointer", "ns"),
    [
        (0x0000, 0x00, 6_350_000),  # temperature, 14 bits
        (0x0400, 0x00, 3_650_000),  # temperature, 11 bits
        (0x0000, 0x01, 6_500_000),  # humidity, 14 bits
        (0x0100, 0x01, 3_850_000),  # humidity, 11 bits
        (0x0200, 0x01, 2_500_000),  # humidity, 8 bits
        (0x1000, 0x00, 6_350_000 + 6_500_000),  # both, 14 bits each
    ],
)
def test_read_before_conversion_is_nacked(config: int, pointer: int, ns: int) -> None:
    m, clock = timed()
    write16(m, 0x02, config)
    m.write(bytes([pointer]))
    clock.advance(ns - 1)
    with pytest.raises(ModelError):
        m.read(2)
    clock.advance(1)
    m.read(2)


def test_resolution_zeroes_low_bits() -> None:
    m = HDC100x()
    m.humidity = 99.99
    write16(m, 0x02, 0x0200)  # HRES = 8 bits
    m.write(b"\x01")
    assert m.read(2)[1] == 0


def test_configuration_fields_and_reset() -> None:
    m = HDC100x()
    write16(m, 0x02, 0x2000 | 0x0400 | 0x0100)  # heater, 11-bit T, 11-bit RH, MODE 0
    assert read16(m, 0x02) == 0x2500
    write16(m, 0x02, 0x0800)  # BTST is read-only
    assert read16(m, 0x02) == 0x0000
    write16(m, 0x02, 0x8000)  # RST: back to the reset value, RST self-clears
    assert read16(m, 0x02) == 0x1000


def test_ids_are_read_only() -> None:
    with pytest.raises(ModelError):
        write16(HDC100x(), 0xFE, 0)
