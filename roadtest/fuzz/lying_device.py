"""A hostile device: a model whose answers may lie, whose transfers may fail, and whose
interrupt line may fire at any moment, all by a plan Hypothesis draws (and shrinks).

The plan is drawn whole before the example runs, on the test's thread: the driver's
transfers reach the device on the backend's thread, where nothing may be drawn. It
numbers the driver's transfers and read messages in the order they come, so the
same plan gives the same device behaviour for a driver that does the same I/O, and
Hypothesis shrinks it towards the honest model (no lies, no faults, no interrupts).

What a lie is: the model answers the read (its side effects happen, as on a real
device whose value got corrupted on the way), then the answer is replaced:
- for a model with a register map, register by register: the plan names a register
  and which of its reads lies, with a value composed from its fields (each over its
  named values and range, reserved bits set or clear: `field_values`);
- for another register model (`SMBusModel`), by a drawn value of the register's width,
  in the device's byte order, one per register the read covers;
- for any other model, by the drawn value's bytes, repeated to the read's length.

A failed transfer goes back to the driver with the virtio-i2c error status from a
drawn message on (virtio-i2c has one error status: a NACK of the address or of a data
byte and a bus error all read as it); the messages before it reach the model.

The hostile device never reports the model's complaints as faults: a driver that acts
on a lie may well do what the honest model refuses. The model's refusal is a NACK.

On SPI (`HostileSPIHandler`, plans from `spi_plans`) the plan numbers the messages (one
chip-select assertion each) and the transfers that read (those with an RX buffer). SPI
has no acknowledge and no checksum: whatever the device shifts out is what the host
reads, so a lie is any RX of the transfer's length. It replaces the model's RX (after
the model answered, its side effects done) with the drawn value's bytes (the value's
low min(length, 4) bytes most significant first, the wire's order, repeated to the
length: all zeros, all ones, a sign bit, anything), or flips the drawn bits of it (the
same pattern, XORed in). A failed message answers TRANS_ERR from a drawn transfer on
(the one failure a device can give on virtio-spi: PARAM_ERR is the controller's
refusal of a transfer's parameters before any device sees it); the transfers before it
reach the model. RX always has the transfer's length, and a transfer after a failed one
fails too, as the bus requires.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from hypothesis import strategies as st

from roadtest.backend.i2c_transfer import I2CMessage, Transfer
from roadtest.backend.spi_transfer import SPIMessage, SPITransfer
from roadtest.fuzz.strategies import field_values
from roadtest.models.base import I2CModel, Line, SMBusModel, SPIModel
from roadtest.models.regmap import RegisterMap
from roadtest.trace.i2c import VIRTIO_I2C_FLAGS_M_RD, VIRTIO_I2C_MSG_ERR, VIRTIO_I2C_MSG_OK
from roadtest.trace.spi import VIRTIO_SPI_TRANS_ERR, VIRTIO_SPI_TRANS_OK

# How far into a device's life a plan reaches: the transfers and reads of one bind,
# exercise and unbind of the suite's drivers number in the tens.
PLAN_HORIZON = 96
# Values a register lie favours: the edges drivers get wrong.
_EDGES = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0xFFFFFF, 0xFFFFFFFF)


@dataclass(frozen=True)
class HostilePlan:
    """What the device does besides answering honestly, by transfer and read number."""

    lies: tuple[tuple[int, int], ...] = ()  # (read message number, value)
    # (register address, which of its reads, value): a mapped model's lies
    register_lies: tuple[tuple[int, int, int], ...] = ()
    faults: tuple[tuple[int, int], ...] = ()  # (transfer number, first failing message)
    interrupts: tuple[int, ...] = ()  # transfer numbers after which the line toggles
    flips: tuple[tuple[int, int], ...] = ()  # (read number, bits flipped): SPI's lies

    def __str__(self) -> str:
        parts = [f"read #{n} answers {value:#x}" for n, value in self.lies]
        parts += [f"read #{n} has bits {mask:#x} flipped" for n, mask in self.flips]
        parts += [
            f"read #{n} of register {reg:#04x} answers {value:#x}"
            for reg, n, value in self.register_lies
        ]
        parts += [f"transfer #{n} fails from message {m}" for n, m in self.faults]
        parts += [f"interrupt after transfer #{n}" for n in self.interrupts]
        return "; ".join(parts) or "an honest device"


def lie_values() -> st.SearchStrategy[int]:
    """Register values, boundary-heavy: 0, 1, all ones, sign bits, and anything else."""
    return st.one_of(st.sampled_from(_EDGES), st.integers(0, 0xFFFFFFFF))


def plans(
    register_map: RegisterMap | None = None,
    horizon: int = PLAN_HORIZON,
    with_interrupts: bool = True,
) -> st.SearchStrategy[HostilePlan]:
    """Plans for a hostile device (shrinking towards the honest device); with the model's
    `register_map`, its lies are register values composed from fields."""
    index = st.integers(0, horizon - 1)
    lies = st.lists(st.tuples(index, lie_values()), max_size=8, unique_by=lambda lie: lie[0])
    register_lies: st.SearchStrategy[list[tuple[int, int, int]]] = st.just([])
    readable = [reg for reg in register_map or () if reg.readable]
    if readable:
        lie = st.sampled_from(readable).flatmap(
            lambda reg: st.tuples(st.just(reg.address), st.integers(0, 15), field_values(reg))
        )
        register_lies = st.lists(lie, max_size=8, unique_by=lambda lie: lie[:2])
        lies = st.just([])
    faults = st.lists(
        st.tuples(index, st.integers(0, 2)), max_size=4, unique_by=lambda fault: fault[0]
    )
    interrupts = st.lists(index, max_size=4, unique=True) if with_interrupts else st.just([])
    return st.builds(
        lambda lie, reg_lie, fault, irq: HostilePlan(
            tuple(lie), tuple(reg_lie), tuple(fault), tuple(sorted(irq))
        ),
        lies,
        register_lies,
        faults,
        interrupts,
    )


def spi_plans(
    horizon: int = PLAN_HORIZON, with_interrupts: bool = True
) -> st.SearchStrategy[HostilePlan]:
    """Plans for a hostile SPI device (see the module's docstring), shrinking towards the
    honest device: lies, bit flips and failures by message and read number."""
    index = st.integers(0, horizon - 1)
    lies = st.lists(st.tuples(index, lie_values()), max_size=8, unique_by=lambda lie: lie[0])
    masks = st.one_of(st.sampled_from([1 << bit for bit in range(32)]), st.integers(1, 2**32 - 1))
    flips = st.lists(st.tuples(index, masks), max_size=8, unique_by=lambda flip: flip[0])
    faults = st.lists(
        st.tuples(index, st.integers(0, 2)), max_size=4, unique_by=lambda fault: fault[0]
    )
    interrupts = st.lists(index, max_size=4, unique=True) if with_interrupts else st.just([])
    return st.builds(
        lambda lie, flip, fault, irq: HostilePlan(
            lies=tuple(lie), faults=tuple(fault), interrupts=tuple(sorted(irq)), flips=tuple(flip)
        ),
        lies,
        flips,
        faults,
        interrupts,
    )


def _pattern(value: int, length: int) -> bytes:
    """`value`'s low min(length, 4) bytes, most significant first, repeated to `length`."""
    width = min(length, 4)
    if not width:
        return b""
    chunk = (value & ((1 << 8 * width) - 1)).to_bytes(width, "big")
    return (chunk * (length // width + 1))[:length]


class _Hostile:
    """What a hostile device keeps whatever its bus: the plan's lies (by read), failures
    and interrupt toggles (by exchange: an I2C transfer, an SPI message), and the counts."""

    def __init__(self, model: I2CModel | SPIModel, plan: HostilePlan, irq: Line | None) -> None:
        self.name = f"hostile {type(model).__name__}"
        self.irq = irq
        self._lies = dict(plan.lies)
        self._faults = dict(plan.faults)
        self._interrupts = frozenset(plan.interrupts)
        self._lock = threading.Lock()
        self.reads = 0
        self.refusals = 0  # the model's own complaints, answered as the bus's failure

    def _interrupt_after(self, number: int) -> None:
        """Toggle the interrupt line after exchange `number` if the plan says so."""
        if number in self._interrupts and self.irq is not None:
            self.irq.set(not self.irq.input)


class HostileSPIHandler(_Hostile):
    """An SPIHandler: `model` behind `plan` (see the module's docstring)."""

    def __init__(self, model: SPIModel, plan: HostilePlan, irq: Line | None = None) -> None:
        super().__init__(model, plan, irq)
        self.model = model
        self._flips = dict(plan.flips)
        self.messages = 0

    def message(self, message: SPIMessage) -> None:
        with self._lock:
            number = self.messages
            self.messages += 1
            failing = self._faults.get(number)
            transfers = message.transfers
            self._serve(transfers if failing is None else transfers[:failing])
            for t in transfers:
                if t.result != VIRTIO_SPI_TRANS_OK:
                    t.result = VIRTIO_SPI_TRANS_ERR
                    t.rx = b""
            self._interrupt_after(number)

    def _serve(self, transfers: list[SPITransfer]) -> None:
        model = self.model
        try:
            model.select()
            for t in transfers:
                rx = model.transfer(t.tx, t.length, t.mode, t.bits_per_word)
                t.rx = self._lie(rx, t.length) if t.rx_wanted else rx
                t.result = VIRTIO_SPI_TRANS_OK
        except Exception:  # noqa: BLE001 - the model refused what the driver did: TRANS_ERR
            self.refusals += 1
        finally:
            try:
                model.deselect()
            except Exception:  # noqa: BLE001 - as above
                self.refusals += 1

    def _lie(self, rx: bytes, length: int) -> bytes:
        number = self.reads
        self.reads += 1
        value = self._lies.get(number)
        if value is not None:
            return _pattern(value, length)
        mask = self._flips.get(number)
        if mask is not None and len(rx) == length:
            return bytes(a ^ b for a, b in zip(rx, _pattern(mask, length), strict=True))
        return rx


class HostileHandler(_Hostile):
    """A TransferHandler: `model` behind `plan` (see the module's docstring)."""

    def __init__(self, model: I2CModel, plan: HostilePlan, irq: Line | None = None) -> None:
        super().__init__(model, plan, irq)
        self.model = model
        self._register_lies = {(reg, n): value for reg, n, value in plan.register_lies}
        self._register_reads: dict[int, int] = {}
        self.transfers = 0

    def transfer(self, transfer: Transfer) -> None:
        with self._lock:
            number = self.transfers
            self.transfers += 1
            failing = self._faults.get(number)
            messages = transfer.messages
            served = messages if failing is None else messages[:failing]
            self._serve(served)
            self._interrupt_after(number)

    def _serve(self, messages: list[I2CMessage]) -> None:
        model = self.model
        try:
            model.start_transfer()
            for msg in messages:
                if msg.flags & VIRTIO_I2C_FLAGS_M_RD:
                    pointer = model.reg_addr if isinstance(model, SMBusModel) else 0
                    data = model.read(msg.length)
                    msg.data = self._lie(data, msg.length, pointer)
                else:
                    model.write(msg.data)
                msg.status = VIRTIO_I2C_MSG_OK
        except Exception:  # noqa: BLE001 - the model refused what the driver did: a NACK
            self.refusals += 1
            for msg in messages:
                if msg.status != VIRTIO_I2C_MSG_OK:
                    msg.status = VIRTIO_I2C_MSG_ERR
                    msg.data = b"" if msg.flags & VIRTIO_I2C_FLAGS_M_RD else msg.data
        finally:
            try:
                model.end_transfer()
            except Exception:  # noqa: BLE001 - as above
                self.refusals += 1

    def _lie(self, data: bytes, length: int, pointer: int) -> bytes:
        number = self.reads
        self.reads += 1
        if self._register_lies:
            return self._register_lie(data, pointer)
        value = self._lies.get(number)
        if value is None or length == 0:
            return data
        model = self.model
        if isinstance(model, SMBusModel):
            width = model.regbytes
            register = (value & ((1 << 8 * width) - 1)).to_bytes(width, model.byteorder)
        else:
            register = value.to_bytes(4, "little")
        return (register * (length // len(register) + 1))[:length]

    def _register_lie(self, data: bytes, pointer: int) -> bytes:
        """A mapped model's read from register `pointer` on: each register it covers lies
        if the plan says so for this read of it."""
        model = self.model
        assert isinstance(model, SMBusModel)
        width = model.regbytes
        out = bytearray(data)
        for i in range(0, len(data), width):
            reg = (pointer + i // width) & 0xFF
            n = self._register_reads.get(reg, 0)
            self._register_reads[reg] = n + 1
            value = self._register_lies.get((reg, n))
            if value is not None:
                raw = value.to_bytes(width, model.byteorder)
                out[i : i + width] = raw[: len(data) - i]
        return bytes(out)
