"""Recording: every I2C transfer or SPI message, GPIO request and model interrupt of a device,
per test.

`RecordingHooks` (the session's hooks in `--roadtest-record DIR` mode) puts
the test's model on the bus as in a live run and observes the device: its
transfers as they went over the wire (failed and skipped messages
included; on SPI, each message that reached the device's chip select: one the
controller refused with PARAM_ERR, or ran in loopback, reaches no device and
is not in its trace), its GPIO lines, and the `Input`s the test sets on its model. Each
test and device gets its own trace, DIR/<chip>/<test>.rtrace, flushed as it
goes so that a crash leaves a readable prefix. `roadtest record` writes DIR
as a staging directory and moves the traces into place only after a
complete, passing run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from roadtest.backend.gpio import GpioLine
from roadtest.backend.i2c_model import ModelHandler
from roadtest.backend.i2c_transfer import BusTarget, Transfer
from roadtest.backend.spi import spi_xfers
from roadtest.backend.spi_transfer import SPIMessage, SPITarget
from roadtest.kernel.source import DEFAULT_LINE
from roadtest.models.base import ChipModel, I2CModel, SMBusModel, SPIModel
from roadtest.trace.format import Header, TraceWriteError, TraceWriter
from roadtest.trace.names import TracedDevice, chip_name, trace_name, version_suffix


def model_name(model: ChipModel) -> str:
    cls = type(model)
    return f"{cls.__module__}:{cls.__qualname__}"


def header_for(kernel_release: str, test_id: str, device: TracedDevice, model: ChipModel) -> Header:
    regbytes, byteorder = (
        (model.regbytes, model.byteorder) if isinstance(model, SMBusModel) else (0, "little")
    )
    return Header(
        kernel=kernel_release,
        test=test_id,
        bus=device.bus,
        address=device.address,
        compatible=device.compatible,
        model=model_name(model),
        regbytes=regbytes,
        byteorder=byteorder,
        created=time.time(),
        extra={"device": device.origin},
    )


def plain(value: Any) -> Any:
    """A msgpack-able form of a value a test set on its model."""
    if value is None or isinstance(value, bool | int | float | str | bytes):
        return value
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return repr(value)


class _DeviceTrace:
    """One device's trace during one test: a TransferObserver of its address (`spi` is
    the SPIObserver of its chip select), an observer of its GPIO lines, and the watcher
    of its model's inputs."""

    def __init__(
        self, writer: TraceWriter, model: ChipModel, lines: Mapping[str, GpioLine]
    ) -> None:
        self.writer = writer
        self.model = model
        self.lines = dict(lines)
        self.names = {line.index: name for name, line in self.lines.items()}
        self._test_thread = threading.get_ident()  # the test's: its input sets are markers
        self._serving: int | None = None  # the thread serving a transfer, while it lasts
        self._after: list[tuple[str, dict[str, Any]]] = []
        for line in self.lines.values():
            line.observers.append(self.gpio)
        model.watch_inputs(self.inject)
        self.spi = _SPIObserver(self)

    # TransferObserver

    def begin(self, transfer: Transfer) -> None:
        self._serving = threading.get_ident()

    def end(self, transfer: Transfer) -> None:
        msgs = [
            {"flags": m.flags, "len": m.length, "data": bytes(m.data), "status": m.status}
            for m in transfer.messages
        ]
        self._served("i2c", {"msgs": msgs}, transfer.fault)

    def _served(
        self, kind: str, fields: dict[str, Any], fault: Callable[[str, BaseException], None]
    ) -> None:
        """Write what went back on the wire, then the interrupts raised while serving it."""
        self._serving = None
        after, self._after = self._after, []
        if self.writer.failure is not None:
            return  # reported once, where it happened
        try:
            self.writer.event(kind, **fields)
            for after_kind, after_fields in after:
                self.writer.event(after_kind, **after_fields)
        except TraceWriteError as err:
            # Not raised into the backend, which would leave the driver's request
            # unanswered (the guest would hang): the test's verdict names it.
            fault("recording", err)

    # GPIO lines and the model's inputs

    def gpio(self, line: GpioLine, op: str, value: int, status: int) -> None:
        if self.writer.failure is not None:
            return  # reported once, where it happened (a GPIO observer's failure is)
        name = self.names.get(line.index, "")
        if op == "input":
            fields = {"line": line.index, "name": name, "level": value}
            if self._serving is not None and self._serving == threading.get_ident():
                # Raised by the model mid-transfer (by a register write): replay raises
                # it after that transfer, so it goes after it in the trace.
                self._after.append(("irq", fields))
            else:
                self.writer.event("irq", **fields)
        else:
            self.writer.event("gpio", line=line.index, name=name, op=op, value=value, status=status)

    def inject(self, name: str, value: Any) -> None:
        # A marker goes between transfers, from the test's thread, never into one.
        if threading.get_ident() == self._test_thread:
            self.marker("inject", {"attr": name, "value": plain(value)})

    def marker(self, what: str, detail: Any) -> None:
        # The guest's work at this instant (an interrupt thread after the agent's reply)
        # goes before what the test did now, on every run.
        self.model.clock.settle()
        self.writer.event("marker", what=what, detail=plain(detail))
        self.writer.flush()  # what the test did is on disk before the driver reacts

    def close(self) -> None:
        self.model.watch_inputs(None)
        for line in self.lines.values():
            if self.gpio in line.observers:
                line.observers.remove(self.gpio)
        self.writer.close()


