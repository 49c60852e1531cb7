"""Model base classes: what the I2C and SPI buses' model adapters call, and SMBus register
devices.

Models know nothing of the backend (`roadtest.backend.i2c_model` and
`roadtest.backend.spi_model` adapt a model to its bus's transfers), not even its GPIO
lines (`Line` is what a model needs of one). What every chip has whatever its bus (its
lines, its clock, the test's inputs) is `ChipModel`'s; `I2CModel` and `SPIModel` add
only what their bus calls. What a test sets on a model, it declares as `Input`s.

Models run on the backend's thread (the driver's transfers) and are read and
changed by the test's thread; state both touch must be safe for that (the
register-write log here takes a lock). Models do not need a running backend:
they can be built and exercised directly, as the unit tests do.
"""

from __future__ import annotations

import enum
import sys
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, Protocol, TypeVar

from roadtest.simtime.clock import INSTANT, Clock
from roadtest.text import count

T = TypeVar("T")
InputWatcher = Callable[[str, Any], None]


class Line(Protocol):
    """A GPIO line as a model sees it (the backend's GpioLine is one; models do not
    depend on the backend): the level the model drives, and what the driver drives."""

    @property
    def input(self) -> bool:
        """The level the model drives onto the line."""
        ...

    @property
    def output(self) -> bool:
        """The level the driver drives (for a line configured as an output)."""
        ...

    def set(self, level: bool) -> None:
        """Drive the line to `level` (from any thread)."""
        ...


class ModelError(Exception):
    """A model refuses what the driver did (the bus NACKs it and the test is told)."""


class NoInitial(enum.Enum):
    """The type of NO_INITIAL: an `Input` declared without a power-on value."""

    NO_INITIAL = enum.auto()


NO_INITIAL: Final = NoInitial.NO_INITIAL


class Input(Generic[T]):
    """A model attribute that the test sets: what the chip senses (a light level, a
    proximity count). Declare it in the model's class, `result = Input[int]()`, and set
    it like any attribute; each set the test makes is reported to the model's input
    watcher (the recorder writes it to the trace as an `inject` marker). A set made by
    one of the model's own methods (`self.result = ...`, whoever called the method) is
    the model's bookkeeping, not the test's input, and is not reported. Reads are plain
    attribute reads: the descriptor has no __get__, so the value lives in the instance.

    `bits`: the value is a register's (or a register pair's) of that width, so traces and
    reports show it in hex, `Input[int](bits=16)` as 0x3456; without it, as it is.
    `initial`: the value at power-on, which a model's `reset()` puts back
    (`roadtest.models.regmap.MappedSMBusModel` sets it; other models set their
    inputs in `__init__`)."""

    __slots__ = ("bits", "initial", "name")

    def __init__(self, bits: int | None = None, *, initial: T | NoInitial = NO_INITIAL) -> None:
        self.bits = bits
        self.initial = initial

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    if TYPE_CHECKING:

        def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __set__(self, obj: object, value: T) -> None:
        state = obj.__dict__
        watcher = state.get("_input_watcher")
        if watcher is not None and sys._getframe(1).f_locals.get("self") is not obj:
            watcher(self.name, value)  # before the set: a recorder settles the guest first
        state[self.name] = value


def declared_inputs(cls: type) -> dict[str, Input[Any]]:
    """{attribute: Input} of a model class, its bases' included (a subclass's wins)."""
    found: dict[str, Input[Any]] = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            if isinstance(value, Input):
                found[name] = value
    return found


def saved_inputs(model: object) -> dict[str, Any]:
    """The current values of `model`'s `Input`s, for `restore_inputs`."""
    state = model.__dict__
    return {name: state[name] for name in declared_inputs(type(model)) if name in state}


def restore_inputs(model: object, values: Mapping[str, Any]) -> None:
    """Put `model`'s `Input`s back to `values` (from `saved_inputs`): the model's own
    bookkeeping, not a test's set, so no watcher hears of it."""
    model.__dict__.update(values)


class ChipModel:
    """What every chip model has, whichever bus it sits on.

    `irq` is the GPIO line the device's interrupt output drives, when the test
    harness wires one (`self.irq.set(True)` asserts it); the harness sets
    other named lines as attributes the same way.

    `clock` is the model's time (roadtest.simtime.clock): under simulated time the
    guest's, on which `clock.after(delay, fn)` does work when the datasheet says it is
    done; otherwise work is done at once (the harness sets it).
    """

    irq: Line | None = None
    clock: Clock = INSTANT

    def watch_inputs(self, watcher: InputWatcher | None) -> None:
        """Have `watcher(name, value)` called before every set of one of this model's
        `Input`s (None: stop). Sets come from whichever thread makes them."""
        self.__dict__["_input_watcher"] = watcher


