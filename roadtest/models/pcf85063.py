"""NXP PCF85063A and PCF85063TP real-time clocks (rtc-pcf85063), from their datasheets.

Sources: "PCF85063A, Tiny Real-Time Clock/calendar with alarm function and I2C-bus",
product data sheet Rev. 7, 30 March 2018 (the revision the driver names; the feature
list and "the register address is incremented automatically after each written or read
data byte" are also in Rev. 6, 18 November 2015), and "PCF85063TP, Tiny Real-Time
Clock/calendar", Rev. 4, 6 May 2015 (section 8.2.3 and Tables 12 and 13 for the offset
register, checked against a copy of that page). Where a fact below is from memory of
those documents rather than from a page at hand, it says "(from memory)".

Registers, 8 bits each (PCF85063A: 00h-11h; PCF85063TP: 00h-0Ah, no alarm or timer):

- 00h Control_1: EXT_TEST (7), STOP (5), SR (4), CIE (2), 12_24 (1), CAP_SEL (0); bits 6
  and 3 unused, 0. The software reset command is the byte 58h (0101 1000: bits 6, 4 and
  3) written to Control_1; it puts every register back to its reset value (from memory:
  the time registers too, with OS set). CAP_SEL selects the oscillator's internal load
  capacitance: 0 = 7 pF, 1 = 12.5 pF. 12_24: 0 = 24-hour mode, 1 = 12-hour mode (AMPM in
  bit 5 of Hours and Hour_alarm, hours 01-12). STOP freezes the clock.
- 01h Control_2: AIE (7), AF (6), MI (5), HMI (4), TF (3), COF[2:0] (2..0). AF and TF
  are cleared by writing 0; writing 1 leaves them unchanged. COF is the CLKOUT frequency:
  000 32768 Hz (reset), 001 16384, 010 8192, 011 4096, 100 2048, 101 1024, 110 1 Hz,
  111 CLKOUT LOW (off). On the PCF85063TP bits 7 and 6 are unused (from memory).
- 02h Offset: MODE (7) and OFFSET[6:0], two's complement, +63 to -64. MODE = 0 (normal
  mode, a correction every two hours): 4.34 ppm a step; MODE = 1 (course mode, every 4
  minutes; "fast mode" in the TP's Table 13): 4.069 ppm a step (TP Rev. 4 Table 13: +63 =
  +273.420 / +256.347 ppm, -64 = -277.760 / -260.416 ppm). The model stores it and
  computes `offset_ppm()`; the clock's rate is not modelled.
- 03h RAM_byte: a free byte of RAM, reset 00h.
- 04h Seconds: OS (7), the oscillator-stop flag (set at power-on and whenever the
  oscillator stopped; "clock integrity is not guaranteed"; cleared by software), seconds
  00-59 in BCD.
- 05h Minutes 00-59, 06h Hours 00-23 (or AMPM and 01-12), 07h Days 01-31, 08h Weekdays
  0-6, 09h Months 01-12, 0Ah Years 00-99, all BCD except Weekdays. Reset: 2000-01-01
  (Days 01, Months 01, Years 00), Weekdays 6 (a Saturday, as 2000-01-01 was), 00:00:00,
  OS set (from memory of the reset-value table).
- 0Bh-0Fh Second_alarm, Minute_alarm, Hour_alarm, Day_alarm, Weekday_alarm: AEN_x (7),
  1 = that comparison disabled (reset: all disabled, 80h); "when all enabled comparisons
  first match, the alarm flag AF is set".
- 10h Timer_value (the countdown value n) and 11h Timer_mode: TCF[1:0] (4..3: 4096 Hz,
  64 Hz, 1 Hz, 1/60 Hz), TE (2), TIE (1), TI_TP (0); reset 18h (TCF = 1/60 Hz). At the
  end of each countdown TF is set and n reloads. TF is also set at every minute (MI) or
  half minute (HMI).

Bits marked unused read 0 and ignore writes (from memory: "-" in the register overview).
The register address counts on after each byte and wraps from the last register (11h,
or 0Ah on the PCF85063TP) to 00h (from memory); it is kept from one transfer to the
next, so a read without a register address goes on where the last access stopped.

INT (PCF85063A only; the PCF85063TP has no interrupt output) is active low, open drain,
asserted while AF and AIE, or TF and one of TIE, MI, HMI are set (TI_TP = 0: INT follows
the flag); `irq` is the line it drives.

Changing 12_24 does not recode Hours (from memory: software writes the hours again in
the new mode); the model reads them in the mode 12_24 gives.

Not modelled (a ModelError when the driver asks for it): EXT_TEST, correction interrupts
(CIE), pulsed interrupts (TI_TP), a software reset other than exactly 58h, register
addresses past the last, values that are not BCD or out of their range. Time moves only
when the test calls `advance(seconds)`, in whole seconds (the model's clock does not
drive it: a test says when the alarm's second comes).
"""

