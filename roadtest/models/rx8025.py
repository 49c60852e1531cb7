"""Epson RX-8025 SA/NB real-time clock module (RX-8025 SA/NB application manual).

Sixteen 8-bit registers, 0h-Fh. The byte after the slave address (0110010b) is the
register address in its upper four bits and the transfer format in its lower four
(0h: the standard format); the address auto-increments after each byte read or
written, and wraps from Fh to 0h. In the standard read, the host writes the address
byte and reads, after a repeated start, from that register on.

- 0h-6h seconds, minutes, hours, weekday, day, month, year, in BCD. The hours
  register holds 00-23 in 24-hour mode; in 12-hour mode bit 5 is PM and bits 4-0 the
  hour 12, 01-11 (12 AM is 12h, 12 PM 32h, 11 PM 31h). Month bit 7 is /19,20; the
  weekday is a count 0-6 whose days are the user's to assign.
- 7h digital offset: bit 7 is TEST (written 0), F6-F0 a 7-bit two's complement
  number n. The clock is corrected in steps of 3.05 ppm, by the frequency deviation
  the oscillator is measured to have: a positive value for a fast oscillator, which
  the correction slows (a day lasts longer); n = 0 and 1 correct nothing, n = 2 to
  63 correct +3.05 to +189.10 ppm ((n - 1) x 3.05), n = -1 to -62 correct -3.05 to
  -189.10 ppm (n x 3.05). `correction_ppb` is this, in ppb.
- 8h-Ch the weekly (W) and daily (D) alarms' minutes and hours, and the weekly
  alarm's weekday mask; Dh is reserved.
- Eh control 1: WALE, DALE (alarm enables), /12,24 (1: 24-hour mode), /CLEN2,
  TEST (written 0), CT2-CT0 (the periodic interrupt).
- Fh control 2: VDSL, VDET (supply voltage drop detected), /XST (0: the oscillator
  stopped), PON (power-on reset happened), /CLEN1, CTFG, WAFG, DAFG (the periodic,
  weekly and daily alarm flags). VDET, PON and the three flags are cleared by
  writing 0; writing 1 leaves them as they are.

At power-on reset PON is set and /XST is 0, and the digital offset and both control
registers are otherwise 00h (12-hour mode, alarms and the periodic interrupt off); the
time registers hold no valid time.

Not modelled (a ModelError when the driver asks for it): transfer formats other than
0h, the read without an address (it starts at Fh), the reserved register Dh, TEST
set in the digital offset or control 1, digital offsets 40h and 41h (outside the
+-62 steps above), the periodic interrupt (CT2-CT0 other than 0), values outside a
time register's BCD range, '0' bits written with 1. The clock does not run: the
time registers hold what was last written until the test changes them, the alarms
never match, and INTA/INTB are not wired.
"""

from __future__ import annotations

import datetime
import threading
from typing import Final

from roadtest.models import bcd_clock
from roadtest.models.base import ModelError, SMBusModel
from roadtest.models.bcd_clock import bcd, bcd_in_range, from_bcd

REG_SECONDS: Final = 0x0
REG_MINUTES: Final = 0x1
REG_HOURS: Final = 0x2
REG_WEEKDAY: Final = 0x3
REG_DAY: Final = 0x4
REG_MONTH: Final = 0x5
REG_YEAR: Final = 0x6
REG_DIGITAL_OFFSET: Final = 0x7
REG_ALARM_W_MINUTE: Final = 0x8
REG_ALARM_W_HOUR: Final = 0x9
REG_ALARM_W_WEEKDAY: Final = 0xA
REG_ALARM_D_MINUTE: Final = 0xB
REG_ALARM_D_HOUR: Final = 0xC
REG_RESERVED: Final = 0xD
REG_CONTROL_1: Final = 0xE
REG_CONTROL_2: Final = 0xF
NUM_REGS: Final = 0x10

TRANSFER_STANDARD: Final = 0x0  # the address byte's lower four bits

PM: Final = 1 << 5  # in the hours registers, in 12-hour mode
DIGOFF_TEST: Final = 1 << 7
CTRL1_WALE: Final = 1 << 7
CTRL1_DALE: Final = 1 << 6
CTRL1_24H: Final = 1 << 5  # /12,24
CTRL1_CLEN2: Final = 1 << 4
CTRL1_TEST: Final = 1 << 3
CTRL1_CT_MASK: Final = 0b111
CTRL2_VDSL: Final = 1 << 7
CTRL2_VDET: Final = 1 << 6
CTRL2_XST: Final = 1 << 5  # /XST: 0 = the oscillator stopped
CTRL2_PON: Final = 1 << 4
CTRL2_CLEN1: Final = 1 << 3
CTRL2_CTFG: Final = 1 << 2
CTRL2_WAFG: Final = 1 << 1
CTRL2_DAFG: Final = 1 << 0
CTRL2_CLEARED_BY_0: Final = CTRL2_VDET | CTRL2_PON | CTRL2_CTFG | CTRL2_WAFG | CTRL2_DAFG

