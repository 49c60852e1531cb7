"""The Dallas/Maxim DS1307 family of I2C real-time clocks (drivers/rtc/rtc-ds1307.c), one
model with per-chip parameters.

Datasheets (Maxim Integrated / Analog Devices), the facts each gives cited below by
chip and section:

- DS1307 "64 x 8, Serial, I2C Real-Time Clock", 19-5215 Rev 3 (and the Dallas
  original's "Timekeeper Registers" figure);
- DS1337 "I2C Serial Real-Time Clock", 19-4652 Rev 4;
- DS1338 "I2C RTC with 56-Byte NV RAM", 19-5229 Rev 7;
- DS1340 "I2C RTC with Trickle Charger", 19-5225 Rev 3;
- and ST's M41T00 "Serial real-time clock" (DocID 6102; revision from memory), the
  family's register map by another maker.

What the chips share (each datasheet's "Clock and Calendar" section and its
timekeeper register table): registers 00h-06h hold seconds, minutes, hours, day (of
the week, 1-7, "user-defined but must be sequential"), date, month and year in BCD,
00-59, 00-59, 00-23 (or 1-12 with AM/PM), 1-7, 01-31, 01-12, 00-99. "Illogical time
and date entries result in undefined operation": the model refuses a write of BCD
digits outside a register's range (a ModelError, so the test names the write). A
write (or read) starts at the address its first byte sets; the pointer then
increments after each byte and wraps from the chip's last address to 00h, and it is
kept from one transfer to the next (a read without an address goes on where the last
access stopped) - DS1307 "Address Map" ("when the address pointer reaches 3Fh, ...
it wraps around to location 00h"), DS1337 "Address Map" (0Fh -> 00h), DS1338 (3Fh ->
00h), DS1340 (09h -> 00h). Bits the register table shows as 0 read 0: a 1 written
there is dropped.

Per chip (the `Chip` parameters):

- DS1307: seconds bit 7 is CH (clock halt): 1 stops the oscillator, so the time stands
  still ("Clock and Calendar"); hours bit 6 selects 12-hour mode (1), where bit 5 is
  PM and bits 4-0 the hour 1-12; control 07h is OUT, SQWE, RS1, RS0 (square wave 1 Hz,
  4.096, 8.192, 32.768 kHz); 56 bytes of battery-backed RAM at 08h-3Fh. Power-on
  (Rev 3: "the time and date registers are typically reset to 01/01/00 01 00:00:00
  ... The CH bit in the seconds register will be set to a 1"): 80h, 00h, 00h, 01h,
  01h, 01h, 00h. Control at power-on: RS1 = RS0 = 1, OUT = SQWE = 0 (from memory;
  the older Dallas sheet calls power-on contents undefined). RAM at power-on is
  undefined: the model starts it at 00h.
- DS1338: the DS1307's map (Table 3; "bits listed as 0 always read as a 0") with OSF
  (oscillator stop flag) in control bit 5: set at the first power-up, when the
  oscillator stops (CH set to 1 is one cause), cleared only by writing 0 (a 1 written
  leaves it). "The initial power-on state of all registers, unless otherwise specified,
  is not defined" ("Clock and Calendar"): the model starts as the DS1307 does, CH set,
  and control B3h (OUT, OSF, RS1, RS0; OSF is the datasheet's, the rest a choice).
- DS1337: no CH bit and no RAM; month bit 7 is the century bit, toggled when the
  years register overflows 99 -> 00. Alarm 1 at 07h-0Ah (seconds, minutes, hours,
  day/date, each with its mask bit A1M1-A1M4 in bit 7; DY/DT in bit 6 of day/date:
  1 matches the day of the week, 0 the date), alarm 2 at 0Bh-0Dh (minutes, hours,
  day/date; A2M2-A2M4), control 0Eh (/EOSC, RS2, RS1, INTCN, A2IE, A1IE; power-on
  18h: oscillator on, 32 kHz square wave on SQW/INTB, alarms off), status 0Fh (OSF,
  A2F, A1F; power-on OSF = 1). "The device checks for an alarm match once per
  second": when every unmasked field matches, A1F or A2F is set; the flags, like OSF,
  are only cleared by writing 0. INTA (open drain, active low) is asserted while A1F
  and A1IE are set, and - with INTCN = 0, the square wave on SQW/INTB - also while
  A2F and A2IE are (the INTCN paragraph; from memory). /EOSC = 1 stops the oscillator
  and sets OSF. Mask combinations the table does not list "result in illogical
  operation": the model matches the unmasked fields whatever they are.
- DS1340: seconds bit 7 is /EOSC, which stops the oscillator only on battery power
  (the model is always on VCC: it is stored, no more); hours bit 7 CEB (century
  enable) and bit 6 CB (century, toggled at 99 -> 00 while CEB = 1), 24-hour only;
  control 07h OUT, FT (512 Hz frequency test), S (calibration sign), CAL4-CAL0,
  power-on 80h; trickle charger 08h (TCS3-0 = 1010 enables it, any other pattern
  disables it; DS = 01 no diode, 10 one diode; ROUT = 01 250 ohm, 10 2 kohm, 11
  4 kohm; 00h at power-on: disabled); flag 09h, OSF in bit 7 (set at power-on,
  cleared by writing 0). Time at power-on 00:00:00 01/01/00, day 1 (from memory).
- M41T00 (ST): eight registers, 00h-07h, the pointer wrapping 07h -> 00h; seconds
  bit 7 is ST (stop: 1 stops the oscillator); hours bit 7 CEB, bit 6 CB as on the
  DS1340, 24-hour only; control 07h OUT, FT (512 Hz frequency test on FT/OUT), S
  (calibration sign: 1 positive, the clock sped up) and the five calibration bits
  (steps of +4.068 ppm with S = 1, -2.034 ppm with S = 0; "Clock calibration"). The
  datasheet gives no power-on contents (from memory): the model starts at 00:00:00
  01/01/00, day 1, with ST set (a clock never started) and OUT = 1.

Simplified: the clock does not run on its own: time moves in whole seconds when the
test calls `advance()` (the sub-second countdown chain, reset by a write of the
seconds register, is not modelled); the user buffers that freeze the time for a read
are the model's lock (one read message sees one time). The square-wave and FT
outputs, OUT, the calibration's effect on the rate, battery switch-over and the
DS1337's SQW/INTB pin are not modelled; alarm 2 on INTB is not wired (the harness
wires INTA as `irq`).
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Final

from roadtest.models.base import ModelError, SMBusModel
from roadtest.models.bcd_clock import (
    advance_calendar,
    bcd,
    bcd_in_range,
    from_bcd,
    hour_of,
    hours_register,
)
from roadtest.models.interrupt import Drive, InterruptPin, Polarity
from roadtest.models.regmap import Field, Register, RegisterMap

REG_SECONDS: Final = 0x00
REG_MINUTES: Final = 0x01
REG_HOURS: Final = 0x02
REG_DAY: Final = 0x03
REG_DATE: Final = 0x04
REG_MONTH: Final = 0x05
REG_YEAR: Final = 0x06
TIME_REGS: Final = tuple(range(REG_SECONDS, REG_YEAR + 1))

# DS1307 / DS1338
REG_CONTROL: Final = 0x07
RAM_START: Final = 0x08
CH: Final = 1 << 7  # seconds: clock halt (DS1307, DS1338)
H12: Final = 1 << 6  # hours: 12-hour mode
PM: Final = 1 << 5  # hours in 12-hour mode
CTRL_OUT: Final = 1 << 7
CTRL_OSF: Final = 1 << 5  # DS1338
CTRL_SQWE: Final = 1 << 4
CTRL_RS_MASK: Final = 0b11

# DS1337
REG_A1_SECONDS: Final = 0x07
REG_A1_MINUTES: Final = 0x08
REG_A1_HOURS: Final = 0x09
REG_A1_DAY_DATE: Final = 0x0A
REG_A2_MINUTES: Final = 0x0B
REG_A2_HOURS: Final = 0x0C
REG_A2_DAY_DATE: Final = 0x0D
REG_DS1337_CONTROL: Final = 0x0E
REG_DS1337_STATUS: Final = 0x0F
CENTURY: Final = 1 << 7  # month
AM: Final = 1 << 7  # an alarm register's mask bit (A1M1..A2M4): 1 = ignore the field
DY_DT: Final = 1 << 6  # alarm day/date: 1 = day of the week
NEOSC: Final = 1 << 7  # control (DS1337); seconds (DS1340)
RS2: Final = 1 << 4
RS1: Final = 1 << 3
INTCN: Final = 1 << 2
A2IE: Final = 1 << 1
A1IE: Final = 1 << 0
OSF: Final = 1 << 7  # DS1337 status, DS1340 flag
A2F: Final = 1 << 1
A1F: Final = 1 << 0

# DS1340
REG_DS1340_CONTROL: Final = 0x07
REG_TRICKLE: Final = 0x08
REG_FLAG: Final = 0x09
CEB: Final = 1 << 7  # hours: century enable
CB: Final = 1 << 6  # hours: century
FT: Final = 1 << 6
CAL_SIGN: Final = 1 << 5
CAL_MASK: Final = 0x1F
TCS_ENABLE: Final = 0b1010  # TCS3-0, bits 7-4
DS_NO_DIODE: Final = 0b01
DS_ONE_DIODE: Final = 0b10
ROUT_OHMS: Final = {0b01: 250, 0b10: 2000, 0b11: 4000}


def _time_registers(
    seconds: Sequence[Field], hours: Sequence[Field], month: Sequence[Field]
) -> list[Register]:
    """00h-06h of every chip, with that chip's flags beside the BCD fields."""
    return [
        Register("SECONDS", REG_SECONDS, 0x00, fields=(*seconds, Field("SECONDS", 6, 0))),
        Register("MINUTES", REG_MINUTES, 0x00, fields=(Field("MINUTES", 6, 0),)),
        Register("HOURS", REG_HOURS, 0x00, fields=tuple(hours)),
        Register("DAY", REG_DAY, 0x01, fields=(Field("DAY", 2, 0),)),
        Register("DATE", REG_DATE, 0x01, fields=(Field("DATE", 5, 0),)),
        Register("MONTH", REG_MONTH, 0x01, fields=(*month, Field("MONTH", 4, 0))),
        Register("YEAR", REG_YEAR, 0x00, fields=(Field("YEAR", 7, 0),)),
    ]


