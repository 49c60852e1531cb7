"""Recording: every I2C transfer, GPIO request and model interrupt of a device, per test.

`RecordingHooks` (the session's hooks in `--roadtest-record DIR` mode) puts a
`RecordingModel` on the bus in front of the test's model and watches the
device's GPIO lines; each test and device gets its own trace,
DIR/<chip>/<test>.rtrace, flushed as it goes so that a crash leaves a
readable prefix. `roadtest record` writes DIR as a staging directory and
moves the traces into place only after a complete, passing run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roadtest.models.base import I2CModel, SMBusModel
from roadtest.trace.format import Header, TraceWriter
from roadtest.trace.i2c import VIRTIO_I2C_FLAGS_FAIL_NEXT, VIRTIO_I2C_FLAGS_M_RD
from roadtest.trace.names import chip_name, trace_name

if TYPE_CHECKING:
    from roadtest.backend.gpio import GpioLine
    from roadtest.testing.session import BoundDevice

Marker = Callable[[str, Any], None]


def model_name(model: I2CModel) -> str:
    cls = type(model)
    return f"{cls.__module__}:{cls.__qualname__}"


def header_for(kernel_release: str, test_id: str, bound: BoundDevice) -> Header:
    model = bound.model
    regbytes, byteorder = (
        (model.regbytes, model.byteorder) if isinstance(model, SMBusModel) else (0, "little")
    )
    return Header(
        kernel=kernel_release,
        test=test_id,
        bus="i2c",
        address=bound.addr,
        compatible=bound.device.compatible,
        model=model_name(model),
        regbytes=regbytes,
        byteorder=byteorder,
        created=time.time(),
        extra={"device": bound.device.origin},
    )


class RecordingModel(I2CModel):
    """Passes the driver's transfers to `inner` and writes each one to the trace."""

    def __init__(self, inner: I2CModel, writer: TraceWriter) -> None:
        self.inner = inner
        self.writer = writer
        self._msgs: list[dict[str, Any]] = []
        self._thread: int | None = None  # the thread serving a transfer, while it lasts
        self._after: list[tuple[str, dict[str, Any]]] = []

    def defer(self, kind: str, fields: dict[str, Any]) -> bool:
        """Hold an event the model causes mid-transfer (an interrupt raised by a register
        write) until the transfer is written: replay raises it after that transfer."""
        if self._thread is None or self._thread != threading.get_ident():
            return False
        self._after.append((kind, fields))
        return True

    def start_transfer(self) -> None:
        self._msgs = []
        self._thread = threading.get_ident()
        self.inner.start_transfer()

    def write(self, data: bytes) -> None:
        msg = {"flags": 0, "len": len(data), "data": bytes(data), "status": 1}
        self._msgs.append(msg)
        self.inner.write(data)
        msg["status"] = 0

    def read(self, length: int) -> bytes:
        msg = {"flags": VIRTIO_I2C_FLAGS_M_RD, "len": length, "data": b"", "status": 1}
        self._msgs.append(msg)
        data = self.inner.read(length)
        if isinstance(data, bytes | bytearray) and len(data) == length:
            msg["data"] = bytes(data)
            msg["status"] = 0
        return data

    def end_transfer(self) -> None:
        msgs = self._msgs
        for msg in msgs[:-1]:
            msg["flags"] |= VIRTIO_I2C_FLAGS_FAIL_NEXT
        self._msgs = []
        try:
            self.inner.end_transfer()
        finally:
            self._thread = None
            if msgs:
                self.writer.event("i2c", msgs=msgs)
            after, self._after = self._after, []
            for kind, fields in after:
                self.writer.event(kind, **fields)


def plain(value: Any) -> Any:
    """A msgpack-able form of a value a test set on its model."""
    if value is None or isinstance(value, bool | int | float | str | bytes):
        return value
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return repr(value)


class _Watched:
    """Mixin for a model's class: attribute sets from the test's thread become markers."""

    _roadtest_marker: Marker | None = None
    _roadtest_thread: int = 0

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        marker = self._roadtest_marker
        if (
            marker is not None
            and not name.startswith("_")
            and threading.get_ident() == self._roadtest_thread
        ):
            marker("inject", {"attr": name, "value": plain(value)})


