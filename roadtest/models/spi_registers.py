"""Register chips on SPI: one register model, attached on I2C or on SPI.

A chip with registers frames a register access on SPI as its datasheet's SPI section says:
a command (one or two bytes, most significant first) whose bits hold a read/write bit, the
register address and sometimes fixed bits (a subaddress), then, for a read, maybe dummy
bytes, then the data, the register address counting on (or not) from one register to the
next. The chip select frames it: a command starts at the chip select's assertion, and the
transfers of one message are one stream of bytes (the chip sees clock edges, not the host's
buffers). `SPIFraming` holds those parameters; `SPIRegisters` is an `SMBusModel` that is also
an `SPIModel` and serves the same `reg_read`/`reg_write` (and write log) on both buses, so a
model written once (a `MappedSMBusModel` with its register map, or an `SMBusModel`) is
attached on I2C by an `I2CDevice` and on SPI by an `SPIDevice`: which bus is the
declaration's, not a second model's.

The conventions it covers (each a datasheet's):

- regmap-spi's default: R/W in bit 7 of an 8-bit command, 1 = read, the address in bits
  6..0 (`SPIFraming()`), the address counting on (auto-increment).
- Bosch BMP280 (BST-BMP280-DS001, 5.3): "only 7 bits of the register addresses are used;
  the MSB of register address is not used and replaced by a read/write bit (RW = '0' for
  write and RW = '1' for read)", so SPI address 0x77 is register 0xF7 (`address_base=0x80`);
  a write is "pairs [of] control bytes and register data" (`write_pairs`), a read continues
  with the next register ("the register address is automatically incremented").
- NXP PCF2123 (the SPI-bus section, the command byte table): bit 7 R/W (1 = read), bits 6..4
  a subaddress that must be 001 ("other codes will cause the device to ignore data
  transfer": `fixed_mask`/`fixed_bits`), bits 3..0 the register address, which increments
  and wraps (0Fh -> 00h); its chip enable is active high (`cs_high`).
- A 16-bit command word (`command_bits=16`: R/W in bit 15, a 15-bit address) and chips
  that send dummy bytes before read data (`dummy_bytes`).

What the chip shifts out on SDO while it takes a command, dummy bytes or write data is
`idle` (default 0xFF: SDO is high impedance then, and a pulled-up line reads ones). A TX
buffer the host leaves out (`tx` None) shifts zeros, as Linux's SPI core sends
(include/linux/spi/spi.h: "If the transmit buffer is null, zeroes will be shifted out").
A transfer in an SPI mode the chip does not take (CPOL/CPHA not in `modes`, the chip select
polarity not `cs_high`, LSB first, loopback) is refused with a ModelError, so the test
fails naming it: the real chip would have answered garbage.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar

from roadtest.models.base import (
    VIRTIO_SPI_CPHA,
    VIRTIO_SPI_CPOL,
    VIRTIO_SPI_CS_HIGH,
    VIRTIO_SPI_MODE_LOOP,
    VIRTIO_SPI_MODE_LSB_FIRST,
    ModelError,
    SMBusModel,
    SPIModel,
)


def clock_mode(mode: int) -> int:
    """The SPI mode number, 0..3, of virtio-spi mode bits: CPOL << 1 | CPHA."""
    return (2 if mode & VIRTIO_SPI_CPOL else 0) | (1 if mode & VIRTIO_SPI_CPHA else 0)


@dataclass(frozen=True)
class SPIFraming:
    """How a register chip frames a register access on SPI (see the module's docstring).

    - `command_bits`: 8 or 16, the command's width, sent most significant byte first.
    - `read_bit`, `read_level`: the command bit that says read or write, and its value for
      a read.
    - `address_mask`: the command bits (in place) that hold the register address; the
      register is `address_base` plus their value. Auto-increment counts the field on and
      wraps it within its bits.
    - `fixed_mask`, `fixed_bits`: other command bits the chip requires (a subaddress); a
      command without them makes the chip ignore the rest of the message.
    - `auto_increment`: a read or write goes on to the next register after each one;
      without it, every further register's worth of bytes is the same register again.
    - `write_pairs`: after each register written, the next byte is a command again (pairs
      of command and data, BMP280).
    - `dummy_bytes`: bytes after a read command before the first data.
    - `modes`: the SPI modes (0..3) the chip takes; `cs_high`: its chip select is active
      high.
    - `idle`: what SDO shifts while the chip is not sending data.
    """

    command_bits: int = 8
    read_bit: int = 7
    read_level: int = 1
    address_mask: int = 0x7F
    address_base: int = 0
    fixed_mask: int = 0
    fixed_bits: int = 0
    auto_increment: bool = True
    write_pairs: bool = False
    dummy_bytes: int = 0
    modes: frozenset[int] = field(default=frozenset({0, 3}))
    cs_high: bool = False
    idle: int = 0xFF

    def __post_init__(self) -> None:
        if self.command_bits not in (8, 16):
            raise ValueError(f"command_bits must be 8 or 16, not {self.command_bits}")
        top = (1 << self.command_bits) - 1
        rw = 1 << self.read_bit
        if not 0 <= self.read_bit < self.command_bits:
            raise ValueError(f"read_bit {self.read_bit} is outside the command's bits")
        if self.read_level not in (0, 1):
            raise ValueError(f"read_level must be 0 or 1, not {self.read_level}")
        if not self.address_mask or self.address_mask & ~top:
            raise ValueError(f"address_mask {self.address_mask:#x} is not within the command")
        low = self.address_mask & -self.address_mask
        if (self.address_mask // low) & (self.address_mask // low + 1):
            raise ValueError(f"address_mask {self.address_mask:#x} is not one run of bits")
        if self.fixed_mask & ~top or self.fixed_bits & ~self.fixed_mask:
            raise ValueError("fixed_bits must lie within fixed_mask, within the command")
        if (
            (rw & self.address_mask)
            or (rw & self.fixed_mask)
            or (self.address_mask & self.fixed_mask)
        ):
            raise ValueError("the read bit, address bits and fixed bits overlap")
        if self.dummy_bytes < 0:
            raise ValueError("dummy_bytes cannot be negative")
        if not self.modes or not set(self.modes) <= {0, 1, 2, 3}:
            raise ValueError(f"modes must be some of 0..3, not {sorted(self.modes)}")
        if not 0 <= self.idle <= 0xFF:
            raise ValueError(f"idle {self.idle:#x} is not a byte")

    @property
    def command_bytes(self) -> int:
        return self.command_bits // 8

    @property
    def _shift(self) -> int:
        return (self.address_mask & -self.address_mask).bit_length() - 1

    def command(self, register: int, read: bool) -> bytes:
        """The command bytes that address `register` for a read or a write (for tests
        and tools; the chip decodes them with `decode`)."""
        field_value = register - self.address_base
        if not 0 <= field_value <= self.address_mask >> self._shift:
            raise ValueError(f"register {register:#x} cannot be addressed on SPI")
        word = self.fixed_bits | field_value << self._shift
        if read == bool(self.read_level):
            word |= 1 << self.read_bit
        return word.to_bytes(self.command_bytes, "big")

    def decode(self, command: bytes) -> tuple[bool, int] | None:
        """(read, register) of a command, or None when its fixed bits are not the chip's."""
        word = int.from_bytes(command, "big")
        if word & self.fixed_mask != self.fixed_bits:
            return None
        read = bool(word >> self.read_bit & 1) == bool(self.read_level)
        return read, self.address_base + ((word & self.address_mask) >> self._shift)

    def next_register(self, register: int) -> int:
        """The register after `register` (the address field counts on and wraps)."""
        if not self.auto_increment:
            return register
        field_value = register - self.address_base + 1
        return self.address_base + (field_value & (self.address_mask >> self._shift))

    def check_mode(self, mode: int) -> str | None:
        """Why the chip cannot take a transfer in `mode` (virtio-spi mode bits), or None."""
        problems = []
        if clock_mode(mode) not in self.modes:
            taken = ", ".join(str(m) for m in sorted(self.modes))
            problems.append(f"SPI mode {clock_mode(mode)} (the chip takes {taken})")
        if bool(mode & VIRTIO_SPI_CS_HIGH) != self.cs_high:
            problems.append(
                "an active-low chip select (the chip's is active high)"
                if self.cs_high
                else "an active-high chip select (the chip's is active low)"
            )
        if mode & VIRTIO_SPI_MODE_LSB_FIRST:
            problems.append("LSB first (the chip sends the MSB first)")
        if mode & VIRTIO_SPI_MODE_LOOP:
            problems.append("loopback")
        return "; ".join(problems) or None


class _Phase(enum.Enum):
    COMMAND = "command"
    DUMMY = "dummy"
    READ = "read"
    WRITE = "write"
    IGNORED = "ignored"


class SPIRegisters(SMBusModel, SPIModel):
    """A register chip on either bus: `reg_read`/`reg_write` (an `SMBusModel`'s, a mapped
    model's by its register map) framed on I2C as `SMBusModel` says and on SPI as the
    class's `spi_framing` says. Mix it in first:
    `class BMP280(SPIRegisters, MappedSMBusModel)`.

    On SPI: a register's bytes are shifted out in the model's `byteorder` from the moment
    its first bit is clocked (its read and its side effects happen then, not before: a
    read that stops after one register does not read the next); a written register is
    stored (and logged, for the write-log assertions) when its last byte has come. A
    message that ends inside a written register is a ModelError (the chip would have
    dropped it; the driver sent a value the chip's registers cannot hold). `reg_addr` is
    the register the last command addressed, moved on as registers pass.
    """

    spi_framing: ClassVar[SPIFraming] = SPIFraming()

    def select(self) -> None:
        self._phase = _Phase.COMMAND
        self._pending = bytearray()  # command bytes, or a written register's bytes so far
        self._out = b""  # the bytes of the register being shifted out
        self._left = 0  # dummy bytes still to come

    def deselect(self) -> None:
        if self._phase is _Phase.WRITE and self._pending:
            pending, self._pending = bytes(self._pending), bytearray()
            raise ModelError(
                f"{type(self).__name__}: the chip select rose after {len(pending)} of register "
                f"{self._register(self.reg_addr)}'s {self.regbytes} bytes ({pending.hex(' ')})"
            )

    def transfer(self, tx: bytes | None, length: int, mode: int, bits_per_word: int) -> bytes:
        framing = self.spi_framing
        problem = framing.check_mode(mode)
        if problem is not None:
            raise ModelError(f"{type(self).__name__} cannot take a transfer with {problem}")
        if bits_per_word % 8:
            raise ModelError(
                f"{type(self).__name__}: {bits_per_word}-bit words are not whole bytes"
            )
        sent: Iterable[int] = tx if tx is not None else bytes(length)
        return bytes(self._clock(byte, framing) for byte in sent)

    def _clock(self, byte: int, framing: SPIFraming) -> int:
        """One byte on the wire: `byte` in on SDI, the returned one out on SDO."""
        phase = self._phase
        if phase is _Phase.READ:
            if not self._out:
                self._out = self._reg_bytes(self.reg_addr)
            out, self._out = self._out[0], self._out[1:]
            if not self._out:
                self.reg_addr = framing.next_register(self.reg_addr)
            return out
        if phase is _Phase.WRITE:
            self._pending.append(byte)
            if len(self._pending) == self.regbytes:
                self._store(bytes(self._pending))
                self._pending = bytearray()
                if framing.write_pairs:
                    self._phase = _Phase.COMMAND
                else:
                    self.reg_addr = framing.next_register(self.reg_addr)
            return framing.idle
        if phase is _Phase.COMMAND:
            self._pending.append(byte)
            if len(self._pending) == framing.command_bytes:
                decoded = framing.decode(bytes(self._pending))
                self._pending = bytearray()
                if decoded is None:
                    self._phase = _Phase.IGNORED
                else:
                    read, self.reg_addr = decoded
                    if not read:
                        self._phase = _Phase.WRITE
                    elif framing.dummy_bytes:
                        self._phase, self._left = _Phase.DUMMY, framing.dummy_bytes
                    else:
                        self._phase = _Phase.READ
            return framing.idle
        if phase is _Phase.DUMMY:
            self._left -= 1
            if not self._left:
                self._phase = _Phase.READ
        return framing.idle

    def _store(self, data: bytes) -> None:
        value = int.from_bytes(data, self.byteorder)
        with self._writes_lock:
            self._writes.append((self.reg_addr, value))
        self.reg_write(self.reg_addr, value)