from __future__ import annotations

import datetime
import threading
from typing import Final

from roadtest.models.base import ModelError
from roadtest.models.bcd_clock import AlarmComparison, bcd, from_bcd
from roadtest.models.bcd_clock import weekday_sunday0 as weekday
from roadtest.models.interrupt import Drive, InterruptPin, Polarity
from roadtest.models.regmap import Field, MappedSMBusModel, Register, RegisterMap

REG_CONTROL_1: Final = 0x00
REG_CONTROL_2: Final = 0x01
REG_OFFSET: Final = 0x02
REG_RAM_BYTE: Final = 0x03
REG_SECONDS: Final = 0x04
REG_MINUTES: Final = 0x05
REG_HOURS: Final = 0x06
REG_DAYS: Final = 0x07
REG_WEEKDAYS: Final = 0x08
REG_MONTHS: Final = 0x09
REG_YEARS: Final = 0x0A
REG_SECOND_ALARM: Final = 0x0B
REG_MINUTE_ALARM: Final = 0x0C
REG_HOUR_ALARM: Final = 0x0D
REG_DAY_ALARM: Final = 0x0E
REG_WEEKDAY_ALARM: Final = 0x0F
REG_TIMER_VALUE: Final = 0x10
REG_TIMER_MODE: Final = 0x11

CTRL1_EXT_TEST: Final = 1 << 7
CTRL1_STOP: Final = 1 << 5
CTRL1_SR: Final = 1 << 4
CTRL1_CIE: Final = 1 << 2
CTRL1_12_24: Final = 1 << 1
CTRL1_CAP_SEL: Final = 1 << 0
CTRL1_ZERO: Final = 0b0100_1000  # bits 6 and 3 are 0 ...
SOFTWARE_RESET: Final = 0x58  # ... except in the software reset command, 0101 1000
CTRL2_AIE: Final = 1 << 7
CTRL2_AF: Final = 1 << 6
CTRL2_MI: Final = 1 << 5
CTRL2_HMI: Final = 1 << 4
CTRL2_TF: Final = 1 << 3
CTRL2_COF: Final = 0b111
FLAGS: Final = CTRL2_AF | CTRL2_TF
OS: Final = 1 << 7
AEN: Final = 1 << 7
AMPM: Final = 1 << 5  # in Hours and Hour_alarm, 12-hour mode: 1 = PM
OFFSET_MODE: Final = 1 << 7
TIMER_TE: Final = 1 << 2
TIMER_TIE: Final = 1 << 1
TIMER_TI_TP: Final = 1 << 0

# COF -> CLKOUT in Hz; 111: CLKOUT LOW, no clock.
CLKOUT_HZ: Final = (32768, 16384, 8192, 4096, 2048, 1024, 1, 0)
# Offset step, ppm per LSB: MODE 0 (normal), MODE 1 (course).
OFFSET_PPM: Final = (4.34, 4.069)
# TCF -> timer source ticks per second; 3 is 1/60 Hz (counted in minutes).
TIMER_HZ: Final = {0: 4096, 1: 64, 2: 1}


def _unused(msb: int, lsb: int | None = None) -> Field:
    return Field(f"UNUSED_{msb}", msb, msb if lsb is None else lsb, reserved=True)