def _ram(start: int, end: int) -> list[Register]:
    return [Register(f"RAM_{addr:02X}", addr) for addr in range(start, end + 1)]


_RS = Field("RS", 1, 0, values={"1HZ": 0, "4KHZ": 1, "8KHZ": 2, "32KHZ": 3})
_HOURS_12_24 = (Field("H12", 6), Field("HOURS", 5, 0))
_HOURS_CENTURY = (Field("CEB", 7), Field("CB", 6), Field("HOURS", 5, 0))


def _with_reset(regs: list[Register], **resets: int) -> list[Register]:
    return [
        Register(r.name, r.address, resets.get(r.name, r.reset), r.access, r.fields) for r in regs
    ]


DS1307_MAP: Final = RegisterMap(
    [
        *_with_reset(_time_registers((Field("CH", 7),), _HOURS_12_24, ()), SECONDS=CH),
        Register("CONTROL", REG_CONTROL, 0x03, fields=(Field("OUT", 7), Field("SQWE", 4), _RS)),
        *_ram(RAM_START, 0x3F),
    ]
)
DS1338_MAP: Final = RegisterMap(
    [
        *_with_reset(_time_registers((Field("CH", 7),), _HOURS_12_24, ()), SECONDS=CH),
        Register(
            "CONTROL",
            REG_CONTROL,
            0xB3,
            fields=(Field("OUT", 7), Field("OSF", 5), Field("SQWE", 4), _RS),
        ),
        *_ram(RAM_START, 0x3F),
    ]
)