class I2CModel(ChipModel):
    """One I2C target device at one address.

    The bus (through `roadtest.backend.i2c_model.ModelHandler`) calls
    `write(data)` for a write message and `read(length)` for a
    read message, which must return exactly `length` bytes. `start_transfer()`
    and `end_transfer()` bracket one transfer (the messages of one I2C_RDWR or
    SMBus call, joined by repeated starts), so a model may keep state from one
    message to the next, e.g. a register pointer written and then read.

    Zero-length messages (SMBus quick commands, address probes) reach the model
    as `write(b"")` and `read(0)`. Raising from any of these NACKs the message
    (and the rest of its transfer) and reports the exception with the test.
    """

    def start_transfer(self) -> None:
        """A transfer that addresses this device begins."""

    def end_transfer(self) -> None:
        """The transfer is over (after its last message, successful or not)."""

    def write(self, data: bytes) -> None:
        raise ModelError(f"{type(self).__name__} does not accept writes")

    def read(self, length: int) -> bytes:
        raise ModelError(f"{type(self).__name__} does not accept reads")


# The virtio-spi transfer head's `mode` bits (the virtio specification's "SPI Controller
# Device" section), which SPIModel.transfer takes as they came; roadtest.trace.spi names
# them for the wire too.
VIRTIO_SPI_CPHA: Final = 1 << 0
VIRTIO_SPI_CPOL: Final = 1 << 1
VIRTIO_SPI_CS_HIGH: Final = 1 << 2
VIRTIO_SPI_MODE_LSB_FIRST: Final = 1 << 3
VIRTIO_SPI_MODE_LOOP: Final = 1 << 4


def word_bytes(bits_per_word: int) -> int:
    """How many bytes of a buffer hold one word (Linux's spi_transfer convention)."""
    return 1 if bits_per_word <= 8 else 2 if bits_per_word <= 16 else 4


class SPIModel(ChipModel):
    """One SPI device on one chip select.

    The bus (through `roadtest.backend.spi_model.SPIModelHandler`) hands it each
    message, the transfers between the chip select's assertion and its release:
    `select()`, then `transfer(tx, length, mode, bits_per_word)` per transfer, then
    `deselect()`, which comes even when a transfer failed. SPI is full duplex: while
    the host shifts `tx` out (None when it sends nothing it cares about, a half-duplex
    read), the device shifts back exactly `length` bytes, which `transfer` returns (for
    a half-duplex write the host drops them). Bytes are in wire order: the first byte
    is the first on the wire, and a word wider than 8 bits is its 2 or 4 bytes most
    significant first, whatever the guest's memory holds. `mode` is the transfer's
    virtio-spi mode bits (VIRTIO_SPI_CPHA and the others above).
    Raising from any of these fails the transfer (and the rest of its message) with
    TRANS_ERR and reports the exception with the test.
    """

    def select(self) -> None:
        """The chip select was asserted: a message begins."""

    def deselect(self) -> None:
        """The chip select was released (after the message's last transfer, successful
        or not)."""

    def transfer(self, tx: bytes | None, length: int, mode: int, bits_per_word: int) -> bytes:
        raise ModelError(f"{type(self).__name__} does not answer transfers")