_CONTROL_1 = Register(
    "CONTROL_1",
    REG_CONTROL_1,
    0x00,
    fields=(
        Field("EXT_TEST", 7),
        _unused(6),
        Field("STOP", 5),
        Field("SR", 4),
        _unused(3),
        Field("CIE", 2),
        Field("MODE_12_24", 1),
        Field("CAP_SEL", 0, values={"7PF": 0, "12_5PF": 1}),
    ),
)
_COF = Field(
    "COF",
    2,
    0,
    values={"32768HZ": 0, "16384HZ": 1, "8192HZ": 2, "4096HZ": 3, "2048HZ": 4, "1024HZ": 5,
            "1HZ": 6, "LOW": 7},
)  # fmt: skip
_TIME = [
    Register(
        "OFFSET",
        REG_OFFSET,
        0x00,
        fields=(Field("MODE", 7, values={"NORMAL": 0, "COURSE": 1}), Field("OFFSET", 6, 0)),
    ),
    Register("RAM_BYTE", REG_RAM_BYTE, 0x00),
    Register("SECONDS", REG_SECONDS, OS, fields=(Field("OS", 7), Field("SECONDS", 6, 0))),
    Register("MINUTES", REG_MINUTES, 0x00, fields=(_unused(7), Field("MINUTES", 6, 0))),
    Register("HOURS", REG_HOURS, 0x00, fields=(_unused(7, 6), Field("HOURS", 5, 0))),
    Register("DAYS", REG_DAYS, 0x01, fields=(_unused(7, 6), Field("DAYS", 5, 0))),
    Register("WEEKDAYS", REG_WEEKDAYS, 0x06, fields=(_unused(7, 3), Field("WEEKDAYS", 2, 0))),
    Register("MONTHS", REG_MONTHS, 0x01, fields=(_unused(7, 5), Field("MONTHS", 4, 0))),
    Register("YEARS", REG_YEARS, 0x00),
]

REGISTERS_A: Final = RegisterMap(
    [
        _CONTROL_1,
        Register(
            "CONTROL_2",
            REG_CONTROL_2,
            0x00,
            fields=(
                Field("AIE", 7),
                Field("AF", 6),
                Field("MI", 5),
                Field("HMI", 4),
                Field("TF", 3),
                _COF,
            ),
        ),
        *_TIME,
        Register(
            "SECOND_ALARM",
            REG_SECOND_ALARM,
            AEN,
            fields=(Field("AEN_S", 7), Field("SECOND_ALARM", 6, 0)),
        ),
        Register(
            "MINUTE_ALARM",
            REG_MINUTE_ALARM,
            AEN,
            fields=(Field("AEN_M", 7), Field("MINUTE_ALARM", 6, 0)),
        ),
        Register(
            "HOUR_ALARM",
            REG_HOUR_ALARM,
            AEN,
            fields=(Field("AEN_H", 7), _unused(6), Field("HOUR_ALARM", 5, 0)),
        ),
        Register(
            "DAY_ALARM",
            REG_DAY_ALARM,
            AEN,
            fields=(Field("AEN_D", 7), _unused(6), Field("DAY_ALARM", 5, 0)),
        ),
        Register(
            "WEEKDAY_ALARM",
            REG_WEEKDAY_ALARM,
            AEN,
            fields=(Field("AEN_W", 7), _unused(6, 3), Field("WEEKDAY_ALARM", 2, 0)),
        ),
        Register("TIMER_VALUE", REG_TIMER_VALUE, 0x00),
        Register(
            "TIMER_MODE",
            REG_TIMER_MODE,
            0x18,
            fields=(
                _unused(7, 5),
                Field("TCF", 4, 3, values={"4096HZ": 0, "64HZ": 1, "1HZ": 2, "1_60HZ": 3}),
                Field("TE", 2),
                Field("TIE", 1),
                Field("TI_TP", 0),
            ),
        ),
    ]
)
REGISTERS_TP: Final = RegisterMap(
    [
        _CONTROL_1,
        Register(
            "CONTROL_2",
            REG_CONTROL_2,
            0x00,
            fields=(_unused(7, 6), Field("MI", 5), Field("HMI", 4), Field("TF", 3), _COF),
        ),
        *_TIME,
    ]
)