def _alarm(name: str, address: int, mask: str, fields: Sequence[Field]) -> Register:
    return Register(name, address, 0x00, fields=(Field(mask, 7), *fields))


DS1337_MAP: Final = RegisterMap(
    [
        *_time_registers((), _HOURS_12_24, (Field("CENTURY", 7),)),
        _alarm("A1_SECONDS", REG_A1_SECONDS, "A1M1", (Field("SECONDS", 6, 0),)),
        _alarm("A1_MINUTES", REG_A1_MINUTES, "A1M2", (Field("MINUTES", 6, 0),)),
        _alarm("A1_HOURS", REG_A1_HOURS, "A1M3", _HOURS_12_24),
        _alarm(
            "A1_DAY_DATE", REG_A1_DAY_DATE, "A1M4", (Field("DY_DT", 6), Field("DAY_DATE", 5, 0))
        ),
        _alarm("A2_MINUTES", REG_A2_MINUTES, "A2M2", (Field("MINUTES", 6, 0),)),
        _alarm("A2_HOURS", REG_A2_HOURS, "A2M3", _HOURS_12_24),
        _alarm(
            "A2_DAY_DATE", REG_A2_DAY_DATE, "A2M4", (Field("DY_DT", 6), Field("DAY_DATE", 5, 0))
        ),
        Register(
            "CONTROL",
            REG_DS1337_CONTROL,
            RS2 | RS1,
            fields=(
                Field("nEOSC", 7),
                Field("RS", 4, 3, values={"1HZ": 0, "4KHZ": 1, "8KHZ": 2, "32KHZ": 3}),
                Field("INTCN", 2),
                Field("A2IE", 1),
                Field("A1IE", 0),
            ),
        ),
        Register(
            "STATUS",
            REG_DS1337_STATUS,
            OSF,
            fields=(Field("OSF", 7), Field("A2F", 1), Field("A1F", 0)),
        ),
    ]
)
DS1340_MAP: Final = RegisterMap(
    [
        *_time_registers((Field("nEOSC", 7),), _HOURS_CENTURY, ()),
        Register(
            "CONTROL",
            REG_DS1340_CONTROL,
            CTRL_OUT,
            fields=(Field("OUT", 7), Field("FT", 6), Field("S", 5), Field("CAL", 4, 0)),
        ),
        Register(
            "TRICKLE",
            REG_TRICKLE,
            0x00,
            fields=(
                Field("TCS", 7, 4, values={"ENABLE": TCS_ENABLE}),
                Field("DS", 3, 2, values={"NO_DIODE": DS_NO_DIODE, "ONE_DIODE": DS_ONE_DIODE}),
                Field("ROUT", 1, 0, values={"250": 0b01, "2K": 0b10, "4K": 0b11}),
            ),
        ),
        Register("FLAG", REG_FLAG, OSF, fields=(Field("OSF", 7),)),
    ]
)


