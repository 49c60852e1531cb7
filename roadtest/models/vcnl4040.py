"""Vishay VCNL4040 and VCNL4200 proximity and ambient light sensors: 16-bit registers.

Both use SMBus read/write word with 8-bit command codes and little-endian
data (low byte first), and share most of the register map: ALS_CONF (0x00),
ALS thresholds (0x01, 0x02), PS_CONF1/2 (0x03), PS_CONF3/PS_MS (0x04),
PS_CANC (0x05), PS thresholds (0x06 low, 0x07 high), PS, ALS and white data
(0x08-0x0a). They differ in where the interrupt flags and the ID live:

- VCNL4040 (datasheet 84274): INT_Flag in the high byte of 0x0b, ID 0x0186 at
  0x0c, and nothing beyond: "command codes" 0x00-0x0c only.
- VCNL4200 (datasheet 84430): INT_Flag in the high byte of 0x0d, ID 0x1058 at
  0x0e; 0x0b and 0x0c are not accessible.

Reading or writing any other command code is a model error, so a driver that
touches an undefined register fails its test instead of getting a made-up value.

A test sets what the sensor sees (`als_result`, `prox_result`,
`white_result`). While a function is enabled (its shutdown bit, ALS_SD or
PS_SD, clear) the chip measures continuously, so a read of its data register
returns what the test set; while shut down, the register keeps its last
value. `measure()` completes one integration cycle of every enabled function
and raises the threshold interrupts the configuration asks for; INT_Flag is
cleared by reading it, which also releases the active-low INT output
(the model's `irq` GPIO line).

Under simulated time the ALS keeps the datasheets' integration time (ALS_IT):
once enabled, it latches what the test set at the end of each integration
period, and ALS_DATA (and WHITE_DATA) hold the last completed one; the
model notes when the driver read ALS_DATA (`als_reads`, ns of its clock).
Otherwise the ALS data is what the test set, at once.

Simplified: the proximity sensor's timing (duty ratio, PS_IT), the integration time's
effect on the data, the LED current, cancellation and multi-pulse settings are
not modelled; the proximity "logic output"
mode, active force mode, smart persistence and the VCNL4200's PS_UPFLAG are
not modelled. With PS_HD = 0 the PS data is 12 bits wide and saturates at 0xfff.
"""

from __future__ import annotations

import threading
from typing import ClassVar, Final

from roadtest.models.base import Input, ModelError, SMBusModel
from roadtest.models.interrupt import Drive, InterruptPin, Polarity
from roadtest.simtime.clock import NS_PER_MS

REG_ALS_CONF: Final = 0x00
REG_ALS_THDH: Final = 0x01
REG_ALS_THDL: Final = 0x02
REG_PS_CONF1: Final = 0x03  # low byte PS_CONF1, high byte PS_CONF2
REG_PS_CONF3: Final = 0x04  # low byte PS_CONF3, high byte PS_MS
REG_PS_CANC: Final = 0x05
REG_PS_THDL: Final = 0x06
REG_PS_THDH: Final = 0x07
REG_PS_DATA: Final = 0x08
REG_ALS_DATA: Final = 0x09
REG_WHITE_DATA: Final = 0x0A
VCNL4040_REG_INT_FLAG: Final = 0x0B
VCNL4040_REG_ID: Final = 0x0C
VCNL4200_REG_INT_FLAG: Final = 0x0D
VCNL4200_REG_ID: Final = 0x0E

# ALS_CONF (low byte)
ALS_CONF_IT_SHIFT: Final = 6  # bits 7:6, integration time
ALS_CONF_IT_MASK: Final = 0x3 << ALS_CONF_IT_SHIFT
ALS_CONF_PERS_SHIFT: Final = 2  # bits 3:2: 1, 2, 4, 8 consecutive hits
ALS_CONF_INT_EN: Final = 1 << 1
ALS_CONF_SD: Final = 1 << 0  # shut down
# PS_CONF1 (low byte) and PS_CONF2 (high byte)
PS_CONF1_PERS_SHIFT: Final = 4  # bits 5:4: 1, 2, 3, 4 consecutive hits
PS_CONF1_IT_SHIFT: Final = 1  # bits 3:1, integration time
PS_CONF1_SD: Final = 1 << 0
PS_CONF2_HD: Final = 1 << 11  # 16-bit PS output (12-bit when 0)
PS_CONF2_INT_SHIFT: Final = 8  # bits 9:8: 0 off, 1 close, 2 away, 3 both
PS_INT_CLOSE: Final = 1
PS_INT_AWAY: Final = 2
# INT_Flag (high byte of its register)
INT_FLAG_PS_SPFLAG: Final = 1 << 14
INT_FLAG_ALS_IF_L: Final = 1 << 13
INT_FLAG_ALS_IF_H: Final = 1 << 12
INT_FLAG_PS_IF_CLOSE: Final = 1 << 9
INT_FLAG_PS_IF_AWAY: Final = 1 << 8


