"""The one adapter between the bus's transfers and a chip model's simple methods.

A model (`roadtest.models.base.I2CModel`) sees a transfer as
`start_transfer()`, then `write(data)` or `read(length)` per message, then
`end_transfer()`, which comes even when a message failed. The first message
the model raises on fails, and the rest of the transfer does not reach it;
what it raised is reported as a fault naming the model's class and call.
"""

from __future__ import annotations

from roadtest.backend.i2c_transfer import Transfer
from roadtest.models.base import I2CModel
from roadtest.trace.i2c import VIRTIO_I2C_FLAGS_M_RD, VIRTIO_I2C_MSG_OK


class ModelHandler:
    """Answers transfers with `model`: a TransferHandler."""

    __slots__ = ("model", "name")

    def __init__(self, model: I2CModel) -> None:
        self.model = model
        self.name = type(model).__name__

    def transfer(self, transfer: Transfer) -> None:
        model = self.model
        try:
            model.start_transfer()
        except BaseException as exc:
            transfer.fault(f"{self.name}.start_transfer()", exc)
        else:
            for msg in transfer.messages:
                if msg.flags & VIRTIO_I2C_FLAGS_M_RD:
                    try:
                        msg.data = model.read(msg.length)
                    except BaseException as exc:
                        transfer.fault(f"{self.name}.read({msg.length})", exc)
                        break
                else:
                    try:
                        model.write(msg.data)
                    except BaseException as exc:
                        transfer.fault(f"{self.name}.write({msg.data!r})", exc)
                        break
                msg.status = VIRTIO_I2C_MSG_OK
        try:
            model.end_transfer()
        except BaseException as exc:
            transfer.fault(f"{self.name}.end_transfer()", exc)