M41T00_MAP: Final = RegisterMap(
    [
        *_with_reset(_time_registers((Field("ST", 7),), _HOURS_CENTURY, ()), SECONDS=CH),
        Register(
            "CONTROL",
            REG_CONTROL,
            CTRL_OUT,
            fields=(Field("OUT", 7), Field("FT", 6), Field("S", 5), Field("CAL", 4, 0)),
        ),
    ]
)


@dataclass(frozen=True)
class Chip:
    """What one member of the family has (see the module docstring for the sources)."""

    name: str
    register_map: RegisterMap
    size: int  # addresses 00h..size-1; the pointer wraps to 00h after the last
    halt_bit: bool = False  # seconds bit 7 stops the oscillator (CH)
    twelve_hour: bool = True  # hours bit 6 selects 12-hour mode
    century_in_month: bool = False  # month bit 7 (DS1337)
    century_in_hours: bool = False  # hours CEB/CB (DS1340)
    osf: tuple[int, int] | None = None  # (register, bit) of the oscillator stop flag
    nvram: tuple[int, int] | None = None  # first and last RAM address
    alarms: bool = False  # DS1337 alarm 1 and 2, control and status
    trickle: bool = False  # DS1340 trickle charger register


DS1307_CHIP: Final = Chip("DS1307", DS1307_MAP, 0x40, halt_bit=True, nvram=(RAM_START, 0x3F))
DS1338_CHIP: Final = Chip(
    "DS1338",
    DS1338_MAP,
    0x40,
    halt_bit=True,
    osf=(REG_CONTROL, CTRL_OSF),
    nvram=(RAM_START, 0x3F),
)
DS1337_CHIP: Final = Chip(
    "DS1337",
    DS1337_MAP,
    0x10,
    century_in_month=True,
    osf=(REG_DS1337_STATUS, OSF),
    alarms=True,
)
DS1340_CHIP: Final = Chip(
    "DS1340",
    DS1340_MAP,
    0x0A,
    twelve_hour=False,
    century_in_hours=True,
    osf=(REG_FLAG, OSF),
    trickle=True,
)

M41T00_CHIP: Final = Chip(
    "M41T00", M41T00_MAP, 0x08, halt_bit=True, twelve_hour=False, century_in_hours=True
)

# Each register's BCD field: (mask, lowest, highest). The hours register is checked
# by its mode.
_BCD: Final = {
    REG_SECONDS: (0x7F, 0, 59),
    REG_MINUTES: (0x7F, 0, 59),
    REG_DAY: (0x07, 1, 7),
    REG_DATE: (0x3F, 1, 31),
    REG_MONTH: (0x1F, 1, 12),
    REG_YEAR: (0xFF, 0, 99),
}