# The digital offset's step: 3.05 ppm.
OFFSET_STEP_PPB: Final = 3050
OFFSET_MAX_STEPS: Final = 62

# Bits each register has; the rest are '0' bits (read 0, written 0).
IMPLEMENTED: Final = (
    0x7F,  # 0h seconds
    0x7F,  # 1h minutes
    0x3F,  # 2h hours
    0x07,  # 3h weekday
    0x3F,  # 4h day
    0x9F,  # 5h /19,20, month
    0xFF,  # 6h year
    0xFF,  # 7h TEST, F6-F0
    0x7F,  # 8h alarm W minute
    0x3F,  # 9h alarm W hour
    0x7F,  # Ah alarm W weekdays
    0x7F,  # Bh alarm D minute
    0x3F,  # Ch alarm D hour
    0x00,  # Dh reserved
    0xFF,  # Eh control 1
    0xFF,  # Fh control 2
)

# BCD fields (the hours depend on the mode): register -> (mask, lowest, highest)
_BCD: Final = {
    REG_SECONDS: (0x7F, 0, 59),
    REG_MINUTES: (0x7F, 0, 59),
    REG_WEEKDAY: (0x07, 0, 6),
    REG_DAY: (0x3F, 1, 31),
    REG_MONTH: (0x1F, 1, 12),
    REG_YEAR: (0xFF, 0, 99),
    REG_ALARM_W_MINUTE: (0x7F, 0, 59),
    REG_ALARM_D_MINUTE: (0x7F, 0, 59),
}
_HOURS: Final = (REG_HOURS, REG_ALARM_W_HOUR, REG_ALARM_D_HOUR)


def hours_register(hour: int, hour24: bool) -> int:
    """The hours register for `hour` (0-23) in 24-hour or 12-hour mode (PM in bit 5)."""
    return bcd_clock.hours_register(hour, hour24)


def hour_of(value: int, hour24: bool) -> int:
    """The hour (0-23) an hours register holds (ValueError if none)."""
    return bcd_clock.hour_of(value, hour24)


def offset_code_ppb(code: int) -> int:
    """The correction (ppb) of digital offset code F6-F0 (ValueError for 40h and 41h)."""
    n = code & 0x7F
    n = n - 0x80 if n & 0x40 else n
    if n < -OFFSET_MAX_STEPS:
        raise ValueError(f"digital offset {code:#04x} is outside the +-62 steps of 3.05 ppm")
    return (n - 1 if n > 0 else n) * OFFSET_STEP_PPB


