"""The bus's transfer-level interface: what a handler at an I2C address answers.

A `Transfer` is the consecutive messages of one virtio-i2c request group to
one address (an I2C_RDWR or an SMBus call), each with its wire flags, length
and data. A `TransferHandler` answers it message by message; a
`TransferObserver` watches it go by. `roadtest.backend.i2c` builds and
serves them; chip models answer through `roadtest.backend.i2c_model`, golden
traces through the replayer's player, and the recorder observes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Protocol

from roadtest.trace.i2c import VIRTIO_I2C_FLAGS_M_RD, VIRTIO_I2C_MSG_ERR


class I2CMessage:
    """One message of a transfer, as it crosses the bus.

    `flags` are the request's virtio-i2c flags (M_RD, FAIL_NEXT); `length` the
    bytes read, or written; `data` what was written, or for a read the answer
    (b"" until answered, and when it failed). `status` is what goes back to the
    driver: ERR until a handler answers OK.
    """

    __slots__ = ("flags", "length", "data", "status")

    def __init__(self, flags: int, length: int, data: bytes) -> None:
        self.flags = flags
        self.length = length
        self.data = data
        self.status = VIRTIO_I2C_MSG_ERR

    @property
    def reading(self) -> bool:
        return bool(self.flags & VIRTIO_I2C_FLAGS_M_RD)

    def __repr__(self) -> str:
        kind = "read" if self.reading else "write"
        return f"I2CMessage({kind}, {self.length}, {self.data!r}, status={self.status})"


class Transfer:
    """Consecutive messages of one group to one 7-bit address, and what went wrong."""

    __slots__ = ("addr", "messages", "faults")

    def __init__(self, addr: int, messages: list[I2CMessage]) -> None:
        self.addr = addr
        self.messages = messages
        # What went wrong, (where, exception); None when nothing did (the hot path
        # allocates no list).
        self.faults: list[tuple[str, BaseException]] | None = None

    def fault(self, where: str, exc: BaseException) -> None:
        """Report what a handler's model raised (or its own complaint): `where` names it,
        e.g. "OPT3001.read(2)". The message it was serving should stay ERR."""
        if self.faults is None:
            self.faults = []
        self.faults.append((where, exc))

    def __repr__(self) -> str:
        return f"Transfer({self.addr:#04x}, {self.messages!r})"


class TransferHandler(Protocol):
    """What answers the transfers to one address.

    `transfer` sets each message's status to OK (and a read's data) as far as it
    succeeds; a message left at ERR fails, with every one after it. `name` says
    what answers, for reports ("OPT3001").
    """

    name: str

    def transfer(self, transfer: Transfer) -> None: ...


class TransferObserver(Protocol):
    """Sees one address's transfers: `begin` before the handler answers, `end` with the
    answers that went back to the driver (failed and skipped messages included)."""

    def begin(self, transfer: Transfer) -> None: ...

    def end(self, transfer: Transfer) -> None: ...


# What goes on the bus at an address: the handler that answers, and who observes.
BusTarget = tuple[TransferHandler, TransferObserver | None]


# Standard mode: what a bus whose devicetree node gives no clock-frequency runs at.
DEFAULT_BUS_HZ: Final = 100_000


def bus_time_ns(messages: Sequence[I2CMessage], hz: int) -> int:
    """How long `messages` take on an I2C bus clocked at `hz` (UM10204, 3.1): a START (or
    repeated START) and the address byte before each message, each byte 8 bits and an
    acknowledge bit, and one STOP at the end; a bit is a clock period."""
    bits = sum(1 + 9 * (1 + msg.length) for msg in messages) + 1
    return bits * 1_000_000_000 // hz
