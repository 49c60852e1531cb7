"""Melexis MLX90632 infrared thermometer on I2C (the MLX90632 datasheet, Melexis document
3901090632; its facts here are from memory of it, not checked against a copy):
16-bit words at 16-bit addresses, both sent most significant byte first. A write
message is the address and then words for it and the addresses after it; a read
returns the words from the last address written on, one after another.

- EEPROM (2400h-27FFh): the chip's calibration. EE_VERSION (240Bh) names the
  calibration and DSP version (0105h: medical; the low byte 05h is DSP version 5). The
  ambient constants P_R, P_G, P_T and P_O are 32-bit, at 240Ch, 240Eh, 2410h and 2412h,
  the low word first; Gb (242Eh) and Ka (242Fh) are 16-bit, and so on up to Ha and Hb
  (2481h, 2482h). Each chip is calibrated at the factory; a blank EEPROM reads 0000h.
- Registers (3000h-3FFFh): REG_CONTROL (3001h: the power mode in bits 2-1, the
  measurement type in bits 8-4, start of burst in bit 11), the I2C command register
  (3005h: 0006h resets the chip), REG_STATUS (3FFFh: new data in bit 0, which the host
  clears by writing 0 to it; the cycle position in bits 6-2; device busy in bit 10).
- RAM (4000h-405Fh): the measurements. The ambient temperature is computed from RAM_6
  (4005h) and RAM_9 (4008h) with Gb and the P_ constants; the datasheet's formula
  divides by VR_Ta = RAM_9 + Gb * RAM_6 / 12, which a chip whose RAM and EEPROM read 0
  makes 0.

Simplified: no measurements (RAM holds what the test sets), no EEPROM writes, no reset
or power modes (REG_CONTROL keeps what is written); the status bits but new data
only change when the test sets them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from roadtest.models.base import I2CModel, ModelError

EE_FIRST: Final = 0x2400
EE_LAST: Final = 0x27FF
EE_VERSION: Final = 0x240B
VERSION_MEDICAL: Final = 0x0105
REG_I2C_ADDRESS: Final = 0x3000
REG_CONTROL: Final = 0x3001
REG_I2C_COMMAND: Final = 0x3005
REG_STATUS: Final = 0x3FFF
STATUS_NEW_DATA: Final = 1 << 0
STATUS_CYCLE_POSITION_SHIFT: Final = 2
STATUS_CYCLE_POSITION_MASK: Final = 0x1F << STATUS_CYCLE_POSITION_SHIFT
RAM_FIRST: Final = 0x4000
RAM_LAST: Final = 0x405F
WRITABLE: Final = frozenset({REG_I2C_ADDRESS, REG_CONTROL, REG_I2C_COMMAND, REG_STATUS})


def ram(n: int) -> int:
    """The address of RAM_n (numbered from 1, as the datasheet does)."""
    if not 1 <= n <= RAM_LAST - RAM_FIRST + 1:
        raise ValueError(f"RAM_{n} does not exist")
    return RAM_FIRST + n - 1


class MLX90632(I2CModel):
    """`eeprom` maps EEPROM addresses to their words (every other word reads 0000h: a
    blank EEPROM); EE_VERSION is medical unless `eeprom` gives it."""

    def __init__(self, eeprom: Mapping[int, int] | None = None) -> None:
        self.words: dict[int, int] = dict.fromkeys(range(EE_FIRST, EE_LAST + 1), 0)
        self.words[EE_VERSION] = VERSION_MEDICAL
        for addr, word in (eeprom or {}).items():
            if not EE_FIRST <= addr <= EE_LAST:
                raise ValueError(f"{addr:#06x} is not an EEPROM address")
            self.words[addr] = word & 0xFFFF
        self.words.update(dict.fromkeys(range(RAM_FIRST, RAM_LAST + 1), 0))
        self.words.update(dict.fromkeys(WRITABLE, 0))
        self.pointer = 0

    def set_ram(self, n: int, word: int) -> None:
        self.words[ram(n)] = word & 0xFFFF

    def set_status(self, cycle_position: int, new_data: bool = True) -> None:
        if not 0 <= cycle_position <= 0x1F:
            raise ValueError(f"cycle position {cycle_position} does not fit 5 bits")
        self.words[REG_STATUS] = (cycle_position << STATUS_CYCLE_POSITION_SHIFT) | (
            STATUS_NEW_DATA if new_data else 0
        )

    # I2CModel

    def write(self, data: bytes) -> None:
        if len(data) < 2 or len(data) % 2:
            raise ModelError(f"mlx90632: a write of {len(data)} bytes, not an address and words")
        self.pointer = int.from_bytes(data[:2], "big")
        for i in range(2, len(data), 2):
            self._store(self.pointer, int.from_bytes(data[i : i + 2], "big"))
            self.pointer += 1

    def read(self, length: int) -> bytes:
        if length % 2:
            raise ModelError(f"mlx90632: a read of {length} bytes, not of 16-bit words")
        out = bytearray()
        for _ in range(length // 2):
            if self.pointer not in self.words:
                raise ModelError(f"mlx90632: read of undefined address {self.pointer:#06x}")
            out += self.words[self.pointer].to_bytes(2, "big")
            self.pointer += 1
        return bytes(out)

    def _store(self, addr: int, word: int) -> None:
        if addr not in WRITABLE:
            raise ModelError(f"mlx90632: write of {word:#06x} to {addr:#06x}, not a register")
        if addr == REG_STATUS:
            # Only new data can be written, and only cleared.
            if not word & STATUS_NEW_DATA:
                self.words[REG_STATUS] &= ~STATUS_NEW_DATA
            return
        self.words[addr] = word