class VCNL40x0Family(InterruptPin, SMBusModel):
    """What the VCNL4040 and VCNL4200 share; the subclasses give their register maps."""

    int_polarity = Polarity.ACTIVE_LOW
    int_drive = Drive.OPEN_DRAIN

    name: ClassVar[str]
    reset: ClassVar[dict[int, int]]
    als_integration_ns: ClassVar[tuple[int, int, int, int]]  # by ALS_IT
    reg_int_flag: ClassVar[int]
    reg_id: ClassVar[int]
    als_result = Input[int](bits=16)  # ALS_DATA
    prox_result = Input[int](bits=16)  # PS_DATA
    white_result = Input[int](bits=16)  # WHITE_DATA

    def __init__(self) -> None:
        super().__init__(regbytes=2, byteorder="little")
        # The backend's thread (the driver's transfers) and the test's thread
        # (measure, irq) both change the registers.
        self._lock = threading.RLock()
        self.regs = dict(self.reset)
        self.read_only = frozenset(
            {REG_PS_DATA, REG_ALS_DATA, REG_WHITE_DATA, self.reg_int_flag, self.reg_id}
        )
        self.als_result = 0x0000
        self.prox_result = 0x0000
        self.white_result = 0x0000
        self._als_hits = 0
        self._ps_hits = 0
        self.als_reads: list[int] = []
        self._als_cycle = 0  # which integration cycle may complete: a new one cancels it

    # The INT pin: active low while any flag is set

    @property
    def int_flags(self) -> int:
        return self.regs[self.reg_int_flag]

    @property
    def int_asserted(self) -> bool:
        return self.int_flags != 0

    # State, for tests

    @property
    def als_enabled(self) -> bool:
        return not self.regs[REG_ALS_CONF] & ALS_CONF_SD

    @property
    def ps_enabled(self) -> bool:
        return not self.regs[REG_PS_CONF1] & PS_CONF1_SD

    @property
    def als_integration_index(self) -> int:
        """The ALS_IT field: 0 is the shortest integration time."""
        return (self.regs[REG_ALS_CONF] & ALS_CONF_IT_MASK) >> ALS_CONF_IT_SHIFT

    def _ps_value(self) -> int:
        if self.regs[REG_PS_CONF1] & PS_CONF2_HD:
            return self.prox_result & 0xFFFF
        return min(self.prox_result, 0x0FFF)

    # Measurements

    def measure(self) -> None:
        """One integration cycle of each enabled function: latch the data, raise interrupts."""
        with self._lock:
            if self.als_enabled:
                self.regs[REG_ALS_DATA] = self.als_result & 0xFFFF
                self.regs[REG_WHITE_DATA] = self.white_result & 0xFFFF
                self._check_als(self.regs[REG_ALS_DATA])
            if self.ps_enabled:
                self.regs[REG_PS_DATA] = self._ps_value()
                self._check_ps(self.regs[REG_PS_DATA])
            self.update_int()

    def _check_als(self, value: int) -> None:
        conf = self.regs[REG_ALS_CONF]
        if not conf & ALS_CONF_INT_EN:
            self._als_hits = 0
            return
        above = value > self.regs[REG_ALS_THDH]
        below = value < self.regs[REG_ALS_THDL]
        self._als_hits = self._als_hits + 1 if above or below else 0
        if self._als_hits >= 1 << ((conf >> ALS_CONF_PERS_SHIFT) & 0x3):
            self.regs[self.reg_int_flag] |= (INT_FLAG_ALS_IF_H if above else 0) | (
                INT_FLAG_ALS_IF_L if below else 0
            )

    def _check_ps(self, value: int) -> None:
        conf = self.regs[REG_PS_CONF1]
        mode = (conf >> PS_CONF2_INT_SHIFT) & 0x3
        close = bool(mode & PS_INT_CLOSE) and value > self.regs[REG_PS_THDH]
        away = bool(mode & PS_INT_AWAY) and value < self.regs[REG_PS_THDL]
        self._ps_hits = self._ps_hits + 1 if close or away else 0
        if self._ps_hits >= 1 + ((conf >> PS_CONF1_PERS_SHIFT) & 0x3):
            self.regs[self.reg_int_flag] |= (INT_FLAG_PS_IF_CLOSE if close else 0) | (
                INT_FLAG_PS_IF_AWAY if away else 0
            )

    # Registers

    def reg_read(self, addr: int) -> int:
        with self._lock:
            if addr not in self.regs:
                raise ModelError(f"{self.name}: read of undefined register {addr:#04x}")
            if addr == REG_ALS_DATA:
                self.als_reads.append(self.clock.now())
            # Continuous measurement: an enabled function's data is the latest (under
            # simulated time, the ALS's latest completed integration: _integrated).
            timed = self.clock.simulated
            if addr == REG_ALS_DATA and self.als_enabled and not timed:
                self.regs[addr] = self.als_result & 0xFFFF
            elif addr == REG_WHITE_DATA and self.als_enabled and not timed:
                self.regs[addr] = self.white_result & 0xFFFF
            elif addr == REG_PS_DATA and self.ps_enabled:
                self.regs[addr] = self._ps_value()
            value = self.regs[addr]
            if addr == self.reg_int_flag:
                # "Once the host reads INT_Flag register, all the flags are cleared
                # (reset to "0"), and the INT pin is reset to high."
                self.regs[addr] = 0
                self.update_int()
            return value

    def reg_write(self, addr: int, val: int) -> None:
        with self._lock:
            if addr not in self.regs:
                raise ModelError(
                    f"{self.name}: write of {val:#06x} to undefined register {addr:#04x}"
                )
            if addr in self.read_only:
                raise ModelError(
                    f"{self.name}: write of {val:#06x} to read-only register {addr:#04x}"
                )
            old = self.regs[addr]
            self.regs[addr] = val
            if addr == REG_ALS_CONF:
                self._als_hits = 0
                if val & (ALS_CONF_SD | ALS_CONF_IT_MASK) != old & (ALS_CONF_SD | ALS_CONF_IT_MASK):
                    self._integrate()
            elif addr == REG_PS_CONF1:
                self._ps_hits = 0

    def _integrate(self) -> None:
        """The ALS was enabled, shut down, or given another integration time: a new
        integration starts (or none), under simulated time."""
        self._als_cycle += 1
        if self.als_enabled and self.clock.simulated:
            cycle = self._als_cycle
            period = self.als_integration_ns[self.als_integration_index]
            self.clock.after(period, lambda: self._integrated(cycle))

    def _integrated(self, cycle: int) -> None:
        with self._lock:
            if cycle != self._als_cycle:
                return
            self.regs[REG_ALS_DATA] = self.als_result & 0xFFFF
            self.regs[REG_WHITE_DATA] = self.white_result & 0xFFFF
            self._integrate()