class SMBusModel(I2CModel):
    """A device with a register pointer and `regbytes`-wide registers.

    - A write's first byte sets the register pointer; each following group of
      `regbytes` bytes is written (in `byteorder`) to the next register: the
      pointer's register, then pointer + 1, and so on. A write of the pointer
      alone only sets the pointer; a value length that is not a multiple of
      `regbytes` is a model error.
    - A read returns registers from the pointer on, pointer + 1, ...
      A read that ends inside a register returns that register's first bytes
      (in transmission order, i.e. `byteorder`): a real device shifts the
      register out byte by byte and the host simply stops clocking, so e.g. an
      SMBus read_byte on a 16-bit big-endian device gets the high byte. The
      partly read register is read (with its side effects) like a whole one.
    - The pointer does not move after a transfer: each read from the same
      pointer starts at the same register. (Drivers set the pointer before
      each access; devices differ here, and a model can override `read`.)
    - Register addresses wrap at 0xff, like an 8-bit pointer.

    Every register write the driver makes is logged, for the assertions below.
    """

    def __init__(self, regbytes: int, byteorder: Literal["little", "big"] = "little") -> None:
        if regbytes < 1:
            raise ValueError(f"regbytes must be at least 1, not {regbytes}")
        self.regbytes = regbytes
        self.byteorder: Literal["little", "big"] = byteorder
        self.reg_addr = 0
        self._writes: list[tuple[int, int]] = []
        self._writes_lock = threading.Lock()

    # What subclasses implement

    def reg_read(self, addr: int) -> int:
        raise ModelError(f"{type(self).__name__}: register {addr:#04x} cannot be read")

    def reg_write(self, addr: int, val: int) -> None:
        raise ModelError(f"{type(self).__name__}: register {addr:#04x} cannot be written")

    # I2CModel

    def write(self, data: bytes) -> None:
        if not data:
            return  # an address-only write (quick command): nothing to do
        self.reg_addr = data[0]
        values = len(data) - 1
        regbytes = self.regbytes
        if values % regbytes:
            raise ModelError(
                f"{type(self).__name__}: write of {values} value bytes to register {data[0]:#04x} "
                f"is not a whole number of {regbytes}-byte registers"
            )
        for i in range(values // regbytes):
            addr = (self.reg_addr + i) & 0xFF
            val = int.from_bytes(data[1 + i * regbytes : 1 + (i + 1) * regbytes], self.byteorder)
            with self._writes_lock:
                self._writes.append((addr, val))
            self.reg_write(addr, val)

    def read(self, length: int) -> bytes:
        regbytes = self.regbytes
        if length == regbytes:  # the common case: one register
            return self._reg_bytes(self.reg_addr)
        count = -(-length // regbytes)
        data = b"".join(self._reg_bytes((self.reg_addr + i) & 0xFF) for i in range(count))
        return data[:length]

    def _reg_bytes(self, addr: int) -> bytes:
        value = self.reg_read(addr)
        try:
            return value.to_bytes(self.regbytes, self.byteorder)
        except (OverflowError, AttributeError, TypeError):
            # Only on the error path: the check costs nothing on every good read.
            raise ModelError(
                f"{type(self).__name__} read of register {addr:#04x} returned {_show(value)}, "
                f"which does not fit {8 * self.regbytes} bits"
            ) from None

    # The write log

    def _fmt(self, value: int) -> str:
        return f"{value:#0{2 + 2 * self.regbytes}x}"

    def _register(self, reg: int) -> str:
        """How the write log's messages name a register."""
        return f"{reg:#04x}"

    def _describe(self, reg: int, writes: list[int]) -> str:
        if not writes:
            return f"register {self._register(reg)} was never written"
        return (
            f"register {self._register(reg)} was written {count(len(writes), 'time')}: "
            + ", ".join(self._fmt(v) for v in writes)
        )

    def reg_writes(self, reg: int) -> list[int]:
        """The values the driver wrote to `reg`, oldest first."""
        with self._writes_lock:
            return [val for addr, val in self._writes if addr == reg]

    def all_reg_writes(self) -> list[tuple[int, int]]:
        """Every (register, value) the driver wrote, in order."""
        with self._writes_lock:
            return list(self._writes)

    def reset_reg_writes(self) -> None:
        with self._writes_lock:
            self._writes.clear()

    def get_last_reg_write(self, reg: int) -> int:
        writes = self.reg_writes(reg)
        if not writes:
            raise AssertionError(self._describe(reg, writes))
        return writes[-1]

    def assert_reg_write_once(self, reg: int, value: int) -> None:
        writes = self.reg_writes(reg)
        if writes != [value]:
            raise AssertionError(
                f"expected register {self._register(reg)} to be written once with "
                f"{self._fmt(value)}; " + self._describe(reg, writes)
            )

    def assert_last_reg_write(self, reg: int, value: int) -> None:
        writes = self.reg_writes(reg)
        if not writes or writes[-1] != value:
            raise AssertionError(
                f"expected the last write to register {self._register(reg)} to be "
                f"{self._fmt(value)}; " + self._describe(reg, writes)
            )


def _show(value: object) -> str:
    return f"{value:#x}" if isinstance(value, int) else repr(value)


class SimpleSMBusModel(SMBusModel):
    """Registers in a dict: reads return them, writes store them; other addresses NACK."""

    def __init__(
        self,
        regs: Mapping[int, int],
        regbytes: int = 1,
        byteorder: Literal["little", "big"] = "little",
    ) -> None:
        super().__init__(regbytes=regbytes, byteorder=byteorder)
        self.regs = dict(regs)

    def reg_read(self, addr: int) -> int:
        try:
            return self.regs[addr]
        except KeyError:
            raise ModelError(
                f"{type(self).__name__}: read of unknown register {addr:#04x}"
            ) from None

    def reg_write(self, addr: int, val: int) -> None:
        if addr not in self.regs:
            raise ModelError(
                f"{type(self).__name__}: write of {self._fmt(val)} to unknown register {addr:#04x}"
            )
        self.regs[addr] = val