# BCD fields: register -> (mask, lowest, highest); the hours as in 24-hour mode.
BCD_FIELDS: Final = {
    REG_SECONDS: (0x7F, 0, 59),
    REG_MINUTES: (0x7F, 0, 59),
    REG_HOURS: (0x3F, 0, 23),
    REG_DAYS: (0x3F, 1, 31),
    REG_WEEKDAYS: (0x07, 0, 6),
    REG_MONTHS: (0x1F, 1, 12),
    REG_YEARS: (0xFF, 0, 99),
    REG_SECOND_ALARM: (0x7F, 0, 59),
    REG_MINUTE_ALARM: (0x7F, 0, 59),
    REG_HOUR_ALARM: (0x3F, 0, 23),
    REG_DAY_ALARM: (0x3F, 1, 31),
    REG_WEEKDAY_ALARM: (0x07, 0, 6),
}
ALARMS: Final = (
    (REG_SECOND_ALARM, REG_SECONDS),
    (REG_MINUTE_ALARM, REG_MINUTES),
    (REG_HOUR_ALARM, REG_HOURS),
    (REG_DAY_ALARM, REG_DAYS),
    (REG_WEEKDAY_ALARM, REG_WEEKDAYS),
)
_HOUR_REGS: Final = (REG_HOURS, REG_HOUR_ALARM)
_CENTURY_END: Final = datetime.datetime(2100, 1, 1)


def offset_register(mode: int, steps: int) -> int:
    """The Offset register for `steps` (-64..63) in `mode` (0 normal, 1 course)."""
    if not -64 <= steps <= 63 or mode not in (0, 1):
        raise ValueError(f"offset {steps} in mode {mode} does not fit the register")
    return (OFFSET_MODE if mode else 0) | (steps & 0x7F)


def hour_register(hour: int, twelve_hour: bool) -> int:
    """Hours (0-23) as the Hours register holds them: BCD 00-23, or AMPM and BCD 01-12."""
    if not twelve_hour:
        return bcd(hour)
    return (AMPM if hour >= 12 else 0) | bcd((hour + 11) % 12 + 1)


