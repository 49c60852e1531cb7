"""NXP PCF8563 real-time clock/calendar (datasheet PCF8563 Rev. 11; Rev. 05 for the century bit).

Sixteen 8-bit registers, 00h-0Fh. The register address auto-increments after
each byte read or written and wraps from 0Fh to 00h; it is kept from one
transfer to the next (a read without a register address continues where the
last access stopped).

The clock lives in the BCD registers themselves, as on the chip: the driver
writes them one at a time, and a date is only consistent once it has written
all of them. `time` / `set_time()` convert to and from `datetime` for tests,
and `advance(seconds)` runs the clock: seconds through years count with the
chip's carries, the weekday counts on at midnight, the year register wraps
99 -> 00 and toggles the century bit C, and the minute/hour/day/weekday alarm
and the countdown timer set AF and TF. The year register reads as 20yy for
`datetime`; the chip's leap years (every year divisible by 4, 00 included)
are exactly those of 2000-2099. What C means is up to the system (Rev. 05:
0 = 20xx, 1 = 19xx; Rev. 11: "may be re-assigned by the user"): the model
only stores and toggles it.

INT is an active-low open-drain output: asserted (the line driven low) while
AF and AIE, or TF and TIE, are set; `irq` is the GPIO line it drives.

Not modelled (a ModelError when the driver asks for it): EXT_CLK test mode
(TEST1), pulsed timer interrupts (TI_TP), register addresses above 0Fh,
values outside a register's BCD range, '0' bits written with 1. The
sub-second prescaler is not modelled: time moves in whole seconds, and only
when the test calls `advance()`. Unimplemented ('x') bits read as 0, or as 1
with `undefined_bits_read_as_one` (the datasheet: "the read back values may
differ from what was previously written"), so a test can check that a driver
masks them.
"""

from __future__ import annotations

import datetime
import threading
from typing import Final

from roadtest.models.base import ModelError, SMBusModel
from roadtest.models.bcd_clock import (
    AlarmComparison,
    advance_calendar,
    bcd_in_range,
    weekday_sunday0,
)
from roadtest.models.bcd_clock import bcd as bcd  # re-exported: the PCF8563's tests use them
from roadtest.models.bcd_clock import from_bcd as from_bcd
from roadtest.models.interrupt import Drive, InterruptPin, Polarity

REG_CONTROL_STATUS_1: Final = 0x00
REG_CONTROL_STATUS_2: Final = 0x01
REG_VL_SECONDS: Final = 0x02
REG_MINUTES: Final = 0x03
REG_HOURS: Final = 0x04
REG_DAYS: Final = 0x05
REG_WEEKDAYS: Final = 0x06
REG_CENTURY_MONTHS: Final = 0x07
REG_YEARS: Final = 0x08
REG_MINUTE_ALARM: Final = 0x09
REG_HOUR_ALARM: Final = 0x0A
REG_DAY_ALARM: Final = 0x0B
REG_WEEKDAY_ALARM: Final = 0x0C
REG_CLKOUT_CONTROL: Final = 0x0D
REG_TIMER_CONTROL: Final = 0x0E
REG_TIMER: Final = 0x0F
NUM_REGS: Final = 0x10

CS1_TEST1: Final = 1 << 7
CS1_STOP: Final = 1 << 5
CS1_TESTC: Final = 1 << 3
CS2_TI_TP: Final = 1 << 4
CS2_AF: Final = 1 << 3
CS2_TF: Final = 1 << 2
CS2_AIE: Final = 1 << 1
CS2_TIE: Final = 1 << 0
VL: Final = 1 << 7  # in VL_seconds
CENTURY: Final = 1 << 7  # C, in Century_months
AE: Final = 1 << 7  # in each alarm register: 1 = that comparison is disabled
CLKOUT_FE: Final = 1 << 7
TIMER_TE: Final = 1 << 7
TIMER_TD_MASK: Final = 0b11

# Bits each register implements; the rest are 'x' (not implemented) or, where
# ZERO_BITS says so, '0' ("should always be written with logic 0").
IMPLEMENTED: Final = (
    0b1010_1000,  # 00h TEST1, STOP, TESTC
    0b0001_1111,  # 01h TI_TP, AF, TF, AIE, TIE
    0b1111_1111,  # 02h VL, seconds
    0b0111_1111,  # 03h minutes
    0b0011_1111,  # 04h hours
    0b0011_1111,  # 05h days
    0b0000_0111,  # 06h weekdays
    0b1001_1111,  # 07h C, months
    0b1111_1111,  # 08h years
    0b1111_1111,  # 09h AE_M, minute alarm
    0b1011_1111,  # 0Ah AE_H, hour alarm
    0b1011_1111,  # 0Bh AE_D, day alarm
    0b1000_0111,  # 0Ch AE_W, weekday alarm
    0b1000_0011,  # 0Dh FE, FD
    0b1000_0011,  # 0Eh TE, TD
    0b1111_1111,  # 0Fh timer countdown value
)
ZERO_BITS: Final = {REG_CONTROL_STATUS_1: 0b0101_0111, REG_CONTROL_STATUS_2: 0b1110_0000}