class _SPIObserver:
    """The SPIObserver of a device's chip select: each message, as an `spi` event."""

    __slots__ = ("trace",)

    def __init__(self, trace: _DeviceTrace) -> None:
        self.trace = trace

    def begin(self, message: SPIMessage) -> None:
        self.trace._serving = threading.get_ident()

    def end(self, message: SPIMessage) -> None:
        fields = {"cs": message.cs, "xfers": spi_xfers(message.transfers)}
        self.trace._served("spi", fields, message.fault)


class RecordingHooks:
    """Session hooks that record each test's devices into `out`/<chip>/<test>.rtrace."""

    def __init__(self, out: Path, kernel_release: str) -> None:
        self.out = out
        self.kernel_release = kernel_release
        self.traces: dict[TracedDevice, _DeviceTrace] = {}
        self.written: list[Path] = []

    def path_for(self, test_id: str, device: TracedDevice) -> Path:
        directory = self.out / chip_name(device.compatible)
        # Recorded on another kernel line than the default one, a trace lies beside the
        # default's (test_x@6.1.rtrace): replay plays the one of the nearest kernel.
        name = trace_name(test_id) + version_suffix(self.kernel_release, DEFAULT_LINE)
        path = directory / f"{name}.rtrace"
        if path in self.written:  # a second device of the same chip in this test
            var = device.origin.rsplit(".", 1)[-1].lower()
            path = directory / f"{name}.{var}.rtrace"
        return path

    def attached(
        self,
        test_id: str,
        device: TracedDevice,
        model: I2CModel,
        lines: Mapping[str, GpioLine],
    ) -> BusTarget:
        return ModelHandler(model), self._trace(test_id, device, model, lines)

    def attached_spi(
        self,
        test_id: str,
        device: TracedDevice,
        model: SPIModel,
        lines: Mapping[str, GpioLine],
    ) -> SPITarget:
        return model, self._trace(test_id, device, model, lines).spi

    def _trace(
        self,
        test_id: str,
        device: TracedDevice,
        model: ChipModel,
        lines: Mapping[str, GpioLine],
    ) -> _DeviceTrace:
        path = self.path_for(test_id, device)
        path.parent.mkdir(parents=True, exist_ok=True)
        # A flush is a write(2) on the backend's thread, which shares the guest's CPU: one
        # per transfer made recording cost 40 % of a transfer-heavy test's time. A
        # killed run loses at most the last 64 events or 100 ms; a crashed guest nothing
        # (the trace is closed when the device is detached).
        writer = TraceWriter(
            path,
            header_for(self.kernel_release, test_id, device, model),
            flush_every=64,
            flush_after=0.1,
            validate=False,
            simulated_time=model.clock.now if model.clock.simulated else None,
        )
        self.written.append(path)
        trace = _DeviceTrace(writer, model, lines)
        self.traces[device] = trace
        return trace

    def marker(self, device: TracedDevice, what: str, detail: Any) -> None:
        trace = self.traces.get(device)
        if trace is not None:
            trace.marker(what, detail)

    def detached(self, device: TracedDevice) -> list[Exception]:
        trace = self.traces.pop(device, None)
        if trace is not None:
            trace.close()
        return []
