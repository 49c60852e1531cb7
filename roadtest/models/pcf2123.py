"""NXP PCF2123 SPI real-time clock/calendar (datasheet PCF2123, Rev. 6, 15 July 2013).

Sixteen 8-bit registers, 00h-0Fh, on SPI only. The command byte ("Command byte
definition"): bit 7 R/W (0 write, 1 read), bits 6 to 4 the subaddress SA, which must be
001 ("other codes will cause the device to ignore data transfer"), bits 3 to 0 the register
address RA; data follows, the address counter counting on from register to register (the
datasheet's Fig 25: 12h 45h 10h writes Seconds = 45, Minutes = 10; Fig 26: 97h, then
Months and Years shift out, the counter at 07h, 08h, 09h) and wrapping from 0Fh to 00h.
The chip enable CE is active HIGH (devicetree: `spi-cs-high`). `SPIRegisters` frames it.

Registers (the register overview and bit descriptions):

- 00h Control_1: EXT_TEST (7), STOP (5), SR (4), 12_24 (2), CIE (1); bits 6, 3, 0 are 0.
  A software reset is the byte 58h written to Control_1 (bits 6, 4 and 3): every register
  back to its reset value. STOP freezes the clock.
- 01h Control_2: MI (7), SI (6), MSF (5), TI_TP (4), AF (3), TF (2), AIE (1), TIE (0).
  The flags AF, TF and MSF are cleared by writing 0; writing 1 leaves them as they are.
- 02h Seconds: OS (7), the oscillator-stop flag: "clock integrity is not guaranteed;
  oscillator has stopped or been interrupted", set at power-on and "will remain set until
  cleared by software"; seconds 00-59 in BCD (6..0).
- 03h Minutes 00-59, 04h Hours 00-23 (24-hour mode), 05h Days 01-31, 06h Weekdays 0-6,
  07h Months 01-12, 08h Years 00-99, all BCD.
- 09h-0Ch the minute, hour, day and weekday alarms: AE_x (7), 1 = that comparison
  disabled; the alarm sets AF when all enabled comparisons first match.
- 0Dh Offset_register: MODE (7; 0 normal, 1 course) and OFFSET (6..0), two's complement
  (Table 36: in normal mode each step is 2.17 ppm, +63 = +136.71 ppm, -64 = -138.88 ppm;
  in course mode 4.34 ppm a step). The model stores it; the clock's rate is not modelled.
- 0Eh Timer_clkout (COF 6..4, TE 3, CTD 1..0) and 0Fh Countdown_timer: stored; enabling
  the countdown timer (TE) is not modelled.

INT is an active-low open-drain output, asserted while AF and AIE are set.

Not modelled (a ModelError when the driver asks for it): the external clock test mode
(EXT_TEST), 12-hour mode, the minute/second interrupts (MI, SI), pulsed interrupts (TI_TP),
the countdown timer (TE), and values that are not BCD in range. Time moves only when the
test calls `advance(seconds)`, in whole seconds. The power-on values of the time registers
are not the datasheet's to rely on (OS says they are invalid): the model starts at
2000-01-01 00:00:00 with OS set.
"""

from __future__ import annotations

import datetime
import threading
from typing import Final

from roadtest.models.base import ModelError
from roadtest.models.bcd_clock import AlarmComparison, bcd, bcd_in_range, from_bcd
from roadtest.models.interrupt import Drive, InterruptPin, Polarity
from roadtest.models.spi_registers import SPIFraming, SPIRegisters