_watched_classes: dict[type, type] = {}


def watch_injections(model: I2CModel, marker: Marker) -> None:
    """Make `model` report what the test sets on it (its class gains the _Watched mixin).

    Only sets made from the calling (the test's) thread count: the model's own
    bookkeeping while it serves the driver runs on the backend's thread.
    """
    cls = type(model)
    if not isinstance(model, _Watched):
        watched = _watched_classes.get(cls)
        if watched is None:
            watched = type(cls.__name__, (_Watched, cls), {"__module__": cls.__module__})
            watched.__qualname__ = cls.__qualname__
            _watched_classes[cls] = watched
        model.__class__ = watched
    object.__setattr__(model, "_roadtest_thread", threading.get_ident())
    object.__setattr__(model, "_roadtest_marker", marker)


def unwatch(model: I2CModel) -> None:
    if isinstance(model, _Watched):
        object.__setattr__(model, "_roadtest_marker", None)


class _DeviceTrace:
    """One device's trace during one test, and the GPIO observers that feed it."""

    def __init__(self, writer: TraceWriter, bound: BoundDevice) -> None:
        self.writer = writer
        self.model = RecordingModel(bound.model, writer)
        self.lines = dict(bound.lines)
        self.names = {line.index: name for name, line in self.lines.items()}
        for line in self.lines.values():
            line.observers.append(self.gpio)

    def gpio(self, line: GpioLine, op: str, value: int, status: int) -> None:
        name = self.names.get(line.index, "")
        if op == "input":
            fields = {"line": line.index, "name": name, "level": value}
            if not self.model.defer("irq", fields):
                self.writer.event("irq", **fields)
        else:
            self.writer.event("gpio", line=line.index, name=name, op=op, value=value, status=status)

    def marker(self, what: str, detail: Any) -> None:
        self.writer.event("marker", what=what, detail=plain(detail))
        self.writer.flush()  # what the test did is on disk before the driver reacts

    def close(self) -> None:
        for line in self.lines.values():
            if self.gpio in line.observers:
                line.observers.remove(self.gpio)
        self.writer.close()


class RecordingHooks:
    """Session hooks that record each test's devices into `out`/<chip>/<test>.rtrace."""

    def __init__(self, out: Path, kernel_release: str) -> None:
        self.out = out
        self.kernel_release = kernel_release
        self.traces: dict[int, _DeviceTrace] = {}
        self.written: list[Path] = []

    def path_for(self, test_id: str, bound: BoundDevice) -> Path:
        directory = self.out / chip_name(bound.device.compatible)
        path = directory / f"{trace_name(test_id)}.rtrace"
        if path in self.written:  # a second device of the same chip in this test
            var = bound.device.origin.rsplit(".", 1)[-1].lower()
            path = directory / f"{trace_name(test_id)}.{var}.rtrace"
        return path

    def attached(self, test_id: str, bound: BoundDevice) -> I2CModel:
        path = self.path_for(test_id, bound)
        path.parent.mkdir(parents=True, exist_ok=True)
        # A flush is a write(2) on the backend's thread, which shares the guest's CPU: one
        # per transfer made recording cost 40 % of a transfer-heavy test's time. A
        # killed run loses at most the last 64 events or 100 ms; a crashed guest nothing
        # (the trace is closed when the device is detached).
        writer = TraceWriter(
            path,
            header_for(self.kernel_release, test_id, bound),
            flush_every=64,
            flush_after=0.1,
            validate=False,
        )
        self.written.append(path)
        trace = _DeviceTrace(writer, bound)
        self.traces[id(bound)] = trace
        watch_injections(bound.model, trace.marker)
        return trace.model

    def marker(self, bound: BoundDevice, what: str, detail: Any) -> None:
        trace = self.traces.get(id(bound))
        if trace is not None:
            trace.marker(what, detail)

    def detached(self, bound: BoundDevice) -> list[str]:
        trace = self.traces.pop(id(bound), None)
        if trace is not None:
            unwatch(bound.model)
            trace.close()
        return []
