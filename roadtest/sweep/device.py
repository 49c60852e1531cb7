"""The sweep's default invented device: a register file, which any I2C or SPI driver can be
bound against without a model written for its chip.

A write is read back. A register never written answers what a *plan* says: for each
register it lists, the value it holds from power-on; for the others, the plan's default.
The plan is drawn whole, by Hypothesis (`plans()`), before the example runs: the driver's
transfers reach the device on the backend's thread, where nothing may be drawn. It shrinks
towards the plain device (no register listed, every one answering 0), and favours the
values the driver's source compares against (constants.py), so that a probe checking an ID
register gets past it.

The framing, parameters for the variety drivers expect:

- `value_bits` 8 or 16, in `byteorder` (the SMBus word order, little-endian, is the
  default; regmap's 16-bit values default to big-endian); `address_bits` 8 or 16 (an
  EEPROM-style 16-bit register address, most significant byte first unless
  `address_byteorder` says otherwise).
- A write's first address bytes set the register pointer; each following group of value
  bytes writes the next register (auto-increment). A last group cut short replaces the
  register's first bytes in transmission order (a device latches bytes as they come).
  A write shorter than the address changes nothing, as a device whose address phase is
  cut off by a stop.
- A read returns registers from the pointer on. The pointer moves past every register a
  message touched, so a plain read without a register pointer (an SMBus receive byte, an
  I2C read) continues from the last address, as register-file chips with auto-increment
  do. A read that ends inside a register returns that register's first bytes.
- Addresses wrap at the top of their width.
- SMBus block commands (`block_commands`: they are the chip's, nothing on the bus tells
  them apart): a read right after the command byte answers the byte count, then the
  data (the registers' bytes from the command on); a block write stores its data there
  and its length is what the next block read counts. A block never written counts the
  plan's `block_length` bytes. Through virtio-i2c a block read reaches the device as a
  one-byte read (6.12's i2c-virtio does not implement I2C_M_RECV_LEN), so only the count
  gets back to the driver.

The register file never refuses: a sweep is after the driver's crashes, not the model's
complaints. Every register write is logged, as `SMBusModel`'s are.

On SPI (`SPIRegisterFile`) the same registers (a `RegisterFile` holds them, by the same
plan) are framed as an `SPIFraming` says (roadtest.models.spi_registers): a command with a
read/write bit and the register address, then the registers' bytes from there on, the
address counting on. Which framing is a guess from the driver's source (`spi_framing`):
its `struct regmap_config`'s `reg_bits`, `val_bits`, `pad_bits`, `read_flag_mask` and
`write_flag_mask` as regmap puts them on the wire (drivers/base/regmap/regmap.c: a flag
mask's byte i is ORed into the formatted register's byte i; regmap-spi.c's
`read_flag_mask = 0x80` when the config sets neither), else the common convention: an
8-bit command, bit 7 set for a read, the address in bits 6..0. It takes any mode, word
size and chip select polarity, and a message that ends inside a register being written
writes that register's first bytes, as on I2C.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from hypothesis import strategies as st

from roadtest.models.base import SMBusModel
from roadtest.models.spi_registers import SPIFraming, SPIRegisters, _Phase
from roadtest.sweep.constants import Symbols, _inside, _split

ByteOrder = Literal["little", "big"]

# SMBus's largest block (I2C_SMBUS_BLOCK_MAX in the kernel's include/uapi/linux/i2c.h).
BLOCK_MAX = 32
# How many registers a plan lists at most: a probe reads a handful of ID and status ones.
PLAN_REGISTERS = 16


@dataclass(frozen=True)
class RegisterPlan:
    """What a register file's registers hold before the driver writes them."""

    registers: tuple[tuple[int, int], ...] = ()  # (address, value)
    default: int = 0  # what the others hold
    block_length: int = 1  # the byte count of a block command never written

    def answer(self, address: int) -> int:
        """The value register `address` holds until written."""
        return dict(self.registers).get(address, self.default)

    def __str__(self) -> str:
        parts = [f"register {a:#x} holds {v:#x}" for a, v in self.registers]
        parts.append(f"{'the others hold' if parts else 'every register holds'} {self.default:#x}")
        if self.block_length != 1:
            parts.append(f"a block counts {self.block_length} bytes")
        return "; ".join(parts)