class VCNL4040(VCNL40x0Family):
    """VCNL4040 (datasheet 84274, rev. 1.4, table 1)."""

    name = "VCNL4040"
    # ALS_IT: "00 = 80 ms, 01 = 160 ms, 10 = 320 ms, 11 = 640 ms" (table 2, ALS_CONF).
    als_integration_ns = (80 * NS_PER_MS, 160 * NS_PER_MS, 320 * NS_PER_MS, 640 * NS_PER_MS)
    reg_int_flag = VCNL4040_REG_INT_FLAG
    reg_id = VCNL4040_REG_ID
    reset = {
        # ALS_CONF 0x01 (ALS_SD); its reserved high byte is 0x00 in table 1 (the
        # RFC's model had 0x0101, the VCNL4200's value).
        REG_ALS_CONF: 0x0001,
        REG_ALS_THDH: 0x0000,
        REG_ALS_THDL: 0x0000,
        REG_PS_CONF1: 0x0001,  # PS_SD
        REG_PS_CONF3: 0x0000,
        REG_PS_CANC: 0x0000,
        REG_PS_THDL: 0x0000,
        REG_PS_THDH: 0x0000,
        REG_PS_DATA: 0x0000,
        REG_ALS_DATA: 0x0000,
        REG_WHITE_DATA: 0x0000,
        VCNL4040_REG_INT_FLAG: 0x0000,
        VCNL4040_REG_ID: 0x0186,  # ID_L 0x86; ID_M: address code 0 (0x60), version 1
    }


class VCNL4200(VCNL40x0Family):
    """VCNL4200 (datasheet 84430); reset values as in the RFC's model."""

    name = "VCNL4200"
    # ALS_IT: "00 = 50 ms, 01 = 100 ms, 10 = 200 ms, 11 = 400 ms" (ALS_CONF).
    als_integration_ns = (50 * NS_PER_MS, 100 * NS_PER_MS, 200 * NS_PER_MS, 400 * NS_PER_MS)
    reg_int_flag = VCNL4200_REG_INT_FLAG
    reg_id = VCNL4200_REG_ID
    reset = {
        REG_ALS_CONF: 0x0101,  # ALS_SD; high byte reserved
        REG_ALS_THDH: 0x0000,
        REG_ALS_THDL: 0x0000,
        REG_PS_CONF1: 0x0001,  # PS_SD
        REG_PS_CONF3: 0x0000,
        REG_PS_CANC: 0x0000,
        REG_PS_THDL: 0x0000,
        REG_PS_THDH: 0x0000,
        REG_PS_DATA: 0x0000,
        REG_ALS_DATA: 0x0000,
        REG_WHITE_DATA: 0x0000,
        VCNL4200_REG_INT_FLAG: 0x0000,
        VCNL4200_REG_ID: 0x1058,  # ID_L 0x58; ID_M: address code 1 (0x51), version 0
    }
