"""virtio-i2c (device id 34): requests joined into transfers, each handed to the handler
at its address.

A request is a descriptor chain: out_hdr {le16 addr, le16 padding, le32
flags}, an optional buffer (device-readable for a write, device-writable for
a read, absent for a zero-length message) and in_hdr {u8 status}.
drivers/i2c/busses/i2c-virtio.c puts the 7-bit address shifted left by one
in `addr` (the spec's format), queues each message of a transfer as its own
request with FAIL_NEXT on all but the last, and kicks once.

`VirtioI2C` joins the requests of one kick that FAIL_NEXT links into a group
and hands it to the bus as a `Transfer(addr, messages)`: one per run of
consecutive messages to the same address (a group nearly always addresses one
device). The `TransferHandler` attached at that address answers each message
with a status and, for a read, its data; a chip model answers through one
adapter, `roadtest.backend.i2c_model.ModelHandler`. The bus enforces the
spec's rule: once a message fails, every later message of its group fails,
and the runs after it reach no handler. A message fails when no handler is
attached at its address (a NACK, as on real hardware), when the handler says
so, or when a read's answer is not exactly the bytes asked for; what a handler
reports in `Transfer.faults` (a model's exception, a replay divergence) is
logged and reported with the test. Whatever a handler raises is caught,
BaseExceptions too: the backend's thread, which every later test needs,
lives on.

A `TransferObserver` attached with a handler sees each of its transfers
before the handler and again as it went back on the wire: the recorder is one.
"""

from __future__ import annotations

import logging
import struct
import threading
from typing import Final

from roadtest.backend.device import VirtioDevice
from roadtest.backend.i2c_model import ModelHandler
from roadtest.backend.i2c_transfer import (
    DEFAULT_BUS_HZ,
    I2CMessage,
    Transfer,
    TransferHandler,
    TransferObserver,
    bus_time_ns,
)
from roadtest.backend.virtqueue import Request, Virtqueue
from roadtest.models.base import I2CModel
from roadtest.text import count
from roadtest.trace.i2c import (
    VIRTIO_I2C_FLAGS_FAIL_NEXT,
    VIRTIO_I2C_FLAGS_M_RD,
    VIRTIO_I2C_MSG_ERR,
    VIRTIO_I2C_MSG_OK,
)

log = logging.getLogger("roadtest.backend.i2c")

VIRTIO_ID_I2C_ADAPTER: Final = 34
VIRTIO_I2C_F_ZERO_LENGTH_REQUEST: Final = 1 << 0

OUT_HDR: Final = struct.Struct("<HHI")
_OUT_HDR_SIZE: Final = OUT_HDR.size
_unpack_out_hdr: Final = OUT_HDR.unpack_from
_BYTES: Final = (bytes, bytearray)


class _Target:
    __slots__ = ("handler", "observer", "attached")

    def __init__(
        self,
        handler: TransferHandler,
        observer: TransferObserver | None,
        attached: I2CModel | TransferHandler,
    ) -> None:
        self.handler = handler
        self.observer = observer
        self.attached = attached


class I2CBus:
    """The handlers on one bus, by 7-bit address. Attach and detach from any thread."""

    def __init__(self) -> None:
        self.targets: dict[int, _Target] = {}
        self._lock = threading.Lock()

    def attach(
        self,
        addr: int,
        target: I2CModel | TransferHandler,
        observer: TransferObserver | None = None,
    ) -> None:
        """Put `target` at `addr`: a chip model (behind the model adapter) or a handler."""
        if not 0 <= addr <= 0x7F:
            raise ValueError(f"I2C address {addr:#x} is not a 7-bit address")
        if isinstance(target, I2CModel):
            handler: TransferHandler = ModelHandler(target)
        else:
            handler = target
        with self._lock:
            other = self.targets.get(addr)
            if other is not None and other.attached is not target:
                raise ValueError(
                    f"I2C address {addr:#04x} already has {type(other.attached).__name__} attached"
                )
            self.targets[addr] = _Target(handler, observer, target)

    def detach(self, addr: int) -> I2CModel | TransferHandler | None:
        """Remove and return what was attached at `addr` (None if there was nothing)."""
        with self._lock:
            target = self.targets.pop(addr, None)
        return None if target is None else target.attached

    def get(self, addr: int) -> I2CModel | TransferHandler | None:
        target = self.targets.get(addr)
        return None if target is None else target.attached

    def clear(self) -> None:
        with self._lock:
            self.targets.clear()

    def serve(self, transfer: Transfer, debug: bool = False) -> bool:
        """Have `transfer` answered by the handler at its address; True if every message
        succeeded. Afterwards each message holds what goes back to the driver."""
        target = self.targets.get(transfer.addr)
        if target is None:
            if debug:
                for msg in transfer.messages:
                    log.debug("i2c %#04x %s: NACK, no device", transfer.addr, _kind(msg))
            return False
        handler = target.handler
        observer = target.observer
        if observer is not None:
            observer.begin(transfer)
        try:
            handler.transfer(transfer)
        except BaseException as exc:
            transfer.fault(f"{handler.name}.transfer()", exc)
        for msg in transfer.messages:
            if msg.status != VIRTIO_I2C_MSG_OK:
                break
            if msg.flags & VIRTIO_I2C_FLAGS_M_RD and (
                type(msg.data) not in _BYTES or len(msg.data) != msg.length
            ):
                transfer.fault(f"{handler.name}.read({msg.length})", _bad_read(msg))
                break
            if debug:
                log.debug(
                    "i2c %#04x %s %d: %s", transfer.addr, _kind(msg), msg.length, msg.data.hex(" ")
                )
        else:
            if observer is not None:
                observer.end(transfer)
            return True
        _fail_from(transfer.messages, msg)
        if observer is not None:
            observer.end(transfer)
        return False