class PCF85063(InterruptPin, MappedSMBusModel):
    """The registers and clock both chips share; `PCF85063A` and `PCF85063TP` are the chips.

    After power-on: OS set (the time is not valid), 2000-01-01 00:00:00, alarms disabled,
    CLKOUT at 32768 Hz. `set_time(...)` puts a valid time in the clock, `advance(seconds)`
    runs it.
    """

    register_map = REGISTERS_A
    int_polarity = Polarity.ACTIVE_LOW
    int_drive = Drive.OPEN_DRAIN
    has_alarm = True
    chip = "PCF85063A"

    def __init__(self) -> None:
        # The backend thread (the driver's transfers) and the test thread (advance()).
        self._lock = threading.RLock()
        self._timer_count = 0
        self._timer_minutes = 0  # seconds towards the next 1/60 Hz timer tick
        self._alarm = AlarmComparison(ALARMS if self.has_alarm else (), self._alarm_agrees)
        self.reads = 0  # read messages served: lets a test wait for the kernel's own reads
        self.time_reads = 0  # of them, those from Seconds on (reading the time)
        self.software_resets = 0
        super().__init__()
        self._last = max(self.register_map.names())

    # Power-on and the software reset

    def reset_registers(self) -> None:
        with self._lock:
            super().reset_registers()
            self._timer_count = 0
            self._timer_minutes = 0
            self._alarm.matching = False

    # INT

    @property
    def int_asserted(self) -> bool:
        """INT is active (low): AF with AIE, or TF with TIE, MI or HMI (PCF85063A only)."""
        if not self.has_alarm:
            return False
        with self._lock:
            ctrl2 = self.regs[REG_CONTROL_2]
            timer_ie = self.regs[REG_TIMER_MODE] & TIMER_TIE
        if ctrl2 & CTRL2_AF and ctrl2 & CTRL2_AIE:
            return True
        return bool(ctrl2 & CTRL2_TF and (timer_ie or ctrl2 & (CTRL2_MI | CTRL2_HMI)))

    # State for tests

    def register(self, addr: int) -> int:
        """A register's value, without reading it over the bus."""
        with self._lock:
            return self._value(addr)

    @property
    def oscillator_stopped(self) -> bool:
        """OS: the clock's integrity is not guaranteed (set at power-on)."""
        return bool(self.register(REG_SECONDS) & OS)

    @oscillator_stopped.setter
    def oscillator_stopped(self, value: bool) -> None:
        """The oscillator stopped (True: as after a power loss), or software cleared OS."""
        with self._lock:
            self.regs[REG_SECONDS] = self.regs[REG_SECONDS] & ~OS | (OS if value else 0)

    @property
    def alarm_flag(self) -> bool:
        return bool(self.register(REG_CONTROL_2) & CTRL2_AF)

    @property
    def timer_flag(self) -> bool:
        return bool(self.register(REG_CONTROL_2) & CTRL2_TF)

    @property
    def weekday(self) -> int:
        return self.register(REG_WEEKDAYS)

    @property
    def ram(self) -> int:
        return self.register(REG_RAM_BYTE)

    @property
    def twelve_hour(self) -> bool:
        return bool(self.register(REG_CONTROL_1) & CTRL1_12_24)

    @property
    def load_capacitance_pf(self) -> float:
        """The oscillator's internal load capacitance CAP_SEL selects: 7 or 12.5 pF."""
        return 12.5 if self.register(REG_CONTROL_1) & CTRL1_CAP_SEL else 7.0

    @property
    def clkout_hz(self) -> int:
        """The CLKOUT frequency COF selects, 0 for COF = 111 (CLKOUT LOW)."""
        return CLKOUT_HZ[self.register(REG_CONTROL_2) & CTRL2_COF]

    def offset_ppm(self) -> float:
        """The Offset register's correction in ppm: OFFSET (two's complement) times 4.34
        (MODE 0) or 4.069 (MODE 1)."""
        value = self.register(REG_OFFSET)
        steps = (value & 0x3F) - (value & 0x40)
        return steps * OFFSET_PPM[bool(value & OFFSET_MODE)]

    @property
    def time(self) -> datetime.datetime:
        """The clock's seconds to years as a datetime (years 00-99 as 2000-2099)."""
        with self._lock:
            return self._datetime()

    @time.setter
    def time(self, when: datetime.datetime) -> None:
        self.set_time(when)

    def set_time(
        self,
        when: datetime.datetime,
        *,
        oscillator_stopped: bool = False,
        weekday_number: int | None = None,
        twelve_hour: bool | None = None,
    ) -> None:
        """Put `when` (2000-2099) in the clock, as if set long ago and kept running.

        OS is cleared unless `oscillator_stopped`; the weekday is `when`'s unless
        `weekday_number` is given (the chip does not check it against the date);
        `twelve_hour` sets 12_24 (None: leave it) and the hours are coded for the mode.
        """
        if not 2000 <= when.year <= 2099:
            raise ValueError(f"{when} is outside the years 2000-2099 the registers hold")
        with self._lock:
            regs = self.regs
            if twelve_hour is not None:
                ctrl1 = regs[REG_CONTROL_1] & ~CTRL1_12_24
                regs[REG_CONTROL_1] = ctrl1 | (CTRL1_12_24 if twelve_hour else 0)
            regs[REG_SECONDS] = bcd(when.second) | (OS if oscillator_stopped else 0)
            regs[REG_MINUTES] = bcd(when.minute)
            regs[REG_HOURS] = hour_register(when.hour, bool(regs[REG_CONTROL_1] & CTRL1_12_24))
            regs[REG_DAYS] = bcd(when.day)
            regs[REG_WEEKDAYS] = weekday(when) if weekday_number is None else weekday_number
            regs[REG_MONTHS] = bcd(when.month)
            regs[REG_YEARS] = bcd(when.year - 2000)
            self._alarm.settle(regs)

    def advance(self, seconds: int) -> None:
        """Let `seconds` pass: the clock counts (unless STOP), the alarm, the minute and
        half-minute interrupts and the countdown timer may set AF and TF.

        With the second alarm enabled the alarm is compared at every second, else at
        every minute: a long advance costs a loop iteration per second or per minute.
        """
        if seconds < 0:
            raise ValueError("the clock does not run backwards")
        with self._lock:
            if self.regs[REG_CONTROL_1] & CTRL1_STOP:
                return  # the divider chain is held: neither the clock nor the timer runs
            start = self._datetime()  # a ModelError before anything counts if not valid
            self._field(REG_WEEKDAYS)
            self._run_timer(seconds)
            # The minute and half-minute interrupts: TF at each (half) minute passed.
            ctrl2 = self.regs[REG_CONTROL_2]
            elapsed = start.second + seconds
            if ctrl2 & CTRL2_MI and elapsed >= 60:
                self.regs[REG_CONTROL_2] |= CTRL2_TF
            if ctrl2 & CTRL2_HMI and elapsed >= 30 * (start.second // 30 + 1):
                self.regs[REG_CONTROL_2] |= CTRL2_TF
            left = seconds
            if self._alarm.enabled(self.regs):
                per_second = not self.regs[REG_SECOND_ALARM] & AEN
                step = 1 if per_second else 60 - start.second
                while step <= left:
                    self._count(step)
                    left -= step
                    step = 1 if per_second else 60
                    if self._alarm.counted(self.regs):
                        self.regs[REG_CONTROL_2] |= CTRL2_AF
            self._count(left)
            self._alarm.settle(self.regs)
        self.update_int()

    # Clock internals (lock held)

    def _value(self, addr: int) -> int:
        if addr not in self.regs:
            raise ModelError(f"{self.chip}: register {addr:#04x} does not exist")
        if addr == REG_TIMER_VALUE:
            return self._timer_count
        return self.regs[addr]

    def _decode(self, addr: int, raw: int) -> int:
        """The value of a BCD register `addr` holding `raw`: -1 when not BCD in range."""
        mask, low, high = BCD_FIELDS[addr]
        if addr in _HOUR_REGS and self.regs[REG_CONTROL_1] & CTRL1_12_24:
            try:
                hour = from_bcd(raw & 0x1F)
            except ValueError:
                return -1
            if not 1 <= hour <= 12:
                return -1
            return hour % 12 + (12 if raw & AMPM else 0)
        try:
            value = from_bcd(raw & mask)
        except ValueError:
            return -1
        return value if low <= value <= high else -1

    def _field(self, addr: int) -> int:
        raw = self.regs[addr]
        value = self._decode(addr, raw)
        if value < 0:
            raise ModelError(
                f"{self.chip}: register {addr:#04x} holds {raw:#04x}, not a valid value"
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
            raise ModelError(f"{self.chip}: the clock does not hold a valid date: {err}") from None

    def _count(self, seconds: int) -> None:
        """Count the time registers on by `seconds`, with the chip's carries; 2099 rolls
        over to 2000 (the chip has no century: its year 00 is a leap year, as 2000 was)."""
        regs = self.regs
        now = self._datetime()
        left = datetime.timedelta(seconds=seconds)
        days = 0
        while left >= _CENTURY_END - now:
            left -= _CENTURY_END - now
            days += (_CENTURY_END.date() - now.date()).days
            now = datetime.datetime(2000, 1, 1)
        then = now + left
        days += (then.date() - now.date()).days
        regs[REG_WEEKDAYS] = (regs[REG_WEEKDAYS] + days) % 7
        regs[REG_SECONDS] = regs[REG_SECONDS] & OS | bcd(then.second)
        regs[REG_MINUTES] = bcd(then.minute)
        regs[REG_HOURS] = hour_register(then.hour, bool(regs[REG_CONTROL_1] & CTRL1_12_24))
        regs[REG_DAYS] = bcd(then.day)
        regs[REG_MONTHS] = bcd(then.month)
        regs[REG_YEARS] = bcd(then.year - 2000)

    def _alarm_agrees(self, alarm: int, time: int) -> bool:
        regs = self.regs
        return self._decode(alarm, regs[alarm]) == self._decode(time, regs[time]) >= 0

    def _run_timer(self, seconds: int) -> None:
        if not self.has_alarm:
            return
        mode = self.regs[REG_TIMER_MODE]
        reload = self.regs[REG_TIMER_VALUE]
        if not mode & TIMER_TE or reload == 0:
            return  # disabled, or n = 0: the timer does not count (from memory)
        source = mode >> 3 & 0b11
        if source in TIMER_HZ:
            ticks = seconds * TIMER_HZ[source]
        else:
            ticks, self._timer_minutes = divmod(self._timer_minutes + seconds, 60)
        if ticks < self._timer_count:
            self._timer_count -= ticks
            return
        # Counted down to the end at least once: TF, and the timer reloads n.
        self.regs[REG_CONTROL_2] |= CTRL2_TF
        self._timer_count = reload - (ticks - self._timer_count) % reload

    # Registers over the bus

    def reg_read(self, addr: int) -> int:
        with self._lock:
            value = self._value(addr)
        self.update_int()
        return value

    def reg_write(self, addr: int, val: int) -> None:
        with self._lock:
            self._write(addr, val)
        self.update_int()

    def _write(self, addr: int, val: int) -> None:
        reg = self.register_map.get(addr)
        if reg is None:
            raise ModelError(f"{self.chip}: write of {val:#04x} to register {addr:#04x}: none")
        regs = self.regs
        if addr == REG_CONTROL_1:
            if val == SOFTWARE_RESET:
                self.software_resets += 1
                self.reset_registers()
                return
            if val & (CTRL1_ZERO | CTRL1_SR):
                raise ModelError(
                    f"{self.chip}: {val:#04x} written to Control_1: bits 6, 4 (SR) and 3 are "
                    "only set by the software reset command 58h"
                )
            if val & CTRL1_EXT_TEST:
                raise ModelError(f"{self.chip}: the EXT_TEST test mode is not modelled")
            if val & CTRL1_CIE:
                raise ModelError(f"{self.chip}: correction interrupts (CIE) are not modelled")
        if addr in BCD_FIELDS and not (addr in dict(ALARMS) and val & AEN):
            if self._decode(addr, val) < 0:
                raise ModelError(
                    f"{self.chip}: {val:#04x} written to {reg.name} is not a BCD value in range"
                )
        if addr == REG_TIMER_MODE and val & TIMER_TI_TP:
            raise ModelError(f"{self.chip}: pulsed interrupts (TI_TP) are not modelled")
        new = reg.written(regs[addr], val)
        if addr == REG_CONTROL_2:
            # AF and TF: writing 0 clears, writing 1 leaves the flag as it is.
            new = new & ~FLAGS | regs[addr] & val & FLAGS
        elif addr == REG_TIMER_VALUE:
            self._timer_count = new
        regs[addr] = new
        if addr in BCD_FIELDS:
            # The alarm fires when the clock counts into a match, not on a write.
            self._alarm.settle(regs)

    # I2C: the address counts on after each byte, wraps after the last register, and is
    # kept across transfers.

    def write(self, data: bytes) -> None:
        if not data:
            return
        if data[0] > self._last:
            raise ModelError(
                f"{self.chip}: register address {data[0]:#04x} does not exist "
                f"(00h-{self._last:02X}h)"
            )
        with self._lock:
            self.reg_addr = data[0]
            for val in data[1:]:
                with self._writes_lock:
                    self._writes.append((self.reg_addr, val))
                self.reg_write(self.reg_addr, val)
                self.reg_addr = 0 if self.reg_addr >= self._last else self.reg_addr + 1

    def read(self, length: int) -> bytes:
        # One read is one access: advance() cannot count between its bytes (the chip
        # freezes its time registers while they are read).
        with self._lock:
            self.reads += 1
            self.time_reads += self.reg_addr == REG_SECONDS
            out = bytearray()
            for _ in range(length):
                out.append(self.reg_read(self.reg_addr))
                self.reg_addr = 0 if self.reg_addr >= self._last else self.reg_addr + 1
            return bytes(out)


class PCF85063A(PCF85063):
    """NXP PCF85063A (and Micro Crystal RV-8263-C7, the same register file): 00h-11h."""


class PCF85063TP(PCF85063):
    """NXP PCF85063TP: registers 00h-0Ah only, no alarm, no timer, no interrupt output."""

    register_map = REGISTERS_TP
    has_alarm = False
    chip = "PCF85063TP"
