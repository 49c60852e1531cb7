"""ams AS6200 digital temperature sensor: four 16-bit registers, MSB first, and an ALERT pin.

From the AS6200 datasheet (ams, "Register Description"):

- The pointer's two low bits select TVAL (00, read-only), CONFIG (01), TLOW (10)
  or THIGH (11).
- TVAL, TLOW and THIGH are 12-bit two's complement temperatures in bits 15:4,
  0.0625 degC per step (25 degC is 0x1900). TLOW resets to 75 degC, THIGH to
  80 degC.
- CONFIG resets to 0x40A0: SS (15), CF (12:11, consecutive faults 1, 2, 4, 6),
  POL (10, alert polarity: 0 active low), IM (9, 0 comparator mode), SM (8,
  sleep mode), CR (7:6, conversion rate 0.25, 1, 4, 8 Hz), AL (5, read-only:
  the alert's level as the POL bit makes it, so it reads 1 with no alert at reset).
- In comparator mode the alert becomes active after CF consecutive conversions
  at or above THIGH, and inactive after CF consecutive ones below TLOW.
- ALERT is an open-drain output whose polarity POL sets.

A test sets `temperature` (degC) and calls `convert()`: one conversion of the
continuous mode, which latches TVAL and runs the alert's comparator.

Simplified: conversions happen only when the test calls `convert()`, whatever
CR says. Interrupt mode (IM) and sleep mode (SM, single shots) are not
modelled: a configuration that sets them is a model error. SS is stored and
has no effect (it only starts a conversion in sleep mode). A one-byte write to
a register writes its high byte (the first one shifted in), keeping the low
byte: the 6.12 lm75 driver restored CONFIG at unbind with an SMBus byte write
(kernel-patches/hwmon/0001 fixes it; tests/drivers/hwmon/test_as6200.py shows it).
"""

from __future__ import annotations

import threading
from typing import Final

from roadtest.models.base import Input, ModelError, SMBusModel
from roadtest.models.interrupt import Drive, InterruptPin, Polarity

REG_TVAL: Final = 0x00
REG_CONFIG: Final = 0x01
REG_TLOW: Final = 0x02
REG_THIGH: Final = 0x03

CONFIG_SS: Final = 1 << 15
CONFIG_CF_SHIFT: Final = 11
CONFIG_CF_MASK: Final = 0x3 << CONFIG_CF_SHIFT
CONFIG_POL: Final = 1 << 10
CONFIG_IM: Final = 1 << 9
CONFIG_SM: Final = 1 << 8
CONFIG_CR_SHIFT: Final = 6
CONFIG_CR_MASK: Final = 0x3 << CONFIG_CR_SHIFT
CONFIG_AL: Final = 1 << 5

#: Consecutive faults per CF field value.
FAULTS: Final = (1, 2, 4, 6)
#: Conversions per second per CR field value.
CONVERSION_RATES_HZ: Final = (0.25, 1.0, 4.0, 8.0)

RESET: Final = {REG_TVAL: 0x0000, REG_CONFIG: 0x40A0, REG_TLOW: 0x4B00, REG_THIGH: 0x5000}
STEP_DEGC: Final = 0.0625


def to_register(degc: float) -> int:
    """A temperature as the chip's 12-bit two's complement in bits 15:4 (nearest step)."""
    steps = max(-0x800, min(0x7FF, round(degc / STEP_DEGC)))
    return (steps << 4) & 0xFFFF


def from_register(value: int) -> float:
    steps = value >> 4
    if steps & 0x800:
        steps -= 0x1000
    return steps * STEP_DEGC


class AS6200(InterruptPin, SMBusModel):
    """The chip after power-on; see the module docstring."""

    int_polarity = Polarity.ACTIVE_LOW  # POL's reset value
    int_drive = Drive.OPEN_DRAIN
    temperature = Input[float]()

    def __init__(self) -> None:
        super().__init__(regbytes=2, byteorder="big")
        # The backend's thread (the driver's transfers) and the test's (convert()).
        self._lock = threading.RLock()
        self.regs = dict(RESET)
        self.temperature = 0.0
        self.alert = False  # the comparator's state: the alert is active
        self._faults = 0  # consecutive conversions towards changing it

    # The ALERT pin

    @property
    def int_asserted(self) -> bool:
        return self.alert

    # State, for tests

    @property
    def config(self) -> int:
        return self.regs[REG_CONFIG]

    @property
    def conversion_rate_hz(self) -> float:
        return CONVERSION_RATES_HZ[(self.config & CONFIG_CR_MASK) >> CONFIG_CR_SHIFT]

    # Conversions

    def convert(self, times: int = 1) -> None:
        """`times` conversions of the current `temperature`: TVAL, then the comparator."""
        with self._lock:
            for _ in range(times):
                self.regs[REG_TVAL] = to_register(self.temperature)
                self._compare(self.regs[REG_TVAL])
            self.update_int()

    def _compare(self, tval: int) -> None:
        temp = from_register(tval)
        if self.alert:
            fault = temp < from_register(self.regs[REG_TLOW])
        else:
            fault = temp >= from_register(self.regs[REG_THIGH])
        self._faults = self._faults + 1 if fault else 0
        if self._faults >= FAULTS[(self.config & CONFIG_CF_MASK) >> CONFIG_CF_SHIFT]:
            self.alert = not self.alert
            self._faults = 0

    # Registers

    def write(self, data: bytes) -> None:
        if len(data) == 2:  # the pointer and one byte: the register's high byte
            with self._lock:
                reg = data[0] & 0x3
                self.reg_addr = data[0]
                low = self.regs[reg] & 0xFF
                super().write(bytes([data[0], data[1], low]))
            return
        super().write(data)

    def reg_read(self, addr: int) -> int:
        with self._lock:
            if addr > REG_THIGH:
                raise ModelError(f"AS6200: read of pointer {addr:#04x} (P7:P2 must be 0)")
            if addr == REG_CONFIG:
                return self._config_read()
            return self.regs[addr]

    def _config_read(self) -> int:
        level = self.alert == bool(self.config & CONFIG_POL)  # AL: the alert as POL makes it
        return (self.config & ~CONFIG_AL) | (CONFIG_AL if level else 0)

    def reg_write(self, addr: int, val: int) -> None:
        with self._lock:
            if addr > REG_THIGH:
                raise ModelError(f"AS6200: write of {val:#06x} to pointer {addr:#04x}")
            if addr == REG_TVAL:
                raise ModelError(f"AS6200: write of {val:#06x} to TVAL, which is read-only")
            if addr == REG_CONFIG:
                if val & (CONFIG_IM | CONFIG_SM):
                    raise ModelError(
                        f"AS6200: CONFIG {val:#06x} sets interrupt or sleep mode (not modelled)"
                    )
                self.regs[addr] = val & ~CONFIG_AL
                self.int_output.polarity = (
                    Polarity.ACTIVE_HIGH if val & CONFIG_POL else Polarity.ACTIVE_LOW
                )
                return
            self.regs[addr] = val & 0xFFF0  # bits 3:0 are not part of the temperature