# Reset values (datasheet Table 27), 'x' bits as 0: VL and the AE bits set,
# CLKOUT on at 32.768 kHz, the timer off with the 1/60 Hz source.
RESET: Final = (
    0x08,  # TESTC
    0x00,
    VL,
    0x00,
    0x00,
    0x00,
    0x00,
    0x00,
    0x00,
    AE,
    AE,
    AE,
    AE,
    CLKOUT_FE,
    0x03,
    0x00,
)

# BCD fields: register -> (mask, lowest, highest)
_BCD: Final = {
    REG_VL_SECONDS: (0x7F, 0, 59),
    REG_MINUTES: (0x7F, 0, 59),
    REG_HOURS: (0x3F, 0, 23),
    REG_DAYS: (0x3F, 1, 31),
    REG_WEEKDAYS: (0x07, 0, 6),
    REG_CENTURY_MONTHS: (0x1F, 1, 12),
    REG_YEARS: (0xFF, 0, 99),
    REG_MINUTE_ALARM: (0x7F, 0, 59),
    REG_HOUR_ALARM: (0x3F, 0, 23),
    REG_DAY_ALARM: (0x3F, 1, 31),
    REG_WEEKDAY_ALARM: (0x07, 0, 6),
}
_ALARMS: Final = (
    (REG_MINUTE_ALARM, REG_MINUTES),
    (REG_HOUR_ALARM, REG_HOURS),
    (REG_DAY_ALARM, REG_DAYS),
    (REG_WEEKDAY_ALARM, REG_WEEKDAYS),
)
# Timer source clock (TD) -> ticks per second; 1/60 Hz counts minutes.
_TIMER_HZ: Final = {0b00: 4096, 0b01: 64, 0b10: 1}


def weekday(when: datetime.date) -> int:
    """The weekday number the datasheet's Table 10 (and Linux's tm_wday) use: Sunday is 0."""
    return weekday_sunday0(when)


