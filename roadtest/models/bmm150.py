"""Bosch BMM150 geomagnetic sensor, the magnetometer of the BMC150 and BMC156, on I2C (BMM150
datasheet BST-BMM150-DS001, "Register map" and "Power modes"): 8-bit registers behind an
8-bit pointer that increments over a multi-byte read.

- Chip ID (40h) reads 32h.
- DATAX (42h-43h) and DATAY (44h-45h): 13-bit two's complement in bits 15-3 (the LSB
  register's bits 7-3, the MSB register's 7-0), DATAZ (46h-47h) 15-bit in bits 15-1,
  RHALL (48h-49h) the 14-bit hall resistance in bits 15-2; bit 0 of 48h is data ready.
- Power control (4Bh, bit 0) takes the chip out of suspend mode. In suspend mode only
  4Bh is accessible: other registers read 00h here.
- Operation mode and data rate (4Ch), interrupt settings (4Dh, 4Eh), thresholds (4Fh,
  50h), repetitions REPXY (51h) and REPZ (52h): read-write.
- 5Dh-71h hold trim data that Bosch programs for its compensation software; the
  datasheet does not describe them, so the model stores the bytes the test gives
  (`trim`). A blank trim area is all zeros.

Simplified: every register but the chip ID resets to 0 here; no conversions (the data
registers hold what the test sets, `measure`), no self test, soft reset or interrupts.
"""

from __future__ import annotations

from typing import Final

from roadtest.models.base import ModelError, SMBusModel

CHIP_ID: Final = 0x40
CHIP_ID_VALUE: Final = 0x32
DATA_X_LSB: Final = 0x42
RHALL_LSB: Final = 0x48
INT_STATUS: Final = 0x4A
POWER: Final = 0x4B
POWER_CONTROL: Final = 1 << 0
WRITABLE: Final = frozenset({0x4B, 0x4C, 0x4D, 0x4E, 0x4F, 0x50, 0x51, 0x52})
TRIM_FIRST: Final = 0x5D
TRIM_LAST: Final = 0x71
TRIM_BYTES: Final = TRIM_LAST - TRIM_FIRST + 1
DATA_READY: Final = 1 << 0


def _field(value: int, bits: int, shift: int, what: str) -> int:
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise ValueError(f"{what}: {value} does not fit {bits} bits")
    return (value & ((1 << bits) - 1)) << shift


class BMM150(SMBusModel):
    """`trim` is the 21 bytes of 5Dh-71h (all 0 by default: a blank trim area)."""

    def __init__(self, trim: bytes = bytes(TRIM_BYTES)) -> None:
        super().__init__(regbytes=1)
        if len(trim) != TRIM_BYTES:
            raise ValueError(f"the trim area is {TRIM_BYTES} bytes, not {len(trim)}")
        self.regs = dict.fromkeys(range(0x40, TRIM_LAST + 1), 0)
        self.regs[CHIP_ID] = CHIP_ID_VALUE
        for i, byte in enumerate(trim):
            self.regs[TRIM_FIRST + i] = byte

    @property
    def suspended(self) -> bool:
        return not self.regs[POWER] & POWER_CONTROL

    def measure(self, x: int, y: int, z: int, rhall: int) -> None:
        """The data registers of a conversion: x and y 13-bit, z 15-bit two's complement,
        rhall 14-bit unsigned; data ready set."""
        if not 0 <= rhall < 1 << 14:
            raise ValueError(f"rhall: {rhall} does not fit 14 bits")
        words = [
            _field(x, 13, 3, "x"),
            _field(y, 13, 3, "y"),
            _field(z, 15, 1, "z"),
            rhall << 2 | DATA_READY,
        ]
        for i, word in enumerate(words):
            self.regs[DATA_X_LSB + 2 * i] = word & 0xFF
            self.regs[DATA_X_LSB + 2 * i + 1] = word >> 8

    # SMBusModel

    def reg_read(self, addr: int) -> int:
        if addr not in self.regs:
            raise ModelError(f"bmm150: read of undefined register {addr:#04x}")
        if addr != POWER and self.suspended:
            return 0
        return self.regs[addr]

    def reg_write(self, addr: int, val: int) -> None:
        if addr not in WRITABLE:
            raise ModelError(f"bmm150: write of {val:#04x} to read-only register {addr:#04x}")
        if addr != POWER and self.suspended:
            return
        self.regs[addr] = val
