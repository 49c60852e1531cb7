"""The SHT3x model and the command base against "Datasheet SHT3x-DIS" (Sensirion,
Version 5, May 2018), without a guest.

Expected values are the datasheet's: Table 20's CRC example, Table 18's status register
defaults and bits, section 4.13's conversion end points, the commands' hex codes.
"""

from __future__ import annotations

import pytest

from roadtest.models import ModelError
from roadtest.models.command import crc8
from roadtest.models.sht3x import SHT3x
from roadtest.simtime.clock import ManualClock

MS = 1_000_000


def make() -> tuple[SHT3x, ManualClock]:
    m = SHT3x()
    clock = ManualClock()
    m.clock = clock
    return m, clock


def cmd(m: SHT3x, code: int, data: bytes = b"") -> None:
    m.write(code.to_bytes(2, "big") + data)


def status(m: SHT3x) -> int:
    cmd(m, 0xF32D)  # Table 17
    data = m.read(3)
    assert crc8(data[:2], 0x31, 0xFF) == data[2]
    return int.from_bytes(data[:2], "big")


def test_crc_example() -> None:
    # Table 20: CRC (0xBEEF) = 0x92.
    assert crc8(bytes([0xBE, 0xEF]), 0x31, 0xFF) == 0x92


def test_status_defaults_and_clear() -> None:
    m, _ = make()
    # Table 18: alert pending (15) and system reset detected (4) are '1' at power-up.
    assert status(m) == 0x8010
    cmd(m, 0x3041)  # Table 19: clears bits 15, 11, 10, 4
    assert status(m) == 0x0000


def test_heater_bit() -> None:
    m, _ = make()
    cmd(m, 0x3041)
    cmd(m, 0x306D)  # Table 16: heater enable
    assert status(m) == 1 << 13
    cmd(m, 0x3066)
    assert status(m) == 0


@pytest.mark.parametrize(
    ("degc", "rh", "st", "srh"),
    # Section 4.13: T = -45 + 175 * ST / (2^16 - 1), RH = 100 * SRH / (2^16 - 1).
    [(-45, 0, 0x0000, 0x0000), (130, 100, 0xFFFF, 0xFFFF), (42.5, 50, 0x8000, 0x8000)],
)
def test_single_shot(degc: float, rh: float, st: int, srh: int) -> None:
    m, clock = make()
    m.temperature, m.humidity = degc, rh
    cmd(m, 0x2400)  # Table 9: high repeatability, no clock stretching
    with pytest.raises(ModelError):
        m.read(6)  # still measuring: the read header is NACKed
    clock.advance(15 * MS)
    data = m.read(6)
    assert int.from_bytes(data[0:2], "big") == st
    assert int.from_bytes(data[3:5], "big") == srh
    assert data[2] == crc8(data[0:2], 0x31, 0xFF)
    assert data[5] == crc8(data[3:5], 0x31, 0xFF)
    with pytest.raises(ModelError):
        m.read(6)  # read once


def test_periodic_fetch() -> None:
    m, clock = make()
    cmd(m, 0x2130)  # Table 10: 1 mps, high repeatability
    cmd(m, 0xE000)  # Table 11: fetch data
    with pytest.raises(ModelError):
        m.read(6)  # no measurement yet
    clock.advance(20 * MS)
    cmd(m, 0xE000)
    assert len(m.read(6)) == 6
    cmd(m, 0xE000)
    with pytest.raises(ModelError):
        m.read(6)  # nothing new until the next period
    clock.advance(1000 * MS)
    cmd(m, 0xE000)
    assert len(m.read(6)) == 6
    cmd(m, 0x3093)  # Table 13: break
    with pytest.raises(ModelError):
        cmd(m, 0xE000)  # no periodic acquisition to fetch from


def test_limit_write_needs_its_crc() -> None:
    m, _ = make()
    cmd(m, 0x3041)
    word = bytes([0xBE, 0xEF])
    cmd(m, 0x611D, word + bytes([0x92]))  # high alert set, with Table 20's CRC
    cmd(m, 0xE11F)
    assert m.read(3) == word + bytes([0x92])
    with pytest.raises(ModelError):
        cmd(m, 0x611D, bytes([0x12, 0x34, 0x92]))  # wrong CRC: not accepted
    assert status(m) & 1  # Table 18 bit 0: checksum of last write failed
    cmd(m, 0xE11F)
    assert m.read(3) == word + bytes([0x92])


def test_unknown_command_is_nacked() -> None:
    m, _ = make()
    cmd(m, 0x3041)
    with pytest.raises(ModelError):
        cmd(m, 0x1234)
    assert status(m) & 2  # Table 18 bit 1: last command not processed


def test_temperature_alert_in_periodic_mode() -> None:
    m, clock = make()
    cmd(m, 0x3041)
    # Alert mode note: limits hold T's 9 MSBs in bits 8..0; 0x133 << 7 is about 60 degC.
    m.temperature = 70
    cmd(m, 0x2737)  # 10 mps
    clock.advance(20 * MS)
    assert status(m) & (1 << 10 | 1 << 15) == (1 << 10 | 1 << 15)
    m.temperature = 25
    assert not status(m) & (1 << 10)


def test_a_read_past_the_answer_reads_released_sda() -> None:
    m, _ = make()
    cmd(m, 0xE11F)  # high alert set: one word and its CRC
    data = m.read(6)
    assert data[3:] == b"\xff\xff\xff"  # the chip sends no more; the pull-up reads 1s
    assert data[2] == crc8(data[:2], 0x31, 0xFF)
