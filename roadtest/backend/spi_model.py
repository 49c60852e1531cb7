"""The one adapter between the SPI bus's messages and a chip model's simple methods.

A model (`roadtest.models.base.SPIModel`) sees a message as `select()`, then
`transfer(tx, length, mode, bits_per_word)` per transfer, then `deselect()`, which
comes even when a transfer failed. The first transfer the model raises on fails, and
the rest of the message does not reach it; what it raised is reported as a fault
naming the model's class and call.
"""

from __future__ import annotations

from roadtest.backend.spi import SPIMessage
from roadtest.models.base import SPIModel
from roadtest.trace.spi import VIRTIO_SPI_TRANS_OK


class SPIModelHandler:
    """Answers messages with `model`: an SPIHandler."""

    __slots__ = ("model", "name")

    def __init__(self, model: SPIModel) -> None:
        self.model = model
        self.name = type(model).__name__

    def message(self, message: SPIMessage) -> None:
        model = self.model
        try:
            model.select()
        except BaseException as exc:
            message.fault(f"{self.name}.select()", exc)
        else:
            for t in message.transfers:
                try:
                    t.rx = model.transfer(t.tx, t.length, t.mode, t.bits_per_word)
                except BaseException as exc:
                    message.fault(f"{self.name}.transfer({t.length})", exc)
                    break
                t.result = VIRTIO_SPI_TRANS_OK
        try:
            model.deselect()
        except BaseException as exc:
            message.fault(f"{self.name}.deselect()", exc)
