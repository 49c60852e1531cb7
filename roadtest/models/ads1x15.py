"""TI ADS1015 (12-bit) and ADS1115 (16-bit) four-input delta-sigma ADCs with comparator.

Written from the datasheets, not from a driver:

- ADS1015: TI SBAS473E, "ADS101x Ultra-Small, Low-Power, I2C-Compatible, 3.3-kSPS,
  12-Bit ADCs", May 2009, revised January 2018 (sections 8.3 - 8.6).
- ADS1115: TI SBAS444D, "ADS111x Ultra-Small, Low-Power, I2C-Compatible, 860-SPS,
  16-Bit ADCs", May 2009, revised December 2018 (sections 9.3 - 9.6). Its revision
  letter is from memory; the facts below are the two datasheets' common text unless
  a part is named.

Facts, by section (SBAS473E / SBAS444D):

- Pointer register (8.6.1 / 9.6.1): P[1:0] selects the Conversion (00b), Config (01b),
  Lo_thresh (10b) or Hi_thresh (11b) register; P[7:2] are reserved, written 0. Every
  register is 16 bits, most significant byte first (8.5.3 / 9.5.3).
- Conversion register (8.6.2 / 9.6.2): read-only, 0000h after reset, the last
  conversion in two's complement. The ADS1015's 12-bit result is left-justified,
  D[11:0] in bits 15:4, bits 3:0 read 0.
- Config register (8.6.3 / 9.6.3), reset 8583h:
  OS (15): written 1 in power-down (MODE = 1) starts one conversion; reads 0 while a
  conversion runs, 1 when none does. MUX (14:12): AIN0-AIN1 (000b, default),
  AIN0-AIN3, AIN1-AIN3, AIN2-AIN3, then AIN0..AIN3 against GND (100b..111b).
  PGA (11:9): full-scale range +-6.144, 4.096, 2.048 (010b, default), 1.024, 0.512,
  0.256 V (101b, 110b and 111b). MODE (8): 0 continuous conversion, 1 single-shot or
  power-down (default). DR (7:5): ADS1015 128, 250, 490, 920, 1600 (default), 2400,
  3300, 3300 SPS; ADS1115 8, 16, 32, 64, 128 (default), 250, 475, 860 SPS.
  COMP_MODE (4): 0 traditional, 1 window. COMP_POL (3): 0 active low (default).
  COMP_LAT (2): 0 non-latching (default). COMP_QUE (1:0): assert after 1, 2 or 4
  conversions beyond a threshold; 11b (default) disables the comparator and leaves
  ALERT/RDY in high impedance.
- Lo_thresh and Hi_thresh (8.6.4 / 9.6.4): two's complement, reset 8000h and 7FFFh.
  On the ADS1015 they hold 12 bits in 15:4; bits 3:0 are read-only, 0h in Lo_thresh
  and Fh in Hi_thresh (SBAS473E Figures 22 and 23). Hi_thresh MSB 1 with Lo_thresh
  MSB 0 makes ALERT/RDY a conversion-ready pin.
- Data format (8.3.3 / 9.3.3, Table 3 / Table 3): the code is FSR's fraction of 2^11
  (ADS1015) or 2^15 (ADS1115); inputs beyond +FS read 7FFh / 7FFFh, beyond -FS 800h /
  8000h (clipped). Single-ended inputs measure against GND.
- Modes (8.4 / 9.4): in continuous mode a conversion starts as soon as one ends; a new
  configuration written during a conversion takes effect after that conversion
  completes with the old one (9.4.2). A conversion takes 1/DR.
- Comparator (8.3.7 / 9.3.7): traditional mode asserts ALERT/RDY when a conversion
  exceeds Hi_thresh and deasserts it when one falls below Lo_thresh; window mode
  asserts it while a conversion is above Hi_thresh or below Lo_thresh. COMP_QUE
  counts successive conversions beyond a threshold before asserting. Latching
  (COMP_LAT = 1) keeps the assertion until the Conversion register is read (or an
  SMBus alert response); the pin reasserts on the next conversion beyond a threshold.
  ALERT/RDY is open-drain.

Inputs: `ain0`..`ain3`, volts against GND, set by the test.

Time (docs/models.md, "Time"): under simulated time each conversion ends 1/DR of guest
time after it began, and the Conversion register changes only then: a driver that
reads before its new configuration's first conversion completed gets the previous
result. Without simulated time a conversion completes when it starts. Conversions of
continuous mode are evaluated when the registers are next accessed (all the
conversions that ended meanwhile measured the inputs as they are then), or when the
test calls `convert(times)`: `times` conversions now, each one through the comparator,
on any clock. The comparator sees the conversions of guest time only under
simulated time; tests of ALERT/RDY call `convert()`.

Simplified or not modelled: the data rate's +-10% spread (rates are nominal); the
input range limit of GND - 0.3 V to VDD + 0.3 V (inputs are clipped only at the
full-scale range); noise and offset; the SMBus alert response and general-call reset;
the conversion-ready function of ALERT/RDY in single-shot mode (it pulses per
conversion in continuous mode only); a switch from continuous to single-shot mode
stops at once (the conversion under way is dropped).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from decimal import Decimal
from typing import ClassVar, Final

from roadtest.models.base import Input
from roadtest.models.interrupt import Drive, InterruptPin, Polarity
from roadtest.models.regmap import RO, Field, MappedSMBusModel, Register, RegisterMap
from roadtest.simtime.clock import NS_PER_S

REG_CONVERSION: Final = 0x00
REG_CONFIG: Final = 0x01
REG_LO_THRESH: Final = 0x02
REG_HI_THRESH: Final = 0x03

# Config register fields (SBAS473E Table 6 / SBAS444D Table 8).
OS: Final = Field("OS", 15)
MUX: Final = Field(
    "MUX",
    14,
    12,
    values={
        "AIN0_AIN1": 0,
        "AIN0_AIN3": 1,
        "AIN1_AIN3": 2,
        "AIN2_AIN3": 3,
        "AIN0_GND": 4,
        "AIN1_GND": 5,
        "AIN2_GND": 6,
        "AIN3_GND": 7,
    },
)
PGA: Final = Field(
    "PGA",
    11,
    9,
    values={"FSR_6V144": 0, "FSR_4V096": 1, "FSR_2V048": 2, "FSR_1V024": 3, "FSR_0V512": 4},
)
MODE: Final = Field("MODE", 8, values={"CONTINUOUS": 0, "SINGLE_SHOT": 1})
DR: Final = Field("DR", 7, 5)
COMP_MODE: Final = Field("COMP_MODE", 4, values={"TRADITIONAL": 0, "WINDOW": 1})
COMP_POL: Final = Field("COMP_POL", 3, values={"ACTIVE_LOW": 0, "ACTIVE_HIGH": 1})
COMP_LAT: Final = Field("COMP_LAT", 2, values={"NON_LATCHING": 0, "LATCHING": 1})
COMP_QUE: Final = Field("COMP_QUE", 1, 0, values={"ONE": 0, "TWO": 1, "FOUR": 2, "DISABLE": 3})
CONFIG_FIELDS: Final = (OS, MUX, PGA, MODE, DR, COMP_MODE, COMP_POL, COMP_LAT, COMP_QUE)
CONFIG_RESET: Final = 0x8583

#: MUX codes: (positive input, negative input), None for GND (Table 6 / Table 8).
MUX_INPUTS: Final[tuple[tuple[int, int | None], ...]] = (
    (0, 1),
    (0, 3),
    (1, 3),
    (2, 3),
    (0, None),
    (1, None),
    (2, None),
    (3, None),
)
#: PGA codes: the full-scale range in volts (+-FSR); 101b, 110b and 111b are all 0.256 V.
FULL_SCALE_V: Final = tuple(
    Decimal(v) for v in ("6.144", "4.096", "2.048", "1.024", "0.512", "0.256", "0.256", "0.256")
)
#: DR codes: samples per second.
ADS1015_RATES: Final = (128, 250, 490, 920, 1600, 2400, 3300, 3300)
ADS1115_RATES: Final = (8, 16, 32, 64, 128, 250, 475, 860)
#: COMP_QUE codes 00b, 01b, 10b: successive conversions beyond a threshold.
QUEUE_LENGTHS: Final = (1, 2, 4)
#: The conversion-ready pulse of continuous mode (8 us, SBAS444D Figure "ALERT/RDY"
#: timing; from memory).
READY_PULSE_NS: Final = 8_000


def _regmap(bits: int) -> RegisterMap:
    """The register file: the ADS1015's thresholds keep 12 bits, bits 3:0 read-only."""
    if bits == 16:
        lo = Register("LO_THRESH", REG_LO_THRESH, 0x8000)
        hi = Register("HI_THRESH", REG_HI_THRESH, 0x7FFF)
    else:
        lo = Register(
            "LO_THRESH",
            REG_LO_THRESH,
            0x8000,
            fields=(Field("LO_THRESH", 15, 4), Field("RESERVED", 3, 0, access=RO)),
        )
        hi = Register(
            "HI_THRESH",
            REG_HI_THRESH,
            0x7FFF,
            fields=(Field("HI_THRESH", 15, 4), Field("RESERVED", 3, 0, access=RO)),
        )
    return RegisterMap(
        [
            Register("CONVERSION", REG_CONVERSION, 0x0000, RO),
            Register("CONFIG", REG_CONFIG, CONFIG_RESET, fields=CONFIG_FIELDS),
            lo,
            hi,
        ],
        width=16,
        byteorder="big",
    )


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


