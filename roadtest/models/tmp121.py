"""TI TMP121/TMP123 temperature sensor (datasheet SBOS273): an SPI chip with no registers
to address, only an output (SO) that shifts out its last conversion.

"Temperature Register": 16 bits, most significant first, from the chip select's falling
edge: D15..D3 the temperature, a 13-bit two's-complement count of 0.0625 degC; D2 a 1;
D1 and D0 high impedance, which a pulled-up line reads as ones (the datasheet's table
shows them as 11): 25 degC is 0x0C87, -25 degC 0xF387. The chip has no input (no SI
pin): what the host sends is not heard. Past the 16 bits SO stays high impedance.
"""

from __future__ import annotations

from typing import Final

from roadtest.models.base import Input, SPIModel

DEGC_PER_LSB: Final = 0.0625
D2: Final = 0b100  # always 1
HIGH_IMPEDANCE: Final = 0b011  # D1, D0 (and every bit after D0) on a pulled-up line
# The 13-bit count's range: -4096..4095 counts of 0.0625 degC.
COUNT_MIN: Final = -(1 << 12)
COUNT_MAX: Final = (1 << 12) - 1


class TMP121(SPIModel):
    """`temperature` (degC) is what the sensor measures; a read gives its conversion.

    Conversions complete at once (a read returns the temperature the test last set), and
    the chip's shutdown (the TMP121 has none over SPI; the TMP123 is the same) is not
    modelled. A temperature beyond the 13-bit range reads as its end."""

    temperature = Input[float](initial=25.0)

    def __init__(self) -> None:
        self.temperature = 25.0
        self._shifted = 0  # bytes shifted out since the chip select was asserted

    def output(self) -> int:
        """The 16 bits SO shifts out for `temperature`."""
        counts = max(COUNT_MIN, min(COUNT_MAX, round(self.temperature / DEGC_PER_LSB)))
        return (counts & 0x1FFF) << 3 | D2 | HIGH_IMPEDANCE

    # SPIModel

    def select(self) -> None:
        self._shifted = 0

    def transfer(self, tx: bytes | None, length: int, mode: int, bits_per_word: int) -> bytes:
        stream = self.output().to_bytes(2, "big")
        start = self._shifted
        self._shifted += length
        return bytes(stream[i] if i < len(stream) else 0xFF for i in range(start, start + length))
