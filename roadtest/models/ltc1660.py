"""Linear Technology LTC1660 (10-bit) and LTC1665 (8-bit) octal voltage-output DACs
("LTC1665/LTC1660 Micropower Octal 8-Bit and 10-Bit DACs", Linear Technology; its
"Serial Interface" section and Table 1), as far as a driver that only writes needs.

The input word is 16 bits, shifted in on DIN MSB first on the rising edges of SCK while
CS/LD is low: the 4-bit control code A3-A0, then the input code (D9-D0 on the LTC1660;
D7-D0 and two more don't-care bits on the LTC1665), then two don't-care bits. When CS/LD
goes high the chip acts on the word as Table 1 says: control codes 0001 to 1000 load DAC A
to DAC H with the input code and update its output; 1111 loads all eight DACs with the
same code. The output of a DAC with code k is k / 2^n of VREF (n the resolution).

Simplified: the codes that change only the power-down state (sleep and wake) or nothing
are taken and change no DAC, and a word of other than 16 bits is a model error (the
datasheet defines only the 16-bit word).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from roadtest.models.base import (
    VIRTIO_SPI_CS_HIGH,
    VIRTIO_SPI_MODE_LSB_FIRST,
    ModelError,
    SPIModel,
)

DACS: Final = 8
WORD_BITS: Final = 16
LOAD_ALL: Final = 0b1111


@dataclass(frozen=True)
class Part:
    name: str
    bits: int  # the input code's width, left-aligned after the control code


LTC1660: Final = Part("ltc1660", bits=10)
LTC1665: Final = Part("ltc1665", bits=8)


class LTC166x(SPIModel):
    """One LTC1660 or LTC1665 (`part`). `dac[i]` is DAC A + i's code (0 at power-on: the
    chip clears its outputs to zero scale), `words` every 16-bit word the chip took."""

    def __init__(self, part: Part = LTC1660) -> None:
        self.part = part
        self.dac = [0] * DACS
        self.words: list[int] = []
        self._shifted = bytearray()

    def output(self, index: int, vref: float) -> float:
        """DAC A + `index`'s output voltage for a reference of `vref` volts."""
        return self.dac[index] * vref / (1 << self.part.bits)

    def _execute(self, word: int) -> None:
        control = word >> 12
        code = word >> (12 - self.part.bits) & ((1 << self.part.bits) - 1)
        self.words.append(word)
        if 1 <= control <= DACS:
            self.dac[control - 1] = code
        elif control == LOAD_ALL:
            self.dac = [code] * DACS

    # SPIModel

    def select(self) -> None:
        self._shifted = bytearray()

    def deselect(self) -> None:
        shifted, self._shifted = self._shifted, bytearray()
        if not shifted:
            return
        if len(shifted) * 8 != WORD_BITS:
            raise ModelError(
                f"{self.part.name}: {len(shifted) * 8} bits shifted in; the input word is 16"
            )
        self._execute(int.from_bytes(shifted, "big"))

    def transfer(self, tx: bytes | None, length: int, mode: int, bits_per_word: int) -> bytes:
        if mode & VIRTIO_SPI_MODE_LSB_FIRST:
            raise ModelError(f"{self.part.name}: LSB first on the wire; the chip is MSB first")
        if mode & VIRTIO_SPI_CS_HIGH:
            raise ModelError(f"{self.part.name}: CS/LD is active low")
        if tx is not None:
            self._shifted += tx
        return bytes(length)  # the driver never reads: what comes back is not modelled
