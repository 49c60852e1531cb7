"""The SPI bus's message-level interface: what a handler on a chip select answers.

A `SPIMessage` is the transfers between one assertion of a chip select and its
release (or a part of them, when the message is longer than the virtqueue), each an
`SPITransfer` with its head's parameters, TX and, once answered, RX and result. A
`SPIHandler` answers it; a `SPIObserver` watches it go by. `roadtest.backend.spi`
builds and serves them; chip models answer through `roadtest.backend.spi_model`,
golden traces through the replayer's player, and the recorder observes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from roadtest.trace.spi import VIRTIO_SPI_TRANS_ERR

if TYPE_CHECKING:
    from roadtest.models.base import SPIModel


class SPITransfer:
    """One transfer (one request) as it crosses the bus: its head's fields, what the host
    shifts out (`tx`, wire order; None for a half-duplex read), whether it reads back
    (`rx_wanted`), its length in bytes, and the answer: `rx` (wire order, exactly `length`
    bytes once answered) and `result`, TRANS_ERR until a handler answers OK."""

    __slots__ = (
        "cs",
        "bits_per_word",
        "cs_change",
        "tx_nbits",
        "rx_nbits",
        "mode",
        "freq",
        "word_delay_ns",
        "cs_setup_ns",
        "cs_hold_ns",
        "cs_inactive_ns",
        "tx",
        "rx_wanted",
        "length",
        "rx",
        "result",
    )

    def __init__(
        self,
        cs: int,
        bits_per_word: int = 8,
        cs_change: int = 0,
        tx_nbits: int = 0,
        rx_nbits: int = 0,
        mode: int = 0,
        freq: int = 0,
        word_delay_ns: int = 0,
        cs_setup_ns: int = 0,
        cs_hold_ns: int = 0,
        cs_inactive_ns: int = 0,
        tx: bytes | None = None,
        rx_wanted: bool = False,
        length: int = 0,
    ) -> None:
        self.cs = cs
        self.bits_per_word = bits_per_word
        self.cs_change = cs_change
        self.tx_nbits = tx_nbits
        self.rx_nbits = rx_nbits
        self.mode = mode
        self.freq = freq
        self.word_delay_ns = word_delay_ns
        self.cs_setup_ns = cs_setup_ns
        self.cs_hold_ns = cs_hold_ns
        self.cs_inactive_ns = cs_inactive_ns
        self.tx = tx
        self.rx_wanted = rx_wanted
        self.length = length
        self.rx: bytes = b""
        self.result = VIRTIO_SPI_TRANS_ERR

    def __repr__(self) -> str:
        tx = "-" if self.tx is None else self.tx.hex(" ")
        return (
            f"SPITransfer(cs={self.cs}, {self.length}B, bpw={self.bits_per_word}, "
            f"mode={self.mode:#x}, {self.freq} Hz, tx={tx}, rx={self.rx.hex(' ')}, "
            f"result={self.result})"
        )


class SPIMessage:
    """The transfers between one assertion of a chip select and its release, and what went
    wrong while they were answered.

    A message longer than the virtqueue comes in parts (see the module's docstring):
    `continues` says the chip select was already asserted before this part (by the part
    before it, in an earlier kick), `held` that it stays asserted after it if every
    transfer succeeds (the next kick may continue the message). A handler that does not
    look at them sees each part as a message of its own."""

    __slots__ = ("cs", "transfers", "faults", "continues", "held")

    def __init__(
        self,
        cs: int,
        transfers: list[SPITransfer],
        continues: bool = False,
        held: bool = False,
    ) -> None:
        self.cs = cs
        self.transfers = transfers
        self.faults: list[tuple[str, BaseException]] | None = None
        self.continues = continues
        self.held = held

    def fault(self, where: str, exc: BaseException) -> None:
        """Report what a handler's model raised (or its own complaint): `where` names it,
        e.g. "TMP121.transfer(2)". The transfer it was serving should stay TRANS_ERR."""
        if self.faults is None:
            self.faults = []
        self.faults.append((where, exc))

    def __repr__(self) -> str:
        return f"SPIMessage(cs={self.cs}, {self.transfers!r})"


class SPIHandler(Protocol):
    """What answers the messages on one chip select.

    `message` sets each transfer's `rx` (exactly `length` bytes, wire order) and its
    `result` to OK, in order, as far as it succeeds; a transfer left at TRANS_ERR fails,
    with every one after it. `name` says what answers, for reports ("TMP121").

    A handler that follows a message across parts (`SPIMessage.held`) may also have a
    `release()` method: the bus calls it when it releases a chip select it had held after
    a part (the message ended in a later kick without more transfers for it)."""

    name: str

    def message(self, message: SPIMessage) -> None: ...


class SPIObserver(Protocol):
    """Sees one chip select's messages: `begin` before the handler answers, `end` with the
    answers that went back to the driver (a failed transfer's RX empty)."""

    def begin(self, message: SPIMessage) -> None: ...

    def end(self, message: SPIMessage) -> None: ...


# What goes on a chip select: what answers (a chip model, behind the model adapter, or a
# handler), and who observes.
SPITarget = tuple["SPIModel | SPIHandler", SPIObserver | None]