REG_CONTROL_1: Final = 0x00
REG_CONTROL_2: Final = 0x01
REG_SECONDS: Final = 0x02
REG_MINUTES: Final = 0x03
REG_HOURS: Final = 0x04
REG_DAYS: Final = 0x05
REG_WEEKDAYS: Final = 0x06
REG_MONTHS: Final = 0x07
REG_YEARS: Final = 0x08
REG_MINUTE_ALARM: Final = 0x09
REG_HOUR_ALARM: Final = 0x0A
REG_DAY_ALARM: Final = 0x0B
REG_WEEKDAY_ALARM: Final = 0x0C
REG_OFFSET: Final = 0x0D
REG_TIMER_CLKOUT: Final = 0x0E
REG_COUNTDOWN_TIMER: Final = 0x0F
NUM_REGS: Final = 0x10

CTRL1_EXT_TEST: Final = 1 << 7
CTRL1_STOP: Final = 1 << 5
CTRL1_SR: Final = 1 << 4
CTRL1_12_24: Final = 1 << 2
CTRL1_CIE: Final = 1 << 1
CTRL1_ZERO: Final = 0b0100_1001  # bits 6, 3 and 0 are 0...
SOFTWARE_RESET: Final = 0x58  # ...except in the software reset command, 0101 1000
CTRL2_MI: Final = 1 << 7
CTRL2_SI: Final = 1 << 6
CTRL2_MSF: Final = 1 << 5
CTRL2_TI_TP: Final = 1 << 4
CTRL2_AF: Final = 1 << 3
CTRL2_TF: Final = 1 << 2
CTRL2_AIE: Final = 1 << 1
CTRL2_TIE: Final = 1 << 0
FLAGS: Final = CTRL2_MSF | CTRL2_AF | CTRL2_TF
OS: Final = 1 << 7
AE: Final = 1 << 7
OFFSET_MODE: Final = 1 << 7
TIMER_TE: Final = 1 << 3

# Bits each register holds (the rest read 0).
IMPLEMENTED: Final = (
    0b1011_0110,  # 00h Control_1
    0b1111_1111,  # 01h Control_2
    0b1111_1111,  # 02h OS, seconds
    0b0111_1111,  # 03h minutes
    0b0011_1111,  # 04h hours
    0b0011_1111,  # 05h days
    0b0000_0111,  # 06h weekdays
    0b0001_1111,  # 07h months
    0b1111_1111,  # 08h years
    0b1111_1111,  # 09h AE_M, minute alarm
    0b1011_1111,  # 0Ah AE_H, hour alarm
    0b1011_1111,  # 0Bh AE_D, day alarm
    0b1000_0111,  # 0Ch AE_W, weekday alarm
    0b1111_1111,  # 0Dh MODE, OFFSET
    0b0111_1011,  # 0Eh COF, TE, CTD
    0b1111_1111,  # 0Fh countdown timer
)
# Power-on: OS set, alarms disabled, the rest as a clock at 2000-01-01 (a Saturday).
RESET: Final = (
    0x00,
    0x00,
    OS,
    0x00,
    0x00,
    0x01,
    0x06,
    0x01,
    0x00,
    AE,
    AE,
    AE,
    AE,
    0x00,
    0x00,
    0x00,
)

# BCD fields: register -> (mask, lowest, highest)
BCD_FIELDS: Final = {
    REG_SECONDS: (0x7F, 0, 59),
    REG_MINUTES: (0x7F, 0, 59),
    REG_HOURS: (0x3F, 0, 23),
    REG_DAYS: (0x3F, 1, 31),
    REG_WEEKDAYS: (0x07, 0, 6),
    REG_MONTHS: (0x1F, 1, 12),
    REG_YEARS: (0xFF, 0, 99),
    REG_MINUTE_ALARM: (0x7F, 0, 59),
    REG_HOUR_ALARM: (0x3F, 0, 23),
    REG_DAY_ALARM: (0x3F, 1, 31),
    REG_WEEKDAY_ALARM: (0x07, 0, 6),
}
ALARMS: Final = (
    (REG_MINUTE_ALARM, REG_MINUTES),
    (REG_HOUR_ALARM, REG_HOURS),
    (REG_DAY_ALARM, REG_DAYS),
    (REG_WEEKDAY_ALARM, REG_WEEKDAYS),
)