class PCF8563(InterruptPin, SMBusModel):
    """The chip after power-on reset: VL set (the time is not valid), alarms disabled.

    `set_time(...)` puts a valid time in the clock, `advance(seconds)` runs it.
    """

    int_polarity = Polarity.ACTIVE_LOW
    int_drive = Drive.OPEN_DRAIN

    def __init__(self) -> None:
        super().__init__(regbytes=1)
        # The backend thread (the driver's transfers) and the test thread (advance()).
        self._lock = threading.RLock()
        self.regs = list(RESET)
        self.undefined_bits_read_as_one = False
        self.reads = 0  # read messages served: lets a test wait for the kernel's own reads
        self._timer_reload = RESET[REG_TIMER]
        self._timer_count = RESET[REG_TIMER]
        self._timer_seconds = 0  # seconds towards the next 1/60 Hz timer tick
        self._alarm = AlarmComparison(_ALARMS, self._alarm_agrees)

    # The INT output

    @property
    def int_asserted(self) -> bool:
        """INT is active (low): AF with AIE, or TF with TIE."""
        with self._lock:
            cs2 = self.regs[REG_CONTROL_STATUS_2]
        return bool(cs2 & CS2_AF and cs2 & CS2_AIE) or bool(cs2 & CS2_TF and cs2 & CS2_TIE)

    # State for tests

    def register(self, addr: int) -> int:
        """A register's implemented bits, without reading it over the bus."""
        with self._lock:
            return self._value(addr)

    @property
    def voltage_low(self) -> bool:
        """VL: the clock's integrity is not guaranteed (set at power-on)."""
        return bool(self.register(REG_VL_SECONDS) & VL)

    @voltage_low.setter
    def voltage_low(self, value: bool) -> None:
        """The supply dropped below V_low (True), or software cleared VL."""
        with self._lock:
            self.regs[REG_VL_SECONDS] = self.regs[REG_VL_SECONDS] & ~VL | (VL if value else 0)

    @property
    def century(self) -> bool:
        """The century bit C."""
        return bool(self.register(REG_CENTURY_MONTHS) & CENTURY)

    @century.setter
    def century(self, value: bool) -> None:
        with self._lock:
            regs = self.regs
            regs[REG_CENTURY_MONTHS] = regs[REG_CENTURY_MONTHS] & ~CENTURY | (
                CENTURY if value else 0
            )

    @property
    def weekday(self) -> int:
        return self.register(REG_WEEKDAYS)

    @property
    def alarm_flag(self) -> bool:
        return bool(self.register(REG_CONTROL_STATUS_2) & CS2_AF)

    @property
    def timer_flag(self) -> bool:
        return bool(self.register(REG_CONTROL_STATUS_2) & CS2_TF)

    @property
    def time(self) -> datetime.datetime:
        """The clock's seconds to years as a datetime (year register 00-99 as 2000-2099)."""
        with self._lock:
            return self._datetime()

    @time.setter
    def time(self, when: datetime.datetime) -> None:
        self.set_time(when)

    def set_time(
        self,
        when: datetime.datetime,
        *,
        century: bool | None = None,
        voltage_low: bool = False,
        weekday_number: int | None = None,
    ) -> None:
        """Put `when` (2000-2099) in the clock, as if set long ago and kept powered.

        C is left alone unless `century` is given; VL is cleared unless
        `voltage_low`; the weekday is `when`'s unless `weekday_number` is given
        (the chip does not check it against the date).
        """
        if not 2000 <= when.year <= 2099:
            raise ValueError(f"{when} is outside the years 2000-2099 the registers hold")
        with self._lock:
            regs = self.regs
            regs[REG_VL_SECONDS] = bcd(when.second) | (VL if voltage_low else 0)
            regs[REG_MINUTES] = bcd(when.minute)
            regs[REG_HOURS] = bcd(when.hour)
            regs[REG_DAYS] = bcd(when.day)
            regs[REG_WEEKDAYS] = weekday(when) if weekday_number is None else weekday_number
            c = regs[REG_CENTURY_MONTHS] & CENTURY if century is None else CENTURY * century
            regs[REG_CENTURY_MONTHS] = c | bcd(when.month)
            regs[REG_YEARS] = bcd(when.year - 2000)
            self._alarm.settle(regs)

    def advance(self, seconds: int) -> None:
        """Let `seconds` pass: the clock counts (unless STOP), alarm and timer may fire.

        The alarm is compared at every minute the clock passes, so a long
        advance with the alarm enabled costs a loop iteration per minute.
        """
        if seconds < 0:
            raise ValueError("the clock does not run backwards")
        with self._lock:
            if self.regs[REG_CONTROL_STATUS_1] & CS1_STOP:
                return  # the divider chain is held: neither the clock nor the timer runs
            # A ModelError before anything counts if the date or weekday is not valid.
            self._datetime()
            self._field(REG_WEEKDAYS)
            self._run_timer(seconds)
            left = seconds
            if self._alarm.enabled(self.regs):
                step = 60 - self._field(REG_VL_SECONDS)
                while step <= left:
                    self._count(step)
                    left -= step
                    step = 60
                    if self._alarm.counted(self.regs):
                        self.regs[REG_CONTROL_STATUS_2] |= CS2_AF
            self._count(left)
            self.update_int()

    # Clock internals (lock held)

    def _value(self, addr: int) -> int:
        if not 0 <= addr < NUM_REGS:
            raise ModelError(f"PCF8563: register {addr:#04x} does not exist (00h-0Fh)")
        if addr == REG_TIMER:
            return self._timer_count
        return self.regs[addr]

    def _field(self, addr: int) -> int:
        mask, low, high = _BCD[addr]
        raw = self.regs[addr] & mask
        try:
            value = from_bcd(raw)
        except ValueError:
            value = -1
        if not low <= value <= high:
            raise ModelError(
                f"PCF8563: register {addr:#04x} holds {raw:#04x}, not a value from {low} to {high}"
            )
        return value

    def _datetime(self) -> datetime.datetime:
        try:
            return datetime.datetime(
                2000 + self._field(REG_YEARS),
                self._field(REG_CENTURY_MONTHS),
                self._field(REG_DAYS),
                self._field(REG_HOURS),
                self._field(REG_MINUTES),
                self._field(REG_VL_SECONDS),
            )
        except ValueError as err:
            raise ModelError(f"PCF8563: the clock does not hold a valid date: {err}") from None

    def _count(self, seconds: int) -> None:
        """Count the time registers on by `seconds`, carries as the chip makes them."""
        regs = self.regs
        then, wraps, days = advance_calendar(self._datetime(), seconds)
        if wraps % 2:
            regs[REG_CENTURY_MONTHS] ^= CENTURY  # "toggled when Years overflows from 99 to 00"
        regs[REG_WEEKDAYS] = (regs[REG_WEEKDAYS] + days) % 7
        regs[REG_VL_SECONDS] = regs[REG_VL_SECONDS] & VL | bcd(then.second)
        regs[REG_MINUTES] = bcd(then.minute)
        regs[REG_HOURS] = bcd(then.hour)
        regs[REG_DAYS] = bcd(then.day)
        regs[REG_CENTURY_MONTHS] = regs[REG_CENTURY_MONTHS] & CENTURY | bcd(then.month)
        regs[REG_YEARS] = bcd(then.year - 2000)

    def _alarm_agrees(self, alarm: int, time: int) -> bool:
        mask = _BCD[alarm][0]
        return self.regs[alarm] & mask == self.regs[time] & mask

    def _run_timer(self, seconds: int) -> None:
        control = self.regs[REG_TIMER_CONTROL]
        if not control & TIMER_TE or self._timer_reload == 0:
            return  # disabled, or "timer stopped when n = 0"
        source = control & TIMER_TD_MASK
        if source in _TIMER_HZ:
            ticks = seconds * _TIMER_HZ[source]
        else:
            ticks, self._timer_seconds = divmod(self._timer_seconds + seconds, 60)
        if ticks < self._timer_count:
            self._timer_count -= ticks
            return
        # Counted down to zero at least once: TF, and the timer reloads n.
        self.regs[REG_CONTROL_STATUS_2] |= CS2_TF
        n = self._timer_reload
        self._timer_count = n - (ticks - self._timer_count) % n

    # Registers over the bus

    def reg_read(self, addr: int) -> int:
        with self._lock:
            value = self._value(addr)
        if self.undefined_bits_read_as_one:
            value |= ~IMPLEMENTED[addr] & 0xFF
        return value

    def reg_write(self, addr: int, val: int) -> None:
        with self._lock:
            self._write(addr, val)
            self.update_int()

    def _write(self, addr: int, val: int) -> None:
        if not 0 <= addr < NUM_REGS:
            raise ModelError(f"PCF8563: register {addr:#04x} does not exist (00h-0Fh)")
        zero = ZERO_BITS.get(addr, 0)
        if val & zero:
            raise ModelError(
                f"PCF8563: {val:#04x} written to register {addr:#04x} sets bits {val & zero:#04x}, "
                "which must be written 0"
            )
        if addr in _BCD and not (addr in dict(_ALARMS) and val & AE):
            # A disabled alarm register's value is ignored; anything else must be in range.
            mask, low, high = _BCD[addr]
            if not bcd_in_range(val, mask, low, high):
                raise ModelError(
                    f"PCF8563: {val:#04x} written to register {addr:#04x} is not BCD {low}-{high}"
                )
        val &= IMPLEMENTED[addr]
        regs = self.regs
        if addr == REG_CONTROL_STATUS_1 and val & CS1_TEST1:
            raise ModelError("PCF8563: EXT_CLK test mode (TEST1) is not modelled")
        if addr == REG_CONTROL_STATUS_2:
            if val & CS2_TI_TP:
                raise ModelError("PCF8563: pulsed timer interrupts (TI_TP) are not modelled")
            # AF and TF: writing 0 clears, writing 1 leaves the flag as it is ("a
            # logic AND is performed during a write access").
            flags = CS2_AF | CS2_TF
            val = val & ~flags | regs[addr] & val & flags
        elif addr == REG_TIMER:
            self._timer_reload = self._timer_count = val
        regs[addr] = val
        if addr in _BCD:
            # The alarm can only fire when the clock counts into a match, not on a write.
            self._alarm.settle(regs)

    # I2C: the register address auto-increments and wraps 0Fh -> 00h, across transfers.

    def write(self, data: bytes) -> None:
        if not data:
            return
        if data[0] >= NUM_REGS:
            raise ModelError(f"PCF8563: register address {data[0]:#04x} does not exist (00h-0Fh)")
        with self._lock:
            self.reg_addr = data[0]
            for val in data[1:]:
                with self._writes_lock:
                    self._writes.append((self.reg_addr, val))
                self.reg_write(self.reg_addr, val)
                self.reg_addr = (self.reg_addr + 1) % NUM_REGS

    def read(self, length: int) -> bytes:
        # One read is one access: advance() cannot count between its bytes.
        with self._lock:
            self.reads += 1
            out = bytearray()
            for _ in range(length):
                out.append(self.reg_read(self.reg_addr))
                self.reg_addr = (self.reg_addr + 1) % NUM_REGS
            return bytes(out)