def _check_bits(name: str, bits: int) -> int:
    if bits not in (8, 16):
        raise ValueError(f"{name} must be 8 or 16, not {bits}")
    return bits


def _chunks(value: int, bits: int) -> list[int]:
    """A value as registers of `bits` hold it: itself if it fits, else its pieces (an ID
    compared whole, `== 0x5449`, is read from two 8-bit registers), low first."""
    mask = (1 << bits) - 1
    if value <= mask:
        return [value]
    pieces = []
    while value:
        pieces.append(value & mask)
        value >>= bits
    return pieces


def plans(
    *,
    values: Iterable[int] = (),
    registers: Iterable[int] = (),
    pairs: Iterable[tuple[int, int]] = (),
    value_bits: int = 8,
    address_bits: int = 8,
    max_registers: int = PLAN_REGISTERS,
) -> st.SearchStrategy[RegisterPlan]:
    """Plans for a register file of `value_bits`-wide registers at `address_bits`-wide
    addresses. Values come half from `values` (the driver's mined constants, the first
    favoured when shrinking among them), half from anything the width holds; listed
    addresses half from `registers`; and a listed register may be one of `pairs`, a
    register and the value the driver compares its read with. Shrinks to RegisterPlan():
    nothing listed, every register 0."""
    vmax = (1 << _check_bits("value_bits", value_bits)) - 1
    amax = (1 << _check_bits("address_bits", address_bits)) - 1
    mined = list(dict.fromkeys(p for v in values if v >= 0 for p in _chunks(v, value_bits)))
    addresses = list(dict.fromkeys(r for r in registers if 0 <= r <= amax))
    known = [(r, v) for r, v in dict.fromkeys(pairs) if 0 <= r <= amax and 0 <= v <= vmax]

    value = st.integers(0, vmax)
    if mined:
        value = st.one_of(value, st.sampled_from(mined))
    address = st.integers(0, amax)
    if addresses:
        address = st.one_of(address, st.sampled_from(addresses))
    entry = st.tuples(address, value)
    if known:
        entry = st.one_of(entry, st.sampled_from(known))
    listed = st.lists(entry, max_size=max_registers, unique_by=lambda e: e[0])
    return st.builds(
        lambda regs, default, length: RegisterPlan(tuple(regs), default, length),
        listed,
        value,
        st.integers(1, BLOCK_MAX),
    )


