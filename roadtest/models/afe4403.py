"""TI AFE4403 analog front end for heart rate monitors and pulse oximeters (datasheet SBAS650C,
"Serial Programming Interface" and "Register Map"): as much of its SPI register interface
as a driver's probe and its sysfs writes need.

Every access is 32 clocks while STE (the chip select) is low, MSB first: an 8-bit register
address, then 24 data bits. The chip writes the data to the register, unless SPI_READ
(CONTROL0 bit 0) is set: then it shifts the addressed register's 24 bits out on SOMI
instead, and the host must clear SPI_READ (a write to CONTROL0) to write registers again.
SW_RST (CONTROL0 bit 3) resets every register to its default (0 here) and clears itself.
LED2VAL to LED1-ALED1VAL (2Ah to 2Fh) are the ADC's results: the chip writes them, the
host only reads them.

Simplified: no timing engine and no conversions (the result registers hold what the test
puts there); every register but CONTROL0 keeps what is written, reserved bits included;
with SPI_READ clear a read gives zeros and a transfer with nothing sent (the host's
half-duplex read) writes nothing.
"""

from __future__ import annotations

from typing import Final

from roadtest.models.base import VIRTIO_SPI_CS_HIGH, VIRTIO_SPI_MODE_LSB_FIRST, ModelError, SPIModel

CONTROL0: Final = 0x00
LEDCNTRL: Final = 0x22
LED2VAL: Final = 0x2A
LED1_ALED1VAL: Final = 0x2F
SPI_READ: Final = 1 << 0
SW_RST: Final = 1 << 3

DATA_BYTES: Final = 3
REGISTERS: Final = 0x100


class AFE4403(SPIModel):
    """`regs[a]` is register `a`'s 24 bits; `writes` every (register, value) the host
    wrote, in order."""

    def __init__(self) -> None:
        self.regs = [0] * REGISTERS
        self.spi_read = False
        self.writes: list[tuple[int, int]] = []
        self._address: int | None = None
        self._data = bytearray()
        self._sent = False  # the host sent data bits (not a half-duplex read)

    def _write(self, address: int, value: int) -> None:
        self.writes.append((address, value))
        if address == CONTROL0:
            self.spi_read = bool(value & SPI_READ)
            if value & SW_RST:
                self.regs = [0] * REGISTERS
                self.spi_read = False
            return
        if self.spi_read:
            return  # SPI_READ set: the data bits are not written
        self.regs[address] = value

    # SPIModel

    def select(self) -> None:
        self._address = None
        self._data = bytearray()
        self._sent = False

    def deselect(self) -> None:
        address, data, sent = self._address, bytes(self._data), self._sent
        self.select()
        if address is None:
            return
        if len(data) != DATA_BYTES:
            raise ModelError(
                f"afe4403: {8 + 8 * len(data)} clocks with STE low; an access is 32 "
                "(8 address bits, 24 data bits)"
            )
        if sent:
            self._write(address, int.from_bytes(data, "big"))

    def transfer(self, tx: bytes | None, length: int, mode: int, bits_per_word: int) -> bytes:
        if mode & VIRTIO_SPI_MODE_LSB_FIRST:
            raise ModelError("afe4403: LSB first on the wire; the chip is MSB first")
        if mode & VIRTIO_SPI_CS_HIGH:
            raise ModelError("afe4403: its STE is active low")
        out = bytearray()
        for i in range(length):
            if self._address is None:
                self._address = tx[i] if tx is not None else 0
                out.append(0)
                continue
            index = len(self._data)
            if index >= DATA_BYTES:
                raise ModelError("afe4403: more than 24 data bits in one access")
            self._data.append(tx[i] if tx is not None else 0)
            self._sent |= tx is not None
            if self.spi_read:
                value = self.regs[self._address]
                out.append(value >> (8 * (DATA_BYTES - 1 - index)) & 0xFF)
            else:
                out.append(0)
        return bytes(out)