class RX8025(SMBusModel):
    """The module after power-on reset: PON set, /XST 0 (the time is not valid).

    `set_time(...)` puts a valid time in the registers (and clears PON, sets /XST);
    `digital_offset` is the offset register, `correction_ppb` what it corrects.
    """

    def __init__(self) -> None:
        super().__init__(regbytes=1)
        self._lock = threading.RLock()
        self.regs = [0] * NUM_REGS
        self.regs[REG_CONTROL_2] = CTRL2_PON
        self.reads = 0  # read messages served: lets a test wait for the kernel's own reads
        self._addressed = False  # an address byte was written in this transfer

    # State for tests

    def register(self, addr: int) -> int:
        """A register's value, without reading it over the bus."""
        with self._lock:
            return self.regs[addr]

    @property
    def hour24(self) -> bool:
        """/12,24: the hours registers count 00-23 (True) or 12, 01-11 with AM/PM."""
        return bool(self.register(REG_CONTROL_1) & CTRL1_24H)

    @hour24.setter
    def hour24(self, value: bool) -> None:
        with self._lock:
            self.regs[REG_CONTROL_1] = self.regs[REG_CONTROL_1] & ~CTRL1_24H | (
                CTRL1_24H if value else 0
            )

    @property
    def power_on_reset(self) -> bool:
        return bool(self.register(REG_CONTROL_2) & CTRL2_PON)

    @property
    def oscillator_stopped(self) -> bool:
        return not self.register(REG_CONTROL_2) & CTRL2_XST

    @property
    def digital_offset(self) -> int:
        return self.register(REG_DIGITAL_OFFSET)

    @digital_offset.setter
    def digital_offset(self, value: int) -> None:
        with self._lock:
            self._check_digital_offset(value)
            self.regs[REG_DIGITAL_OFFSET] = value

    @property
    def correction_ppb(self) -> int:
        """What the digital offset corrects, in ppb (positive: the clock is slowed)."""
        return offset_code_ppb(self.digital_offset)

    @property
    def time(self) -> datetime.datetime:
        """The time registers as a datetime (year register 00-99 as 2000-2099)."""
        with self._lock:
            regs = self.regs
            try:
                return datetime.datetime(
                    2000 + self._field(REG_YEAR),
                    self._field(REG_MONTH),
                    self._field(REG_DAY),
                    hour_of(regs[REG_HOURS], self.hour24),
                    self._field(REG_MINUTES),
                    self._field(REG_SECONDS),
                )
            except ValueError as err:
                raise ModelError(f"RX8025: the registers hold no valid time: {err}") from None

    def set_time(self, when: datetime.datetime, weekday: int | None = None) -> None:
        """Put `when` (2000-2099) in the time registers, in the current 12/24-hour mode, as
        if set long ago and kept powered: PON cleared, /XST set. The weekday register is
        `weekday`, or `when`'s with Sunday as 0."""
        if not 2000 <= when.year <= 2099:
            raise ValueError(f"{when} is outside the years 2000-2099 the registers hold")
        with self._lock:
            regs = self.regs
            regs[REG_SECONDS] = bcd(when.second)
            regs[REG_MINUTES] = bcd(when.minute)
            regs[REG_HOURS] = hours_register(when.hour, self.hour24)
            regs[REG_WEEKDAY] = when.isoweekday() % 7 if weekday is None else weekday
            regs[REG_DAY] = bcd(when.day)
            regs[REG_MONTH] = regs[REG_MONTH] & 0x80 | bcd(when.month)
            regs[REG_YEAR] = bcd(when.year - 2000)
            regs[REG_CONTROL_2] = regs[REG_CONTROL_2] & ~CTRL2_PON | CTRL2_XST

    # Registers

    def _field(self, addr: int) -> int:
        mask, low, high = _BCD[addr]
        value = from_bcd(self.regs[addr] & mask)
        if not low <= value <= high:
            raise ValueError(f"register {addr:X}h holds {value}, not {low}-{high}")
        return value

    def _check_digital_offset(self, value: int) -> None:
        if value & DIGOFF_TEST:
            raise ModelError(f"RX8025: {value:#04x} written to the digital offset sets TEST")
        try:
            offset_code_ppb(value)
        except ValueError as err:
            raise ModelError(f"RX8025: {err}: not modelled") from None

    def reg_read(self, addr: int) -> int:
        if addr == REG_RESERVED:
            raise ModelError("RX8025: register Dh is reserved")
        with self._lock:
            return self.regs[addr]

    def reg_write(self, addr: int, val: int) -> None:
        if addr == REG_RESERVED:
            raise ModelError("RX8025: register Dh is reserved")
        zero = ~IMPLEMENTED[addr] & 0xFF
        if val & zero:
            raise ModelError(
                f"RX8025: {val:#04x} written to register {addr:X}h sets bits {val & zero:#04x}, "
                "which must be written 0"
            )
        with self._lock:
            regs = self.regs
            if addr in _BCD:
                mask, low, high = _BCD[addr]
                if not bcd_in_range(val, mask, low, high):
                    raise ModelError(
                        f"RX8025: {val:#04x} written to register {addr:X}h is not BCD {low}-{high}"
                    )
            elif addr in _HOURS:
                try:
                    hour_of(val, self.hour24)
                except ValueError as err:
                    mode = "24" if self.hour24 else "12"
                    raise ModelError(
                        f"RX8025: {val:#04x} written to register {addr:X}h in {mode}-hour mode: "
                        f"{err}"
                    ) from None
            elif addr == REG_DIGITAL_OFFSET:
                self._check_digital_offset(val)
            elif addr == REG_CONTROL_1:
                if val & CTRL1_TEST:
                    raise ModelError(f"RX8025: {val:#04x} written to control 1 sets TEST")
                if val & CTRL1_CT_MASK:
                    raise ModelError("RX8025: the periodic interrupt (CT2-CT0) is not modelled")
            elif addr == REG_CONTROL_2:
                # Written 0, the flags clear; written 1, they stay as they are.
                val = val & ~CTRL2_CLEARED_BY_0 | regs[addr] & val & CTRL2_CLEARED_BY_0
            regs[addr] = val

    # I2C: the address byte, then data; the address auto-increments and wraps Fh -> 0h.

    def start_transfer(self) -> None:
        self._addressed = False

    def write(self, data: bytes) -> None:
        if not data:
            return
        addr, transfer = data[0] >> 4, data[0] & 0xF
        if transfer != TRANSFER_STANDARD:
            raise ModelError(
                f"RX8025: transfer format {transfer:X}h (address byte {data[0]:#04x}) "
                "is not modelled"
            )
        with self._lock:
            self._addressed = True
            self.reg_addr = addr
            for val in data[1:]:
                with self._writes_lock:
                    self._writes.append((self.reg_addr, val))
                self.reg_write(self.reg_addr, val)
                self.reg_addr = (self.reg_addr + 1) % NUM_REGS

    def read(self, length: int) -> bytes:
        if not length:
            return b""
        if not self._addressed:
            raise ModelError("RX8025: a read without an address (from Fh) is not modelled")
        with self._lock:
            self.reads += 1
            out = bytearray()
            for _ in range(length):
                out.append(self.reg_read(self.reg_addr))
                self.reg_addr = (self.reg_addr + 1) % NUM_REGS
            return bytes(out)
