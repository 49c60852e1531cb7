"""Maxim MAX5522 dual 10-bit voltage-output DAC on SPI (the MAX5522-MAX5525 datasheet,
"Serial Interface"): as much as a test that binds it needs, which is the 16-bit input word
and nothing of what the chip does with it.

The host shifts in one 16-bit word, MSB first, while CS is low: four control bits, then
the 10-bit data, then two bits the chip ignores. The chip has no output on the bus.

Simplified: the words are recorded (`words`), not carried out, and a word of other than 16
bits is a model error.
"""

from __future__ import annotations

from typing import Final

from roadtest.models.base import VIRTIO_SPI_CS_HIGH, VIRTIO_SPI_MODE_LSB_FIRST, ModelError, SPIModel

WORD_BYTES: Final = 2


class MAX5522(SPIModel):
    def __init__(self) -> None:
        self.words: list[int] = []
        self._shifted = bytearray()

    def select(self) -> None:
        self._shifted = bytearray()

    def deselect(self) -> None:
        shifted, self._shifted = self._shifted, bytearray()
        if not shifted:
            return
        if len(shifted) != WORD_BYTES:
            raise ModelError(f"max5522: {len(shifted) * 8} bits shifted in; a word is 16")
        self.words.append(int.from_bytes(shifted, "big"))

    def transfer(self, tx: bytes | None, length: int, mode: int, bits_per_word: int) -> bytes:
        if mode & VIRTIO_SPI_MODE_LSB_FIRST:
            raise ModelError("max5522: LSB first on the wire; the chip is MSB first")
        if mode & VIRTIO_SPI_CS_HIGH:
            raise ModelError("max5522: its CS is active low")
        if tx is not None:
            self._shifted += tx
        return bytes(length)  # no output: what the host reads is not modelled