# Normal mode: 2.17 ppm a step; course mode: 4.34 ppm (Table 36).
OFFSET_PPM_NORMAL: Final = 2.17
OFFSET_PPM_COURSE: Final = 4.34

SPI_FRAMING: Final = SPIFraming(
    read_bit=7,
    read_level=1,
    address_mask=0x0F,
    fixed_mask=0x70,
    fixed_bits=0x10,  # SA = 001
    auto_increment=True,
    cs_high=True,
    # The clock phase and polarity are not checked: the datasheet's timing diagrams were
    # not at hand when this was written.
    modes=frozenset({0, 1, 2, 3}),
)


def offset_ppm(register: int) -> float:
    """What an Offset_register value means, in ppm (Table 36)."""
    steps = register & 0x7F
    steps -= 0x80 if steps & 0x40 else 0
    step = OFFSET_PPM_COURSE if register & OFFSET_MODE else OFFSET_PPM_NORMAL
    return round(steps * step, 2)


class PCF2123(InterruptPin, SPIRegisters):
    """The chip after power-on: OS set (the time is not valid), alarms disabled.

    `set_time(when)` puts a valid time in the clock (OS cleared), `advance(seconds)` runs
    it (unless STOP). `reads` counts reads of the Seconds register (each time read starts
    there), for a test that waits for the kernel's own read."""

    spi_framing = SPI_FRAMING
    int_polarity = Polarity.ACTIVE_LOW
    int_drive = Drive.OPEN_DRAIN

    def __init__(self) -> None:
        super().__init__(regbytes=1)
        self._lock = threading.RLock()
        self.regs = list(RESET)
        self.reads = 0
        self._alarm = AlarmComparison(ALARMS, self._alarm_agrees)

    # The INT output

    @property
    def int_asserted(self) -> bool:
        with self._lock:
            ctrl2 = self.regs[REG_CONTROL_2]
        return bool(ctrl2 & CTRL2_AF and ctrl2 & CTRL2_AIE)

    # State for tests

    def register(self, addr: int) -> int:
        with self._lock:
            return self.regs[addr]

    @property
    def oscillator_stopped(self) -> bool:
        return bool(self.register(REG_SECONDS) & OS)

    @property
    def alarm_flag(self) -> bool:
        return bool(self.register(REG_CONTROL_2) & CTRL2_AF)

    @property
    def time(self) -> datetime.datetime:
        with self._lock:
            return self._datetime()

    def set_time(self, when: datetime.datetime) -> None:
        """Put `when` (2000-2099) in the clock, OS cleared: a clock set long ago and kept
        running."""
        if not 2000 <= when.year <= 2099:
            raise ValueError(f"{when} is outside the years 2000-2099 the registers hold")
        with self._lock:
            self._put(when)
            self.regs[REG_SECONDS] &= ~OS
            self.regs[REG_WEEKDAYS] = when.isoweekday() % 7
            self._alarm.settle(self.regs)

    def advance(self, seconds: int) -> None:
        """Let `seconds` pass: the clock counts (unless STOP), and the alarm may set AF.
        The alarm is compared at each minute the clock passes."""
        if seconds < 0:
            raise ValueError("the clock does not run backwards")
        with self._lock:
            if self.regs[REG_CONTROL_1] & CTRL1_STOP:
                return
            left = seconds
            while left:
                now = self._datetime()
                step = min(left, 60 - now.second)
                self._count(now, step)
                left -= step
                if self._alarm.counted(self.regs):
                    self.regs[REG_CONTROL_2] |= CTRL2_AF
            self.update_int()

    # The clock (lock held)

    def _field(self, addr: int) -> int:
        mask, low, high = BCD_FIELDS[addr]
        raw = self.regs[addr] & mask
        try:
            value = from_bcd(raw)
        except ValueError:
            value = -1
        if not low <= value <= high:
            raise ModelError(
                f"PCF2123: register {addr:#04x} holds {raw:#04x}, not a value from {low} to {high}"
            )
        return value

    def _datetime(self) -> datetime.datetime:
        try:
            return datetime.datetime(
                2000 + self._field(REG_YEARS),
                self._field(REG_MONTHS),
                self._field(REG_DAYS),
                self._field(REG_HOURS),
                self._field(REG_MINUTES),
                self._field(REG_SECONDS),
            )
        except ValueError as err:
            raise ModelError(f"PCF2123: the clock does not hold a valid date: {err}") from None

    def _put(self, when: datetime.datetime) -> None:
        regs = self.regs
        regs[REG_SECONDS] = regs[REG_SECONDS] & OS | bcd(when.second)
        regs[REG_MINUTES] = bcd(when.minute)
        regs[REG_HOURS] = bcd(when.hour)
        regs[REG_DAYS] = bcd(when.day)
        regs[REG_MONTHS] = bcd(when.month)
        regs[REG_YEARS] = bcd(when.year % 100)

    def _count(self, now: datetime.datetime, seconds: int) -> None:
        then = now + datetime.timedelta(seconds=seconds)
        if then.year > 2099:
            then = then.replace(year=then.year - 100)
        days = (then.date() - now.date()).days
        self._put(then)  # OS as it was
        self.regs[REG_WEEKDAYS] = (self.regs[REG_WEEKDAYS] + days) % 7

    def _alarm_agrees(self, alarm: int, time: int) -> bool:
        mask = BCD_FIELDS[alarm][0]
        return self.regs[alarm] & mask == self.regs[time] & mask

    # Registers

    def reg_read(self, addr: int) -> int:
        with self._lock:
            if addr == REG_SECONDS:
                self.reads += 1
            return self.regs[addr] & IMPLEMENTED[addr]

    def reg_write(self, addr: int, val: int) -> None:
        with self._lock:
            self._write(addr, val)
            self.update_int()

    def _write(self, addr: int, val: int) -> None:
        regs = self.regs
        if addr == REG_CONTROL_1:
            if val == SOFTWARE_RESET:
                self.regs = list(RESET)
                self._alarm.matching = False
                return
            for bit, what in (
                (CTRL1_ZERO, "bits that are 0 (6, 3, 0) outside the software reset 58h"),
                (CTRL1_SR, "SR without the software reset command 58h"),
                (CTRL1_EXT_TEST, "the external clock test mode (EXT_TEST)"),
                (CTRL1_12_24, "12-hour mode (12_24)"),
            ):
                if val & bit:
                    raise ModelError(f"PCF2123: {val:#04x} written to Control_1 sets {what}")
        elif addr == REG_CONTROL_2:
            if val & (CTRL2_MI | CTRL2_SI | CTRL2_TI_TP | CTRL2_TIE):
                raise ModelError(
                    f"PCF2123: {val:#04x} written to Control_2 enables the minute/second or "
                    "timer interrupts (MI, SI, TI_TP, TIE), which are not modelled"
                )
            # "Writing 0 clears, writing 1 leaves the flag as it is."
            val = val & ~FLAGS | regs[addr] & val & FLAGS
        elif addr == REG_TIMER_CLKOUT and val & TIMER_TE:
            raise ModelError("PCF2123: the countdown timer (TE) is not modelled")
        elif addr in BCD_FIELDS and not (addr in dict(ALARMS) and val & AE):
            mask, low, high = BCD_FIELDS[addr]
            if not bcd_in_range(val, mask, low, high):
                raise ModelError(
                    f"PCF2123: {val:#04x} written to register {addr:#04x} is not BCD {low}-{high}"
                )
        regs[addr] = val & IMPLEMENTED[addr]
        if addr in BCD_FIELDS:
            # The alarm fires when the clock counts into a match, not on a write.
            self._alarm.settle(regs)
