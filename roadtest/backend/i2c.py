"""virtio-i2c (device id 34): one request queue, messages dispatched to models by address.

A request is a descriptor chain: out_hdr {le16 addr, le16 padding, le32
flags}, an optional buffer (device-readable for a write, device-writable for
a read, absent for a zero-length message) and in_hdr {u8 status}.
drivers/i2c/busses/i2c-virtio.c puts the 7-bit address shifted left by one
in `addr` (the spec's format), queues each message of a transfer as its own
request with FAIL_NEXT on all but the last, and kicks once.

FAIL_NEXT links requests into a transfer group: once a message fails, the
rest of its group fails without reaching any model, and the next group starts
clean. A message fails when no model is attached at its address (a NACK, as
on real hardware) or when the model raises or returns the wrong length; the
latter are model errors, logged and reported with their traceback. Whatever
a model raises is caught, BaseExceptions too (pytest.fail or pytest.skip in a
model, SystemExit, KeyboardInterrupt): it fails the message and is reported
with the test, and the backend's thread, which every later test needs, lives on.
"""

from __future__ import annotations

import logging
import struct
import threading
from typing import Final

from roadtest.backend.device import VirtioDevice
from roadtest.backend.virtqueue import Request, Virtqueue
from roadtest.models.base import I2CModel

log = logging.getLogger("roadtest.backend.i2c")

VIRTIO_ID_I2C_ADAPTER: Final = 34
VIRTIO_I2C_F_ZERO_LENGTH_REQUEST: Final = 1 << 0
VIRTIO_I2C_FLAGS_FAIL_NEXT: Final = 1 << 0
VIRTIO_I2C_FLAGS_M_RD: Final = 1 << 1
VIRTIO_I2C_MSG_OK: Final = 0
VIRTIO_I2C_MSG_ERR: Final = 1

OUT_HDR: Final = struct.Struct("<HHI")
_BYTES: Final = (bytes, bytearray)


class I2CBus:
    """The models on one bus, by 7-bit address. Attach and detach from any thread."""

    def __init__(self) -> None:
        self.models: dict[int, I2CModel] = {}
        self._lock = threading.Lock()

    def attach(self, addr: int, model: I2CModel) -> None:
        if not 0 <= addr <= 0x7F:
            raise ValueError(f"I2C address {addr:#x} is not a 7-bit address")
        with self._lock:
            other = self.models.get(addr)
            if other is not None and other is not model:
                raise ValueError(
                    f"I2C address {addr:#04x} already has {type(other).__name__} attached"
                )
            self.models[addr] = model

    def detach(self, addr: int) -> I2CModel | None:
        """Remove and return the model at `addr` (None if there was none)."""
        with self._lock:
            return self.models.pop(addr, None)

    def get(self, addr: int) -> I2CModel | None:
        return self.models.get(addr)

    def clear(self) -> None:
        with self._lock:
            self.models.clear()


class VirtioI2C(VirtioDevice):
    device_id = VIRTIO_ID_I2C_ADAPTER
    name = "i2c"
    num_queues = 1
    device_features = VIRTIO_I2C_F_ZERO_LENGTH_REQUEST
    # Test fragments are its children: 7-bit addresses, no size.
    dt_properties = "#address-cells = <1>;\n#size-cells = <0>;"

    def __init__(self, bus: I2CBus | None = None) -> None:
        super().__init__()
        self.bus = bus if bus is not None else I2CBus()
        self.messages = 0  # messages handled, for tests and benchmarks
        self._group_failed = False
        self._group_models: list[I2CModel] = []

    def attach(self, addr: int, model: I2CModel) -> None:
        self.bus.attach(addr, model)

    def detach(self, addr: int) -> I2CModel | None:
        return self.bus.detach(addr)

    def reset(self) -> None:
        super().reset()
        self._end_group()

    def queue_reset(self, vq: Virtqueue) -> None:
        self._end_group()

    def queue_kicked(self, vq: Virtqueue) -> None:
        debug = log.isEnabledFor(logging.DEBUG)
        handle = self._handle
        while (req := vq.pop()) is not None:
            written = handle(req, debug)
            vq.push(req, written, notify=False)
        vq.notify()

    def _end_group(self) -> None:
        models = self._group_models
        self._group_failed = False
        if not models:
            return
        self._group_models = []
        for model in models:
            try:
                model.end_transfer()
            except BaseException as exc:
                self.record_error("model", f"i2c {type(model).__name__}.end_transfer()", exc)

    def _handle(self, req: Request, debug: bool) -> int:
        """Carry out one message; returns how many bytes were written to the chain."""
        out = req.out
        in_len = req.in_len
        self.messages += 1
        if len(out) < OUT_HDR.size or in_len < 1:
            self.record_error(
                "device",
                "i2c request",
                ValueError(f"malformed request: {len(out)} readable and {in_len} writable bytes"),
            )
            if in_len:
                req.write_last(VIRTIO_I2C_MSG_ERR)
                return in_len
            return 0
        raw_addr, _, flags = OUT_HDR.unpack_from(out)
        addr = raw_addr >> 1
        reading = flags & VIRTIO_I2C_FLAGS_M_RD
        written = 1
        status = VIRTIO_I2C_MSG_ERR
        if self._group_failed:
            if debug:
                log.debug(
                    "i2c %#04x %s skipped: an earlier message of its transfer failed",
                    addr,
                    _kind(flags),
                )
        else:
            model = self.bus.models.get(addr)
            if model is None:
                if debug:
                    log.debug("i2c %#04x %s: NACK, no device", addr, _kind(flags))
            elif self._joined(model) or self._start(model, addr):
                if reading:
                    length = in_len - 1
                    try:
                        data = model.read(length)
                        if not isinstance(data, _BYTES):
                            raise TypeError(
                                f"read({length}) returned {type(data).__name__}, not bytes"
                            )
                        if len(data) != length:
                            raise ValueError(f"read({length}) returned {len(data)} bytes")
                    except BaseException as exc:
                        self.record_error(
                            "model", f"i2c {addr:#04x} {type(model).__name__}.read({length})", exc
                        )
                    else:
                        if length:
                            req.write(data)
                        written = in_len
                        status = VIRTIO_I2C_MSG_OK
                        if debug:
                            log.debug("i2c %#04x read %d: %s", addr, length, data.hex(" "))
                else:
                    data = out[OUT_HDR.size :]
                    try:
                        model.write(data)
                    except BaseException as exc:
                        self.record_error(
                            "model", f"i2c {addr:#04x} {type(model).__name__}.write({data!r})", exc
                        )
                    else:
                        status = VIRTIO_I2C_MSG_OK
                        if debug:
                            log.debug("i2c %#04x write %d: %s", addr, len(data), data.hex(" "))
        if status:
            self._group_failed = True
        req.write_last(status)
        if not flags & VIRTIO_I2C_FLAGS_FAIL_NEXT:
            self._end_group()
        return written

    def _joined(self, model: I2CModel) -> bool:
        for other in self._group_models:
            if other is model:
                return True
        return False

    def _start(self, model: I2CModel, addr: int) -> bool:
        self._group_models.append(model)
        try:
            model.start_transfer()
        except BaseException as exc:
            self.record_error(
                "model", f"i2c {addr:#04x} {type(model).__name__}.start_transfer()", exc
            )
            return False
        return True


def _kind(flags: int) -> str:
    return "read" if flags & VIRTIO_I2C_FLAGS_M_RD else "write"