def _implemented(reg: Register) -> int:
    """The bits a register keeps: its fields' (every bit of a register without fields)."""
    if not reg.fields:
        return reg.max
    return sum(f.mask for f in reg.fields)


class DS1307Family(SMBusModel):
    """One chip of the family after its power-on reset (see `chip`); a subclass per chip.

    `set_time(...)` puts a valid, running time in the clock; `advance(seconds)` runs it.
    """

    chip: ClassVar[Chip]
    register_map: ClassVar[RegisterMap]

    def __init__(self) -> None:
        super().__init__(regbytes=1)
        # The backend thread (the driver's transfers) and the test thread (advance()).
        self._lock = threading.RLock()
        regmap = self.register_map
        self.regs = [0] * self.chip.size
        for reg in regmap:
            self.regs[reg.address] = reg.reset
        self._kept = [0] * self.chip.size
        for reg in regmap:
            self._kept[reg.address] = _implemented(reg)
        self.reads = 0  # read messages served: lets a test wait for the kernel's own reads
        self.time_reads = 0  # of them, those from Seconds on (reading the time)
        self.transfers = 0  # I2C transfers seen: lets a test aim a failure past the probe

    # State for tests

    def register(self, addr: int) -> int:
        """A register's value, without reading it over the bus."""
        with self._lock:
            self._check_address(addr)
            return self.regs[addr]

    def poke(self, addr: int, value: int) -> None:
        """Set a register as another bus master (or the chip itself) would have left it:
        no access rule is applied, the write log is left alone."""
        with self._lock:
            self._check_address(addr)
            self.regs[addr] = value & self._kept[addr]
            self._changed()

    @property
    def halted(self) -> bool:
        """The oscillator is stopped: the time stands still."""
        return self._halted()

    @property
    def oscillator_stop_flag(self) -> bool:
        osf = self.chip.osf
        if osf is None:
            raise AttributeError(f"{self.chip.name} has no oscillator stop flag")
        return bool(self.register(osf[0]) & osf[1])

    @oscillator_stop_flag.setter
    def oscillator_stop_flag(self, value: bool) -> None:
        osf = self.chip.osf
        if osf is None:
            raise AttributeError(f"{self.chip.name} has no oscillator stop flag")
        with self._lock:
            self.regs[osf[0]] = self.regs[osf[0]] & ~osf[1] | (osf[1] if value else 0)

    @property
    def hour24(self) -> bool:
        """The hours register counts 00-23 (always, on a chip without 12-hour mode)."""
        return not self.chip.twelve_hour or not self.register(REG_HOURS) & H12

    @property
    def weekday(self) -> int:
        """The day register, 1-7."""
        return self.register(REG_DAY)

    @property
    def century(self) -> bool:
        """The century bit (month bit 7, or CB), which the chip toggles at 99 -> 00."""
        if self.chip.century_in_month:
            return bool(self.register(REG_MONTH) & CENTURY)
        if self.chip.century_in_hours:
            return bool(self.register(REG_HOURS) & CB)
        raise AttributeError(f"{self.chip.name} has no century bit")

    @property
    def nvram(self) -> bytes:
        """The battery-backed RAM."""
        span = self.chip.nvram
        if span is None:
            raise AttributeError(f"{self.chip.name} has no RAM")
        with self._lock:
            return bytes(self.regs[span[0] : span[1] + 1])

    @nvram.setter
    def nvram(self, data: bytes) -> None:
        span = self.chip.nvram
        if span is None:
            raise AttributeError(f"{self.chip.name} has no RAM")
        size = span[1] + 1 - span[0]
        if len(data) != size:
            raise ValueError(f"{self.chip.name} has {size} bytes of RAM, not {len(data)}")
        with self._lock:
            self.regs[span[0] : span[1] + 1] = list(data)

    @property
    def time(self) -> datetime.datetime:
        """The time registers as a datetime (year register 00-99 as 2000-2099)."""
        with self._lock:
            return self._datetime()

    def set_time(
        self,
        when: datetime.datetime,
        *,
        hour24: bool = True,
        weekday: int | None = None,
        century: bool | None = None,
    ) -> None:
        """Put `when` (2000-2099) in the clock, as if set long ago and kept powered: the
        oscillator running (CH cleared) and OSF clear. The hours in 24-hour or (where
        the chip has it) 12-hour mode; the day register `weekday` (1-7), or `when`'s
        with Sunday as 1; the century bit as given (on the DS1340 with CEB set), or
        left alone."""
        if not 2000 <= when.year <= 2099:
            raise ValueError(f"{when} is outside the years 2000-2099 the registers hold")
        if not hour24 and not self.chip.twelve_hour:
            raise ValueError(f"{self.chip.name} has no 12-hour mode")
        with self._lock:
            regs = self.regs
            # CH cleared; the DS1340's /EOSC (bit 7 too) kept as it is.
            keep = 0 if self.chip.halt_bit else regs[REG_SECONDS] & self._kept[REG_SECONDS] & 0x80
            regs[REG_SECONDS] = keep | bcd(when.second)
            regs[REG_MINUTES] = bcd(when.minute)
            hours = hours_register(when.hour, hour24, mode_bit=H12)
            if self.chip.century_in_hours:
                flags = regs[REG_HOURS] & (CEB | CB)
                if century is not None:
                    flags = CEB | (CB if century else 0)
                hours |= flags
            regs[REG_HOURS] = hours
            regs[REG_DAY] = when.isoweekday() % 7 + 1 if weekday is None else weekday
            regs[REG_DATE] = bcd(when.day)
            month = bcd(when.month)
            if self.chip.century_in_month:
                keep = regs[REG_MONTH] & CENTURY if century is None else CENTURY * century
                month |= keep
            regs[REG_MONTH] = month
            regs[REG_YEAR] = bcd(when.year - 2000)
            if self.chip.osf is not None:
                reg, bit = self.chip.osf
                regs[reg] &= ~bit

    def advance(self, seconds: int) -> None:
        """Let `seconds` pass: the clock counts (unless its oscillator is stopped), and on
        a chip with alarms each second's match may set A1F or A2F."""
        if seconds < 0:
            raise ValueError("the clock does not run backwards")
        with self._lock:
            if self._halted() or seconds == 0:
                return
            self._datetime()  # a ModelError before anything counts if the date is invalid
            self._day()
            if not self.chip.alarms:
                self._count(seconds)
                return
            for _ in range(seconds):
                self._count(1)
                self._check_alarms()
            self._changed()

    # Internals (lock held)

    def _check_address(self, addr: int) -> None:
        if not 0 <= addr < self.chip.size:
            raise ModelError(
                f"{self.chip.name}: register {addr:#04x} does not exist "
                f"(00h-{self.chip.size - 1:02X}h)"
            )

    def _halted(self) -> bool:
        with self._lock:
            if self.chip.halt_bit:
                return bool(self.regs[REG_SECONDS] & CH)
            if self.chip.alarms:
                return bool(self.regs[REG_DS1337_CONTROL] & NEOSC)
            return False  # DS1340: /EOSC stops the oscillator only on battery power

    def _field(self, addr: int) -> int:
        mask, low, high = _BCD[addr]
        raw = self.regs[addr] & mask
        if not bcd_in_range(raw, mask, low, high):
            raise ModelError(
                f"{self.chip.name}: register {addr:#04x} holds {raw:#04x}, "
                f"not a value from {low} to {high}"
            )
        return from_bcd(raw)

    def _hour(self) -> int:
        value = self.regs[REG_HOURS]
        hour24 = not self.chip.twelve_hour or not value & H12
        try:
            return hour_of(value if self.chip.twelve_hour else value & 0x3F, hour24)
        except ValueError as err:
            raise ModelError(f"{self.chip.name}: {err}") from None

    def _day(self) -> int:
        return self._field(REG_DAY)

    def _datetime(self) -> datetime.datetime:
        try:
            return datetime.datetime(
                2000 + self._field(REG_YEAR),
                self._field(REG_MONTH),
                self._field(REG_DATE),
                self._hour(),
                self._field(REG_MINUTES),
                self._field(REG_SECONDS),
            )
        except ValueError as err:
            raise ModelError(
                f"{self.chip.name}: the clock does not hold a valid date: {err}"
            ) from None

    def _count(self, seconds: int) -> None:
        """Count the time registers on by `seconds`, with the chip's carries: the day 7 ->
        1 at midnight, the century bit at 99 -> 00, the hours in their mode."""
        regs = self.regs
        then, wraps, days = advance_calendar(self._datetime(), seconds)
        regs[REG_SECONDS] = regs[REG_SECONDS] & 0x80 | bcd(then.second)
        regs[REG_MINUTES] = bcd(then.minute)
        old_hours = regs[REG_HOURS]
        if self.chip.twelve_hour:
            regs[REG_HOURS] = hours_register(then.hour, not old_hours & H12, mode_bit=H12)
        else:
            cb = old_hours & CB
            if self.chip.century_in_hours and old_hours & CEB and wraps % 2:
                cb ^= CB
            regs[REG_HOURS] = old_hours & CEB | cb | bcd(then.hour)
        regs[REG_DAY] = (self._day() - 1 + days) % 7 + 1
        regs[REG_DATE] = bcd(then.day)
        century = regs[REG_MONTH] & CENTURY if self.chip.century_in_month else 0
        if wraps % 2:
            century ^= CENTURY if self.chip.century_in_month else 0
        regs[REG_MONTH] = century | bcd(then.month)
        regs[REG_YEAR] = bcd(then.year - 2000)

    def _alarm_hour_matches(self, alarm: int, hour: int) -> bool:
        try:
            return hour_of(alarm & 0x7F, not alarm & H12) == hour
        except ValueError:
            return False  # an hour the clock never reaches

    def _day_date_matches(self, alarm: int) -> bool:
        if alarm & DY_DT:
            return alarm & 0x0F == self.regs[REG_DAY] & 0x07
        return alarm & 0x3F == self.regs[REG_DATE] & 0x3F

    def _check_alarms(self) -> None:
        """The once-a-second comparison of each alarm with the clock (DS1337)."""
        regs = self.regs
        hour = self._hour()
        a1 = (
            (regs[REG_A1_SECONDS] & AM or regs[REG_A1_SECONDS] & 0x7F == regs[REG_SECONDS] & 0x7F)
            and (regs[REG_A1_MINUTES] & AM or regs[REG_A1_MINUTES] & 0x7F == regs[REG_MINUTES])
            and (regs[REG_A1_HOURS] & AM or self._alarm_hour_matches(regs[REG_A1_HOURS], hour))
            and (regs[REG_A1_DAY_DATE] & AM or self._day_date_matches(regs[REG_A1_DAY_DATE]))
        )
        # Alarm 2 has no seconds: it is compared at 00 seconds of each minute.
        a2 = (
            regs[REG_SECONDS] & 0x7F == 0
            and (regs[REG_A2_MINUTES] & AM or regs[REG_A2_MINUTES] & 0x7F == regs[REG_MINUTES])
            and (regs[REG_A2_HOURS] & AM or self._alarm_hour_matches(regs[REG_A2_HOURS], hour))
            and (regs[REG_A2_DAY_DATE] & AM or self._day_date_matches(regs[REG_A2_DAY_DATE]))
        )
        if a1:
            regs[REG_DS1337_STATUS] |= A1F
        if a2:
            regs[REG_DS1337_STATUS] |= A2F

    def _changed(self) -> None:
        """The registers changed: a chip with an interrupt output updates it."""

    def _write(self, addr: int, val: int) -> None:
        chip = self.chip
        self._check_address(addr)
        if addr in _BCD and not bcd_in_range(val, *_BCD[addr]):
            mask, low, high = _BCD[addr]
            raise ModelError(
                f"{chip.name}: {val:#04x} written to register {addr:#04x} is not BCD {low}-{high}"
            )
        if addr == REG_HOURS:
            hour24 = not chip.twelve_hour or not val & H12
            try:
                hour_of(val if chip.twelve_hour else val & 0x3F, hour24)
            except ValueError as err:
                raise ModelError(
                    f"{chip.name}: {val:#04x} written to the hours register: {err}"
                ) from None
        regs = self.regs
        old = regs[addr]
        val &= self._kept[addr]
        # Flags that only a 0 written clears (a 1 written leaves them as they are).
        flags = 0
        if chip.osf is not None and addr == chip.osf[0]:
            flags |= chip.osf[1]
        if chip.alarms and addr == REG_DS1337_STATUS:
            flags |= A1F | A2F
        if flags:
            val = val & ~flags | old & val & flags
        regs[addr] = val
        # The oscillator stopped by software: OSF records it (DS1338 CH; DS1337 /EOSC).
        if chip.osf is not None:
            stopped = (chip.halt_bit and addr == REG_SECONDS and val & CH and not old & CH) or (
                chip.alarms and addr == REG_DS1337_CONTROL and val & NEOSC and not old & NEOSC
            )
            if stopped:
                reg, bit = chip.osf
                regs[reg] |= bit

    # Registers over the bus

    def reg_read(self, addr: int) -> int:
        with self._lock:
            self._check_address(addr)
            return self.regs[addr]

    def reg_write(self, addr: int, val: int) -> None:
        with self._lock:
            self._write(addr, val)
            self._changed()

    def start_transfer(self) -> None:
        self.transfers += 1

    def write(self, data: bytes) -> None:
        if not data:
            return
        with self._lock:
            self._check_address(data[0])
            self.reg_addr = data[0]
            for val in data[1:]:
                with self._writes_lock:
                    self._writes.append((self.reg_addr, val))
                self.reg_write(self.reg_addr, val)
                self.reg_addr = (self.reg_addr + 1) % self.chip.size

    def read(self, length: int) -> bytes:
        # One read is one access: the user buffers hold one time for all its bytes.
        with self._lock:
            self.reads += 1
            self.time_reads += self.reg_addr == REG_SECONDS
            out = bytearray()
            for _ in range(length):
                out.append(self.reg_read(self.reg_addr))
                self.reg_addr = (self.reg_addr + 1) % self.chip.size
            return bytes(out)


