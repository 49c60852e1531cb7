"""The one adapter between the SPI bus's messages and a chip model's simple methods.

A model (`roadtest.models.base.SPIModel`) sees a message as `select()`, then
`transfer(tx, length, mode, bits_per_word)` per transfer, then `deselect()`, which
comes even when a transfer failed. The first transfer the model raises on fails, and
the rest of the message does not reach it; what it raised is reported as a fault
naming the model's class and call.

A message longer than the virtqueue reaches the adapter in parts
(`roadtest.backend.spi_transfer.SPIMessage`): the model is selected at the first part, and
deselected after the last, or when the bus releases a chip select it had held
(`release()`), so that it sees one message whatever the queue's size.
"""

from __future__ import annotations

from roadtest.backend.spi_transfer import SPIMessage
from roadtest.models.base import SPIModel
from roadtest.trace.spi import VIRTIO_SPI_TRANS_OK


class SPIModelHandler:
    """Answers messages with `model`: an SPIHandler."""

    __slots__ = ("model", "name", "selected")

    def __init__(self, model: SPIModel) -> None:
        self.model = model
        self.name = type(model).__name__
        self.selected = False  # a held message's chip select is still asserted

    def message(self, message: SPIMessage) -> None:
        model = self.model
        failed = False
        if not (message.continues and self.selected):
            if self.selected:
                self.release()
            try:
                model.select()
            except BaseException as exc:
                message.fault(f"{self.name}.select()", exc)
                failed = True
        self.selected = True
        if not failed:
            for t in message.transfers:
                try:
                    t.rx = model.transfer(t.tx, t.length, t.mode, t.bits_per_word)
                except BaseException as exc:
                    message.fault(f"{self.name}.transfer({t.length})", exc)
                    failed = True
                    break
                t.result = VIRTIO_SPI_TRANS_OK
        if failed or not message.held:
            self._deselect(message)

    def release(self) -> None:
        """The bus released the chip select a message's part held."""
        if self.selected:
            self._deselect(None)

    def _deselect(self, message: SPIMessage | None) -> None:
        self.selected = False
        try:
            self.model.deselect()
        except BaseException as exc:
            if message is None:
                raise
            message.fault(f"{self.name}.deselect()", exc)
