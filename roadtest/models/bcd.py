"""Binary-coded decimal, as RTC datasheets store their time registers.

Each digit in a nibble: the tens in bits 7..4, the units in bits 3..0 (NXP's PCF8563
Rev. 11 and PCF85063A Rev. 7, "Time and date registers": "coded in BCD format"). A nibble
above 9 is not a BCD digit: these functions refuse it, and a model decides what the chip
would do with one.
"""

from __future__ import annotations

import datetime


def bcd(value: int) -> int:
    """`value` (0-99) in BCD."""
    if not 0 <= value <= 99:
        raise ValueError(f"{value} does not fit two BCD digits")
    return (value // 10) << 4 | value % 10


def from_bcd(value: int) -> int:
    """A BCD byte's value; a nibble above 9 is a ValueError."""
    high, low = value >> 4, value & 0xF
    if high > 9 or low > 9:
        raise ValueError(f"{value:#04x} is not BCD")
    return high * 10 + low


def is_bcd(value: int) -> bool:
    """Whether both nibbles of `value` are decimal digits."""
    return value >> 4 <= 9 and value & 0xF <= 9


def weekday(when: datetime.date) -> int:
    """The weekday number NXP's RTC datasheets (and Linux's tm_wday) use: Sunday is 0."""
    return when.isoweekday() % 7
