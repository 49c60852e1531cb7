"""The MAX17048 model against its datasheet (19-6171 Rev 7), without a guest.

Expected values are the datasheet's: CONFIG's reset value 971Ch (RCOMP 97h, ATHD 1Ch = 4 %),
ATHD's two's-complement encoding (00000 = 32 %, 11111 = 1 %), the alert flags (STATUS.SC
on a 1 % change with ALSC, STATUS.HD below the threshold, CONFIG.ALRT driving the
active-low ALRT pin until software clears it) and the POR command 5400h.
"""

from __future__ import annotations

import pytest

from roadtest.models import ModelError
from roadtest.models.max17048 import MAX17048

REG_VCELL, REG_SOC, REG_VERSION, REG_CONFIG, REG_STATUS, REG_CMD = (
    0x02,
    0x04,
    0x08,
    0x0C,
    0x1A,
    0xFE,
)
ALSC, ALRT = 1 << 6, 1 << 5
RI, HD, SC = 1 << 8, 1 << 12, 1 << 13


def read16(m: MAX17048, reg: int) -> int:
    m.write(bytes([reg]))
    data = m.read(2)
    return data[0] << 8 | data[1]


def write16(m: MAX17048, reg: int, value: int) -> None:
    m.write(bytes([reg, value >> 8, value & 0xFF]))


def test_power_up_values() -> None:
    m = MAX17048()
    assert read16(m, REG_CONFIG) == 0x971C
    assert read16(m, REG_STATUS) & RI
    assert not m.int_asserted


def test_vcell_and_soc_are_read_only_msb_first() -> None:
    m = MAX17048()
    m.vcell = 0xC800  # 51200 * 78.125 uV = 4.0 V
    m.soc = 0x3280  # 50.5 %
    assert read16(m, REG_VCELL) == 0xC800
    assert read16(m, REG_SOC) == 0x3280
    with pytest.raises(ModelError):
        write16(m, REG_SOC, 0)
    with pytest.raises(ModelError):
        write16(m, REG_VERSION, 0)


def test_soc_change_alert_needs_alsc() -> None:
    m = MAX17048()
    m.soc = 50 << 8
    assert not m.int_asserted  # ALSC off at power-up
    write16(m, REG_CONFIG, 0x971C | ALSC)
    m.soc = (50 << 8) | 0x80  # under 1 %: no alert
    assert not m.int_asserted
    m.soc = 49 << 8
    assert m.int_asserted
    assert read16(m, REG_STATUS) & SC
    assert read16(m, REG_CONFIG) & ALRT
    # Only software clears ALRT, and that releases the pin.
    write16(m, REG_CONFIG, 0x971C | ALSC)
    assert not m.int_asserted


@pytest.mark.parametrize(
    ("athd", "percent"), [(0b00000, 32), (0b00001, 31), (0b11111, 1), (0x1C, 4)]
)
def test_low_soc_alert_threshold(athd: int, percent: int) -> None:
    m = MAX17048()
    write16(m, REG_CONFIG, 0x9700 | athd)
    m.soc = percent << 8
    assert not m.int_asserted  # at the threshold: not below it
    m.soc = (percent - 1) << 8 | 0xFF
    assert m.int_asserted
    assert read16(m, REG_STATUS) & HD
    write16(m, REG_STATUS, read16(m, REG_STATUS) & ~HD)  # the host clears HD by writing 0
    assert not read16(m, REG_STATUS) & HD


def test_por_command_resets() -> None:
    m = MAX17048()
    write16(m, REG_CONFIG, 0x1234)
    write16(m, REG_CMD, 0x0054)  # not the command: reserved
    assert read16(m, REG_CONFIG) == 0x1234
    write16(m, REG_CMD, 0x5400)
    assert read16(m, REG_CONFIG) == 0x971C
    assert m.resets == 1
