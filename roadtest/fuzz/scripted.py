"""A device-events script (roadtest.fuzz.events) applied to a device: a TransferHandler
around what answers for it (its model's handler, or a recorder's), which takes the
script's events in order, each before the device's next transfer.

- `Pass(n)`: the next n transfers go as the handler answers them (n = 0: none).
- `RegisterChange(name, address, value)`: the model's register holds `value` from now on
  (a model with `regs`, as the register-map models have).
- `InterruptChange(line, asserted)`: the device's output on its GPIO line `line` is
  asserted or released. A model with an interrupt pin (models.interrupt.InterruptPin,
  on its `irq` line) sets its pin, with the pin's polarity and drive; any other line is
  taken as active low (the usual I2C interrupt output).
- `TransferFails(k)`: the next transfer's messages before k complete, and message k and
  every later one fail (VIRTIO_I2C_MSG_ERR: a NACK and a bus error are one status).

On SPI (`ScriptedSPIHandler`) a device's "transfer" here is one message (a chip-select
assertion), and its "messages" are the message's SPI transfers: `TransferFails(k)` lets
transfers 0..k-1 reach the device and answers k and every later one with TRANS_ERR (the
one failure virtio-spi has for a transfer whose parameters were valid), `Pass(n)` lets n
messages go; the other events are the same.

Events are applied when the next transfer comes, so a script's tail after the driver's
last transfer is not applied. `applied` counts what was.

Behind a handler that answers from a recording (`answers_from_trace`: replay's
TracePlayer) a failing transfer goes to it whole: the trace holds the failure as the
script made it on the wire, and answers it.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping, Sequence

from roadtest.backend.i2c_transfer import Transfer, TransferHandler
from roadtest.backend.spi_model import SPIModelHandler
from roadtest.backend.spi_transfer import SPIHandler, SPIMessage
from roadtest.fuzz.events import DeviceEvent, InterruptChange, Pass, RegisterChange, TransferFails
from roadtest.models.base import ChipModel, I2CModel, Line, SPIModel
from roadtest.models.interrupt import InterruptPin
from roadtest.trace.i2c import VIRTIO_I2C_FLAGS_M_RD, VIRTIO_I2C_MSG_ERR
from roadtest.trace.spi import VIRTIO_SPI_TRANS_ERR


class _Script:
    """A script's events, applied to `model` one transfer at a time."""

    def __init__(
        self, model: ChipModel, script: Sequence[DeviceEvent], lines: Mapping[str, Line]
    ) -> None:
        self.model = model
        self.lines = lines
        self._pending: deque[DeviceEvent] = deque(script)
        self._passing = 0  # transfers left of the current Pass
        self._lock = threading.Lock()
        self.applied = 0

    def _next(self, messages: int) -> int | None:
        """Apply the events due before a transfer of `messages` messages; the message it
        fails at, if any."""
        if self._passing:
            self._passing -= 1
            return None
        while self._pending:
            event = self._pending.popleft()
            self.applied += 1
            if isinstance(event, Pass):
                if event.transfers:
                    self._passing = event.transfers - 1
                    return None
            elif isinstance(event, RegisterChange):
                regs = getattr(self.model, "regs", None)
                if isinstance(regs, dict):
                    regs[event.address] = event.value
            elif isinstance(event, InterruptChange):
                self._interrupt(event)
            elif isinstance(event, TransferFails):
                return min(event.at_message, messages)
        return None

    def _interrupt(self, event: InterruptChange) -> None:
        model = self.model
        if isinstance(model, InterruptPin) and event.line == "irq":
            model.int_output.set(event.asserted)
            return
        line = self.lines.get(event.line)
        if line is not None:
            line.set(not event.asserted)  # active low


def _answers_from_trace(handler: object) -> bool:
    """Whether `handler` answers from a recording, failures included (TracePlayer)."""
    return bool(getattr(handler, "answers_from_trace", False))


class ScriptedHandler(_Script):
    """`inner` (what answers for `model`'s device) with `script` applied."""

    def __init__(
        self,
        inner: TransferHandler,
        model: I2CModel,
        script: Sequence[DeviceEvent],
        lines: Mapping[str, Line],
    ) -> None:
        super().__init__(model, script, lines)
        self.inner = inner
        self.name = f"scripted {getattr(inner, 'name', type(model).__name__)}"
        self.whole = _answers_from_trace(inner)

    def transfer(self, transfer: Transfer) -> None:
        with self._lock:
            fail_at = self._next(len(transfer.messages))
        if fail_at is None or self.whole:
            self.inner.transfer(transfer)
            return
        served = transfer.messages[:fail_at]
        if served:
            self.inner.transfer(Transfer(transfer.addr, served))
        for msg in transfer.messages[fail_at:]:
            msg.status = VIRTIO_I2C_MSG_ERR
            if msg.flags & VIRTIO_I2C_FLAGS_M_RD:
                msg.data = b""


class ScriptedSPIHandler(_Script):
    """An SPIHandler: `inner` (what answers on `model`'s chip select: the model itself, or
    a handler) with `script` applied, a message at a time."""

    def __init__(
        self,
        inner: SPIModel | SPIHandler,
        model: SPIModel,
        script: Sequence[DeviceEvent],
        lines: Mapping[str, Line],
    ) -> None:
        super().__init__(model, script, lines)
        self.inner: SPIHandler = SPIModelHandler(inner) if isinstance(inner, SPIModel) else inner
        self.name = f"scripted {self.inner.name}"
        self.whole = _answers_from_trace(self.inner)

    def message(self, message: SPIMessage) -> None:
        with self._lock:
            fail_at = self._next(len(message.transfers))
        if fail_at is None or self.whole:
            self.inner.message(message)
            return
        served = message.transfers[:fail_at]
        if served:
            part = SPIMessage(message.cs, served)
            self.inner.message(part)
            for where, exc in part.faults or ():
                message.fault(where, exc)
        for t in message.transfers[fail_at:]:
            t.result = VIRTIO_SPI_TRANS_ERR
            t.rx = b""