class RegisterFile(SMBusModel):
    """A register file answering by `plan` (see the module's docstring)."""

    def __init__(
        self,
        plan: RegisterPlan | None = None,
        *,
        value_bits: int = 8,
        byteorder: ByteOrder = "little",
        address_bits: int = 8,
        address_byteorder: ByteOrder = "big",
        block_commands: Iterable[int] = (),
    ) -> None:
        super().__init__(regbytes=_check_bits("value_bits", value_bits) // 8, byteorder=byteorder)
        self.plan = plan or RegisterPlan()
        self.address_bytes = _check_bits("address_bits", address_bits) // 8
        self.address_byteorder: ByteOrder = address_byteorder
        self.block_commands = frozenset(block_commands)
        self._value_mask = (1 << value_bits) - 1
        self._address_mask = (1 << address_bits) - 1
        self._planned = dict(self.plan.registers)
        self.written: dict[int, int] = {}  # what the driver wrote, by address
        self.reads: list[tuple[int, int]] = []  # (address, value) the driver read, in order
        self._block_lengths: dict[int, int] = {}
        self._command: int | None = None  # a block command just sent, in this transfer

    def reset(self) -> None:
        """Power-on: nothing written, the pointer at 0, an empty write log."""
        self.written.clear()
        self.reads.clear()
        self._block_lengths.clear()
        self.reg_addr = 0
        self._command = None
        self.reset_reg_writes()

    def value(self, address: int) -> int:
        """What register `address` holds: its last write, else the plan's value."""
        if address in self.written:
            return self.written[address]
        return self._planned.get(address, self.plan.default) & self._value_mask

    # SMBusModel

    def reg_read(self, addr: int) -> int:
        return self.value(addr)

    def reg_write(self, addr: int, val: int) -> None:
        self.written[addr] = val & self._value_mask

    def _register(self, reg: int) -> str:
        return f"{reg:#0{2 + 2 * self.address_bytes}x}"

    # I2CModel

    def start_transfer(self) -> None:
        self._command = None

    def write(self, data: bytes) -> None:
        self._command = None
        if len(data) < self.address_bytes:
            return  # an address-only probe, or an address cut short: nothing happens
        address = int.from_bytes(data[: self.address_bytes], self.address_byteorder)
        values = data[self.address_bytes :]
        self.reg_addr = address & self._address_mask
        if not values:
            self._command = self.reg_addr
            return
        if self.reg_addr in self.block_commands:
            self._block_lengths[self.reg_addr] = len(values) - 1
            values = values[1:]  # the count byte: the data's length is what arrived
        self._store(values)

    def read(self, length: int) -> bytes:
        if self._command is not None and self._command in self.block_commands:
            count = min(self._block_lengths.get(self._command, self.plan.block_length), 0xFF)
            data = bytes([count]) + self._load(length - 1) if length else b""
            self._command = None
            return data
        self._command = None
        return self._load(length)

    # The register stream

    def _store(self, values: bytes) -> None:
        """Write `values` to the registers from the pointer on, and move the pointer past
        them (a partial last register: its first bytes)."""
        width = self.regbytes
        for start in range(0, len(values), width):
            piece = values[start : start + width]
            address = self.reg_addr
            old = self.value(address).to_bytes(width, self.byteorder)
            new = int.from_bytes(piece + old[len(piece) :], self.byteorder)
            with self._writes_lock:
                self._writes.append((address, new))
            self.reg_write(address, new)
            self.reg_addr = (address + 1) & self._address_mask

    def _load(self, length: int) -> bytes:
        """`length` bytes of the registers from the pointer on; the pointer moves past
        every register they touch."""
        width = self.regbytes
        out = bytearray()
        while len(out) < length:
            value = self.reg_read(self.reg_addr)
            self.reads.append((self.reg_addr, value))
            out += value.to_bytes(width, self.byteorder)
            self.reg_addr = (self.reg_addr + 1) & self._address_mask
        return bytes(out[:length])


# --- on SPI -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SPIShape:
    """How a register file sits on SPI: its framing and its registers' width and order."""

    framing: SPIFraming = SPIFraming(modes=frozenset({0, 1, 2, 3}))
    value_bits: int = 8
    byteorder: ByteOrder = "big"  # regmap's default value format on SPI
    source: str = "the common convention"  # where it came from, for the reports

    def __str__(self) -> str:
        f = self.framing
        level = "set" if f.read_level else "clear"
        return (
            f"{f.command_bits}-bit command, bit {f.read_bit} {level} to read, address "
            f"mask {f.address_mask:#x}, {f.dummy_bytes} dummy byte(s), {self.value_bits}-bit "
            f"{self.byteorder}-endian registers ({self.source})"
        )


ALL_MODES = frozenset({0, 1, 2, 3})
_REGMAP_CONFIG = re.compile(
    r"\bstruct\s+regmap_config\s+(?:__\w+\s+)*(\w+)\s*(?:\[[^\]]*\]\s*)?(?:__\w+\s*)*=\s*\{"
)
# regmap-spi.c's read flag, when a config sets neither mask.
REGMAP_SPI_READ_FLAG = 0x80


def _members(body: str) -> dict[str, str]:
    members = {}
    for item in _split(body):
        named = re.match(r"\s*\.(\w+)\s*=(.*)$", item, re.S)
        if named:
            members[named.group(1)] = named.group(2).strip()
    return members


def spi_shape(code: str) -> SPIShape:
    """The SPI framing comment-free C code suggests (see the module's docstring): that of its
    first `struct regmap_config` (one whose name says spi first), else the convention."""
    configs = [(m.group(1), _inside(code, m.end())) for m in _REGMAP_CONFIG.finditer(code)]
    if not configs:
        return SPIShape()
    configs.sort(key=lambda c: "spi" not in c[0].lower())
    name, body = configs[0]
    return _regmap_shape(name, _members(body), Symbols(code)) or SPIShape()


def _regmap_shape(name: str, members: dict[str, str], symbols: Symbols) -> SPIShape | None:
    def value(member: str, default: int) -> int | None:
        text = members.get(member)
        return default if text is None else symbols.evaluate(text)

    reg_bits, val_bits, pad_bits = value("reg_bits", 0), value("val_bits", 0), value("pad_bits", 0)
    read_mask, write_mask = value("read_flag_mask", 0), value("write_flag_mask", 0)
    if None in (reg_bits, val_bits, pad_bits, read_mask, write_mask):
        return None  # a member this reader cannot evaluate
    assert reg_bits is not None and val_bits is not None and pad_bits is not None
    assert read_mask is not None and write_mask is not None
    if reg_bits not in (8, 16) or val_bits not in (8, 16) or pad_bits % 8:
        return None
    if not read_mask and not write_mask:
        read_mask = REGMAP_SPI_READ_FLAG
    command_bytes = reg_bits // 8

    def on_wire(mask: int) -> int:
        # regmap_set_work_buf_flag_mask(): the mask's byte i goes into the command's byte
        # i, the first on the wire (the most significant of the command word).
        word = 0
        for i in range(command_bytes):
            word |= ((mask >> (8 * i)) & 0xFF) << (8 * (command_bytes - 1 - i))
        return word

    reads, writes = on_wire(read_mask), on_wire(write_mask)
    flag = reads or writes
    if not flag:
        return None
    read_bit = flag.bit_length() - 1
    flags = reads | writes
    lowest = (flags & -flags).bit_length() - 1
    if lowest > 0:
        address = (1 << lowest) - 1  # the flags above the address (bit 7 read, bit 6 multi)
    else:  # the flags below it (bit 0 read): the address above the highest
        address = ((1 << reg_bits) - 1) & ~((1 << flags.bit_length()) - 1)
    if not address:
        return None
    try:
        framing = SPIFraming(
            command_bits=reg_bits,
            read_bit=read_bit,
            read_level=1 if reads else 0,
            address_mask=address,
            dummy_bytes=pad_bits // 8,
            modes=ALL_MODES,
        )
    except ValueError:
        return None  # flags among the address bits: not a framing SPIFraming holds
    return SPIShape(framing, val_bits, "big", f"regmap_config {name}")


class SPIRegisterFile(SPIRegisters):
    """A register file on SPI: `RegisterFile`'s registers by `plan`, framed as `shape`
    says; it never refuses (see the module's docstring)."""

    def __init__(self, plan: RegisterPlan | None = None, shape: SPIShape | None = None) -> None:
        self.shape = shape or SPIShape()
        super().__init__(regbytes=self.shape.value_bits // 8, byteorder=self.shape.byteorder)
        self.registers = RegisterFile(
            plan, value_bits=self.shape.value_bits, byteorder=self.shape.byteorder
        )
        self.plan = self.registers.plan
        self.reads = self.registers.reads  # (address, value) the driver read, in order
        self.written = self.registers.written
        self.select()

    def reg_read(self, addr: int) -> int:
        value = self.registers.value(addr)
        self.reads.append((addr, value))
        return value

    def reg_write(self, addr: int, val: int) -> None:
        self.registers.reg_write(addr, val)

    def transfer(self, tx: bytes | None, length: int, mode: int, bits_per_word: int) -> bytes:
        """Any mode and word size: the bytes on the wire, clocked through the framing."""
        framing = self.shape.framing
        sent: Iterable[int] = tx if tx is not None else bytes(length)
        return bytes(self._clock(byte, framing) for byte in sent)

    def deselect(self) -> None:
        """A register written in part: its first bytes replaced, in transmission order."""
        if self._phase is _Phase.WRITE and self._pending:
            piece = bytes(self._pending)
            old = self.registers.value(self.reg_addr).to_bytes(self.regbytes, self.byteorder)
            self._store(piece + old[len(piece) :])
        self._pending = bytearray()