class ADS1x15(InterruptPin, MappedSMBusModel):
    """One ADS1x15 after power-on; `ADS1015` and `ADS1115` are the parts."""

    name: ClassVar[str]
    bits: ClassVar[int]  # the result's width: 12 or 16
    rates: ClassVar[Sequence[int]]

    int_polarity = Polarity.ACTIVE_LOW  # COMP_POL's reset value
    int_drive = Drive.OPEN_DRAIN

    ain0 = Input[float](initial=0.0)
    ain1 = Input[float](initial=0.0)
    ain2 = Input[float](initial=0.0)
    ain3 = Input[float](initial=0.0)

    def __init__(self) -> None:
        # The backend's thread (the driver's transfers) and the test's (convert(), inputs).
        self._lock = threading.RLock()
        super().__init__()

    def reset(self) -> None:
        with self._lock:
            super().reset()
            self.alert = False  # the comparator's output, before polarity
            self._beyond = 0  # successive conversions beyond a threshold
            self._ready_pulse = False  # the conversion-ready pulse of continuous mode
            # Continuous mode: the conversions of `_settings` (MUX, PGA, DR) end at
            # _start + k / DR; `_pending` is a conversion with the previous settings
            # that ends at `_start` (a configuration written during a conversion).
            self._settings = self._config_settings(CONFIG_RESET)
            self._start = 0
            self._evaluated = 0  # conversions of this run already evaluated
            self._pending: tuple[int, int, int] | None = None
            self._single_end: int | None = None  # single-shot: when it ends
            self.conversions: list[tuple[int, int]] = []  # (guest ns, raw code), for tests
            if getattr(self, "_int_output", None) is not None:
                self.int_output.polarity = Polarity.ACTIVE_LOW
                self.update_int()

    # What the test reads

    @property
    def config(self) -> int:
        return self.regs[REG_CONFIG]

    @property
    def continuous(self) -> bool:
        return MODE.get(self.config) == 0

    @property
    def comparator_enabled(self) -> bool:
        return COMP_QUE.get(self.config) != 3

    def full_scale(self, pga: int | None = None) -> Decimal:
        """+-FSR in volts of a PGA code (the configured one by default)."""
        return FULL_SCALE_V[PGA.get(self.config) if pga is None else pga]

    def rate(self, dr: int | None = None) -> int:
        """Samples per second of a DR code (the configured one by default)."""
        return self.rates[DR.get(self.config) if dr is None else dr]

    def period_ns(self, dr: int | None = None) -> int:
        """One conversion's time, 1/DR, in ns (rounded up)."""
        return -(-NS_PER_S // self.rate(dr))

    def code(self, mux: int | None = None, pga: int | None = None) -> int:
        """The signed result a conversion of the inputs gives now (Table 3): the
        differential voltage as a fraction of FSR, in 2^(bits-1) steps rounded towards
        minus infinity, clipped to the code range."""
        mux = MUX.get(self.config) if mux is None else mux
        positive, negative = MUX_INPUTS[mux]
        volts = Decimal(repr(self._input(positive)))
        if negative is not None:
            volts -= Decimal(repr(self._input(negative)))
        top = 1 << (self.bits - 1)
        steps = int((volts * top / self.full_scale(pga)).to_integral_value(rounding="ROUND_FLOOR"))
        return max(-top, min(top - 1, steps))

    def register_value(self, code: int) -> int:
        """A signed result as the Conversion register holds it (left-justified on ADS1015)."""
        return (code << (16 - self.bits)) & 0xFFFF

    def _input(self, index: int) -> float:
        return float((self.ain0, self.ain1, self.ain2, self.ain3)[index])

    # Conversions

    def convert(self, times: int = 1) -> None:
        """`times` conversions now, of the current configuration and inputs (a continuous
        run's next ones, or single shots): the Conversion register, then the comparator."""
        with self._lock:
            config = self.config
            for _ in range(times):
                self._complete(MUX.get(config), PGA.get(config))
            self.update_int()

    def _complete(self, mux: int, pga: int) -> None:
        code = self.code(mux, pga)
        self.regs[REG_CONVERSION] = self.register_value(code)
        self.conversions.append((self.clock.now(), code))
        self._compare(code)
        if self._ready_mode() and self.continuous:
            self._pulse()

    def _ready_mode(self) -> bool:
        """Hi_thresh MSB 1 and Lo_thresh MSB 0: ALERT/RDY is the conversion-ready pin."""
        return bool(self.regs[REG_HI_THRESH] & 0x8000) and not self.regs[REG_LO_THRESH] & 0x8000

    def _pulse(self) -> None:
        self._ready_pulse = True
        self.update_int()

        def end() -> None:
            with self._lock:
                self._ready_pulse = False
                self.update_int()

        self.clock.after(READY_PULSE_NS, end)

    def _compare(self, code: int) -> None:
        que = COMP_QUE.get(self.config)
        if que == 3 or self._ready_mode():
            self._beyond = 0
            return
        shift = 16 - self.bits
        hi = _signed(self.regs[REG_HI_THRESH] >> shift, self.bits)
        lo = _signed(self.regs[REG_LO_THRESH] >> shift, self.bits)
        latching = COMP_LAT.get(self.config) == 1
        window = COMP_MODE.get(self.config) == 1
        beyond = code > hi or code < lo if window else code > hi
        self._beyond = self._beyond + 1 if beyond else 0
        if self._beyond >= QUEUE_LENGTHS[que]:
            self.alert = True
        elif not latching:
            if window:
                self.alert = False if not beyond else self.alert
            elif code < lo:
                self.alert = False  # traditional mode: deasserts below Lo_thresh

    def _catch_up(self) -> None:
        """Evaluate the conversions that ended since the last access (simulated time)."""
        now = self.clock.now()
        if self._single_end is not None and now >= self._single_end:
            self._single_end = None
            self.regs[REG_CONFIG] |= OS.mask  # idle again
            config = self.config
            self._complete(MUX.get(config), PGA.get(config))
        if not self.continuous:
            return
        if self._pending is not None and now >= self._start:
            mux, pga, _dr = self._pending
            self._pending = None
            self._complete(mux, pga)
        if now < self._start:
            return
        mux, pga, dr = self._settings
        done = (now - self._start) // self.period_ns(dr)
        new = done - self._evaluated
        if new > 0:
            # The inputs are what they are now; more than four alike add nothing.
            for _ in range(min(new, len(QUEUE_LENGTHS) + 1)):
                self._complete(mux, pga)
            self._evaluated = done

    def _restart(self, old_config: int) -> None:
        """A configuration write: a continuous run starts, stops or changes settings."""
        now = self.clock.now()
        was_continuous = MODE.get(old_config) == 0
        settings = self._config_settings(self.config)
        if not self.continuous:
            self._pending = None
            return
        if not self.clock.simulated:
            self._settings, self._start, self._evaluated = settings, now, 0
            self._pending = None
            config = self.config
            self._complete(MUX.get(config), PGA.get(config))
            return
        if was_continuous and settings == self._settings:
            return
        if was_continuous and now >= self._start:
            # The conversion under way ends with the old settings (SBAS444D 9.4.2).
            old = self._settings
            period = self.period_ns(old[2])
            end = self._start + ((now - self._start) // period + 1) * period
            self._pending = old
            self._settings, self._start, self._evaluated = settings, end, 0
        elif was_continuous:
            # A pending conversion already ends at _start: the new settings follow it.
            self._settings = settings
        else:
            self._pending = None
            self._settings, self._start, self._evaluated = settings, now, 0

    @staticmethod
    def _config_settings(config: int) -> tuple[int, int, int]:
        return MUX.get(config), PGA.get(config), DR.get(config)

    # The ALERT/RDY pin

    @property
    def int_asserted(self) -> bool:
        if COMP_QUE.get(self.config) == 3:
            # Disabled: high impedance. The open-drain output lets go, which the
            # interrupt pin calls deasserted when active low and asserted when active high.
            return COMP_POL.get(self.config) == 1
        if self._ready_mode():
            return self._ready_pulse
        return self.alert

    # Registers

    def reg_read(self, addr: int) -> int:
        with self._lock:
            if self.clock.simulated:
                self._catch_up()
            elif addr == REG_CONVERSION and self.continuous:
                # Conversions complete at once: the register holds the inputs as they are.
                config = self.config
                self.regs[REG_CONVERSION] = self.register_value(
                    self.code(MUX.get(config), PGA.get(config))
                )
            value = super().reg_read(addr)
            self.update_int()
            return value

    def on_read(self, reg: Register) -> None:
        if reg.address == REG_CONVERSION and COMP_LAT.get(self.config) == 1:
            self.alert = False  # the latch clears when the conversion data are read
            self._beyond = 0

    def reg_write(self, addr: int, val: int) -> None:
        with self._lock:
            if self.clock.simulated:
                self._catch_up()
            super().reg_write(addr, val)
            self.update_int()

    def on_write(self, reg: Register, old: int, new: int) -> None:
        if reg.address != REG_CONFIG:
            return
        self.int_output.polarity = (
            Polarity.ACTIVE_HIGH if COMP_POL.get(new) else Polarity.ACTIVE_LOW
        )
        if COMP_QUE.get(old) != COMP_QUE.get(new):
            self._beyond = 0
        if COMP_QUE.get(new) == 3:
            self.alert = False
        single_shot = MODE.get(new) == 1
        if not single_shot:
            self._single_end = None
        # OS written 1 in power-down starts a conversion, and has no effect while one runs.
        start = single_shot and bool(OS.get(new)) and self._single_end is None
        # OS reads the conversion state, not what was written: 0 while converting.
        self.regs[REG_CONFIG] = OS.set(new, 1 if single_shot else 0)
        if start:
            if self.clock.simulated:
                self._single_end = self.clock.now() + self.period_ns()
            else:
                self._complete(MUX.get(new), PGA.get(new))
        if self._single_end is not None:
            self.regs[REG_CONFIG] = OS.set(self.regs[REG_CONFIG], 0)
        if not single_shot or MODE.get(old) == 0:
            self._restart(old)


class ADS1015(ADS1x15):
    """TI ADS1015: 12-bit results, 128..3300 SPS (SBAS473E)."""

    name = "ADS1015"
    bits = 12
    rates = ADS1015_RATES
    register_map = _regmap(12)


class ADS1115(ADS1x15):
    """TI ADS1115: 16-bit results, 8..860 SPS (SBAS444D)."""

    name = "ADS1115"
    bits = 16
    rates = ADS1115_RATES
    register_map = _regmap(16)
