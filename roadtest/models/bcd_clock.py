"""The BCD time registers that RTC models share: digits, hours, weekdays and the calendar count.

Most I2C real-time clocks keep seconds to years in packed BCD, one register a field, with
the chip's own flags in the bits the field does not use. What differs from chip to chip
is which bits those are, how the hours register marks 12-hour mode and PM, and what the
weekday register counts from; what is the same is written once here and used by the
PCF8563, PCF85063, RX-8025 and DS1307-family models:

- `bcd` / `from_bcd` / `is_bcd`: a value 0-99 and its two BCD digits (a nibble above 9
  is no value: no datasheet defines one);
- `bcd_in_range`: whether a register's value bits hold BCD digits in a field's range;
- `hours_register` / `hour_of`: the hours register in 24-hour or 12-hour mode (12,
  01-11 with a PM bit, and on chips that keep the mode in the register itself, a
  12-hour mode bit);
- `advance_calendar`: the date a clock that counts seconds through years reaches, on
  the two-digit calendar of 2000-2099 that these chips keep (every year divisible by
  four a leap year, 00 included), with the number of times the year wrapped 99 -> 00
  (where a chip toggles its century bit) and of midnights passed (where it counts its
  weekday on);
- `AlarmComparison`: the alarm of NXP's clocks (PCF8563, PCF85063, PCF2123), one
  register per compared field, bit 7 of each leaving its field out, AF set "when all
  enabled comparisons first match".
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping, Sequence
from typing import Final

PM_BIT: Final = 1 << 5  # the AM/PM bit of the 12-hour hours register, on every chip here

CENTURY_START: Final = datetime.datetime(2000, 1, 1)
CENTURY_END: Final = datetime.datetime(2100, 1, 1)


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


def bcd_in_range(value: int, mask: int, low: int, high: int) -> bool:
    """Whether `value`'s bits under `mask` are BCD digits from `low` to `high`."""
    try:
        return low <= from_bcd(value & mask) <= high
    except ValueError:
        return False


def hours_register(hour: int, hour24: bool, mode_bit: int = 0, pm_bit: int = PM_BIT) -> int:
    """The hours register for `hour` (0-23): BCD 00-23 in 24-hour mode; in 12-hour mode
    `mode_bit` (the chip's 12-hour select, 0 where a control register holds the mode),
    `pm_bit` after noon, and the hour 12, 01-11 (12 AM is midnight, 12 PM noon)."""
    if not 0 <= hour <= 23:
        raise ValueError(f"{hour} is not an hour 0-23")
    if hour24:
        return bcd(hour)
    return mode_bit | (pm_bit if hour >= 12 else 0) | bcd((hour + 11) % 12 + 1)


def hour_of(value: int, hour24: bool, pm_bit: int = PM_BIT) -> int:
    """The hour (0-23) an hours register holds in the given mode (ValueError if none).
    The 24-hour value is the six bits below the mode bit; the 12-hour one the five below
    the PM bit."""
    if hour24:
        hour = from_bcd(value & 0x3F)
        if hour > 23:
            raise ValueError(f"{value:#04x} is not an hour 00-23")
        return hour
    twelve = from_bcd(value & (pm_bit - 1))
    if not 1 <= twelve <= 12:
        raise ValueError(f"{value:#04x} is not an hour 12, 01-11 with AM/PM")
    return twelve % 12 + (12 if value & pm_bit else 0)


def weekday_sunday0(when: datetime.date) -> int:
    """The weekday with Sunday as 0 (Linux's tm_wday, and the PCF8563's Table 10)."""
    return when.isoweekday() % 7


def advance_calendar(now: datetime.datetime, seconds: int) -> tuple[datetime.datetime, int, int]:
    """Count `now` (2000-2099) on by `seconds` on the chips' two-digit calendar.

    Returns (the new date and time, how many times the year wrapped 99 -> 00, how many
    midnights were passed). Each century is the chips' 2000-2099 calendar again: their
    year 00 has a 29 February, which 2100 would not.
    """
    if seconds < 0:
        raise ValueError("the clock does not run backwards")
    if not CENTURY_START <= now < CENTURY_END:
        raise ValueError(f"{now} is outside the years 2000-2099 the registers hold")
    left = datetime.timedelta(seconds=seconds)
    wraps = days = 0
    while left >= CENTURY_END - now:
        left -= CENTURY_END - now
        days += (CENTURY_END.date() - now.date()).days
        now = CENTURY_START
        wraps += 1
    then = now + left
    days += (then.date() - now.date()).days
    return then, wraps, days


#: The registers of a model, by address: a list, or a dict where the map has holes.
Registers = Sequence[int] | Mapping[int, int]

ALARM_DISABLED: Final = 1 << 7  # AE_x / AEN_x: this field takes no part in the comparison


class AlarmComparison:
    """The alarm of NXP's clocks: each alarm register (`pairs`: alarm, time register) is
    compared with its time register unless its bit 7 is set, and "when all enabled
    comparisons first match, AF is set" (the PCF8563 datasheet's words; the PCF85063A's
    and PCF2123's alarms work the same way): a match that holds on is not a new one, and
    a comparison with none enabled never matches. `same(alarm, time)` says whether the
    two registers' values agree (the chip's masks, its 12-hour coding). The model calls
    `settle` where the registers change without the clock counting, and `counted` after
    each step of the count.
    """

    def __init__(self, pairs: Sequence[tuple[int, int]], same: Callable[[int, int], bool]):
        self.pairs = tuple(pairs)
        self.same = same
        self.matching = False  # all enabled comparisons matched at the last look

    def enabled(self, regs: Registers) -> bool:
        return any(not regs[alarm] & ALARM_DISABLED for alarm, _ in self.pairs)

    def matches(self, regs: Registers) -> bool:
        enabled = [(a, t) for a, t in self.pairs if not regs[a] & ALARM_DISABLED]
        return bool(enabled) and all(self.same(a, t) for a, t in enabled)

    def settle(self, regs: Registers) -> None:
        """The registers changed without the clock counting (a write, a time set): a
        match now is no edge."""
        self.matching = self.matches(regs)

    def counted(self, regs: Registers) -> bool:
        """The clock counted: whether the comparisons first match now (AF is to be set)."""
        matching = self.matches(regs)
        first = matching and not self.matching
        self.matching = matching
        return first