class DS1307(DS1307Family):
    """Maxim DS1307: CH, 12/24-hour, control (OUT, SQWE, RS), 56 bytes of RAM."""

    chip = DS1307_CHIP
    register_map = DS1307_MAP


class DS1338(DS1307Family):
    """Maxim DS1338: the DS1307 with an oscillator stop flag in its control register."""

    chip = DS1338_CHIP
    register_map = DS1338_MAP


class DS1340(DS1307Family):
    """Maxim DS1340: century bits, calibration, trickle charger, OSF in its flag register."""

    chip = DS1340_CHIP
    register_map = DS1340_MAP

    @property
    def trickle_charger(self) -> tuple[bool, int] | None:
        """What the trickle-charge register selects (datasheet Table 3): None while it is
        disabled, else (a diode in the path, the resistor in ohms)."""
        value = self.register(REG_TRICKLE)
        tcs, ds, rout = value >> 4, value >> 2 & 0b11, value & 0b11
        if tcs != TCS_ENABLE or ds not in (DS_NO_DIODE, DS_ONE_DIODE) or rout == 0:
            return None
        return ds == DS_ONE_DIODE, ROUT_OHMS[rout]


class M41T00(DS1307Family):
    """ST M41T00: ST (stop) in the seconds, CEB/CB in the hours, calibration and FT."""

    chip = M41T00_CHIP
    register_map = M41T00_MAP

    @property
    def frequency_test(self) -> bool:
        """FT: FT/OUT toggles at 512 Hz."""
        return bool(self.register(REG_CONTROL) & FT)

    @property
    def calibration_ppb(self) -> int:
        """How much the calibration speeds the clock up (negative: slows it), in ppb:
        +4068 a step with S = 1, -2034 a step with S = 0."""
        control = self.register(REG_CONTROL)
        steps = control & CAL_MASK
        return steps * 4068 if control & CAL_SIGN else -steps * 2034


class DS1337(InterruptPin, DS1307Family):
    """Maxim DS1337: two alarms, control and status (OSF, A2F, A1F), INTA on `irq`."""

    chip = DS1337_CHIP
    register_map = DS1337_MAP
    int_polarity = Polarity.ACTIVE_LOW
    int_drive = Drive.OPEN_DRAIN

    @property
    def int_asserted(self) -> bool:
        """INTA: A1F with A1IE; with INTCN = 0 also A2F with A2IE."""
        with self._lock:
            control = self.regs[REG_DS1337_CONTROL]
            status = self.regs[REG_DS1337_STATUS]
        a1 = bool(status & A1F and control & A1IE)
        a2 = bool(status & A2F and control & A2IE and not control & INTCN)
        return a1 or a2

    @property
    def alarm1_flag(self) -> bool:
        return bool(self.register(REG_DS1337_STATUS) & A1F)

    @property
    def alarm2_flag(self) -> bool:
        return bool(self.register(REG_DS1337_STATUS) & A2F)

    def _changed(self) -> None:
        self.update_int()