def _fail_from(messages: list[I2CMessage], first: I2CMessage) -> None:
    """`first` failed: it and every later message of the transfer go back as ERR."""
    failing = False
    for msg in messages:
        failing = failing or msg is first
        if failing:
            msg.status = VIRTIO_I2C_MSG_ERR
            if msg.flags & VIRTIO_I2C_FLAGS_M_RD:
                msg.data = b""


def _bad_read(msg: I2CMessage) -> Exception:
    data = msg.data
    if type(data) not in _BYTES:
        return TypeError(f"read({msg.length}) returned {type(data).__name__}, not bytes")
    return ValueError(f"read({msg.length}) returned {count(len(data), 'byte')}")


def _kind(msg: I2CMessage) -> str:
    return "read" if msg.flags & VIRTIO_I2C_FLAGS_M_RD else "write"


class VirtioI2C(VirtioDevice):
    device_id = VIRTIO_ID_I2C_ADAPTER
    name = "i2c"
    num_queues = 1
    device_features = VIRTIO_I2C_F_ZERO_LENGTH_REQUEST

    def __init__(self, bus: I2CBus | None = None, bus_hz: int = DEFAULT_BUS_HZ) -> None:
        super().__init__()
        self.bus = bus if bus is not None else I2CBus()
        self.messages = 0  # messages handled, for tests and benchmarks
        # The bus clock: how long a transfer takes in simulated time (Virtqueue.notify).
        self.bus_hz = bus_hz
        # Test fragments are its children: 7-bit addresses, no size.
        self.dt_properties = (
            f"#address-cells = <1>;\n#size-cells = <0>;\nclock-frequency = <{bus_hz}>;"
        )

    def attach(
        self,
        addr: int,
        target: I2CModel | TransferHandler,
        observer: TransferObserver | None = None,
    ) -> None:
        self.bus.attach(addr, target, observer)

    def detach(self, addr: int) -> I2CModel | TransferHandler | None:
        return self.bus.detach(addr)

    def queue_kicked(self, vq: Virtqueue) -> None:
        # A group is the requests FAIL_NEXT links, in one kick: i2c-virtio.c queues a
        # whole transfer before it kicks, and kicks a part it could not queue whole too.
        debug = log.isEnabledFor(logging.DEBUG)
        reqs: list[Request] = []
        runs: list[Transfer] = []
        run: Transfer | None = None
        # Under simulated time the driver hears of the answers after their bus time.
        timed: list[Transfer] | None = [] if vq.signal is not None else None
        while (req := vq.pop()) is not None:
            out = req.out
            self.messages += 1
            if len(out) < _OUT_HDR_SIZE or req.in_len < 1:
                self._malformed(vq, req)
                continue
            raw_addr, _, flags = _unpack_out_hdr(out)
            if flags & VIRTIO_I2C_FLAGS_M_RD:
                msg = I2CMessage(flags, req.in_len - 1, b"")
            else:
                msg = I2CMessage(flags, len(out) - _OUT_HDR_SIZE, out[_OUT_HDR_SIZE:])
            reqs.append(req)
            addr = raw_addr >> 1
            if run is not None and run.addr == addr:
                run.messages.append(msg)
            else:
                run = Transfer(addr, [msg])
                runs.append(run)
            if not flags & VIRTIO_I2C_FLAGS_FAIL_NEXT:
                self._serve(vq, reqs, runs, debug)
                if timed is not None:
                    timed += runs
                reqs, runs, run = [], [], None
        if reqs:
            self._serve(vq, reqs, runs, debug)
            if timed is not None:
                timed += runs
        hz = self.bus_hz
        vq.notify(after=sum(bus_time_ns(t.messages, hz) for t in timed) if timed else 0)

    def _serve(self, vq: Virtqueue, reqs: list[Request], runs: list[Transfer], debug: bool) -> None:
        """Answer one group: its runs in order until one fails, then write the answers."""
        failed = False
        i = 0
        for transfer in runs:
            if failed:
                if debug:
                    for msg in transfer.messages:
                        log.debug(
                            "i2c %#04x %s skipped: an earlier message of its transfer failed",
                            transfer.addr,
                            _kind(msg),
                        )
            else:
                failed = not self.bus.serve(transfer, debug)
                if transfer.faults is not None:
                    for where, exc in transfer.faults:
                        self.record_error("model", f"i2c {transfer.addr:#04x} {where}", exc)
            for msg in transfer.messages:
                req = reqs[i]
                i += 1
                if msg.status == VIRTIO_I2C_MSG_OK and msg.flags & VIRTIO_I2C_FLAGS_M_RD:
                    if msg.length:
                        req.write(msg.data)
                    req.write_last(VIRTIO_I2C_MSG_OK)
                    vq.push(req, req.in_len, notify=False)
                else:
                    req.write_last(msg.status)
                    vq.push(req, 1, notify=False)

    def _malformed(self, vq: Virtqueue, req: Request) -> None:
        in_len = req.in_len
        self.record_error(
            "device",
            "i2c request",
            ValueError(f"malformed request: {len(req.out)} readable and {in_len} writable bytes"),
        )
        if in_len:
            req.write_last(VIRTIO_I2C_MSG_ERR)
        vq.push(req, in_len, notify=False)
