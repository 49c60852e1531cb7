"""The back-end side of the vhost-user protocol for one connection.

Messages are a header {u32 request, u32 flags, u32 size} and `size` bytes of
payload, with file descriptors as SCM_RIGHTS ancillary data. The frontends we
serve are UML's arch/um/drivers/virtio_uml.c and QEMU's vhost-user devices;
what they need:

- features: VIRTIO_F_VERSION_1, VHOST_USER_F_PROTOCOL_FEATURES, and the ring
  features INDIRECT_DESC and EVENT_IDX, plus the device's own;
- protocol features MQ (GET_QUEUE_NUM), REPLY_ACK, BACKEND_REQ (UML falls
  back to IRQ 0 without it, which collides with the timer), and CONFIG for a
  device that has a config space (virtio-gpio; virtio-i2c has none, and QEMU
  warns when a backend offers CONFIG to its vhost-user-i2c);
- replies carry flags exactly REPLY|VERSION (UML rejects anything else), and
  a message with NEED_REPLY gets a u64 ack (0 = success) unless it has a
  reply of its own;
- call fds may be pipes (UML) rather than eventfds: we write 8 bytes either way;
- when the scheduler times notifications (simulated time), protocol feature
  INBAND_NOTIFICATIONS: UML then kicks with VRING_KICK messages (acked: the guest
  waits for them) and takes calls as BACKEND_VRING_CALL messages on the
  backend-request channel, which its time-travel handler turns into an interrupt at
  the calendar's current time before it replies; it sets no kick or call fds, so
  rings start on SET_VRING_ENABLE;
- ring addresses are in the frontend's virtual address space (`user_addr`
  of the regions), descriptor addresses are guest-physical.

Time is not the transport's: which queues kick, when a call is sent and how long
the guest's clock waits for its reply are its `Scheduler`'s (roadtest.simtime.notify),
which it calls through a `Notifier` once in-band notifications are negotiated.
"""

from __future__ import annotations

import array
import errno
import logging
import os
import select
import socket
import struct
from collections.abc import Callable
from typing import Final, Protocol

from roadtest.backend.device import VirtioDevice
from roadtest.backend.memory import GuestMemory, GuestMemoryError, RegionSpec, close_fds
from roadtest.backend.virtqueue import Virtqueue, VirtqueueError
from roadtest.simtime.notify import Notifier, RealTime, Scheduler

log = logging.getLogger("roadtest.backend.vhost_user")

# Requests (front-end to back-end).
GET_FEATURES: Final = 1
SET_FEATURES: Final = 2
SET_OWNER: Final = 3
RESET_OWNER: Final = 4
SET_MEM_TABLE: Final = 5
SET_LOG_BASE: Final = 6
SET_LOG_FD: Final = 7
SET_VRING_NUM: Final = 8
SET_VRING_ADDR: Final = 9
SET_VRING_BASE: Final = 10
GET_VRING_BASE: Final = 11
SET_VRING_KICK: Final = 12
SET_VRING_CALL: Final = 13
SET_VRING_ERR: Final = 14
GET_PROTOCOL_FEATURES: Final = 15
SET_PROTOCOL_FEATURES: Final = 16
GET_QUEUE_NUM: Final = 17
SET_VRING_ENABLE: Final = 18
SET_BACKEND_REQ_FD: Final = 21  # SET_SLAVE_REQ_FD
GET_CONFIG: Final = 24
SET_CONFIG: Final = 25
VRING_KICK: Final = 35

# Requests on the backend-request channel (back-end to front-end).
BACKEND_VRING_CALL: Final = 4  # VHOST_USER_SLAVE_VRING_CALL

REQUEST_NAMES: Final = {
    GET_FEATURES: "GET_FEATURES",
    SET_FEATURES: "SET_FEATURES",
    SET_OWNER: "SET_OWNER",
    RESET_OWNER: "RESET_OWNER",
    SET_MEM_TABLE: "SET_MEM_TABLE",
    SET_LOG_BASE: "SET_LOG_BASE",
    SET_LOG_FD: "SET_LOG_FD",
    SET_VRING_NUM: "SET_VRING_NUM",
    SET_VRING_ADDR: "SET_VRING_ADDR",
    SET_VRING_BASE: "SET_VRING_BASE",
    GET_VRING_BASE: "GET_VRING_BASE",
    SET_VRING_KICK: "SET_VRING_KICK",
    SET_VRING_CALL: "SET_VRING_CALL",
    SET_VRING_ERR: "SET_VRING_ERR",
    GET_PROTOCOL_FEATURES: "GET_PROTOCOL_FEATURES",
    SET_PROTOCOL_FEATURES: "SET_PROTOCOL_FEATURES",
    GET_QUEUE_NUM: "GET_QUEUE_NUM",
    SET_VRING_ENABLE: "SET_VRING_ENABLE",
    SET_BACKEND_REQ_FD: "SET_BACKEND_REQ_FD",
    GET_CONFIG: "GET_CONFIG",
    SET_CONFIG: "SET_CONFIG",
    VRING_KICK: "VRING_KICK",
}

# Header flags.
VERSION: Final = 0x1
VERSION_MASK: Final = 0x3
FLAG_REPLY: Final = 1 << 2
FLAG_NEED_REPLY: Final = 1 << 3
REPLY_FLAGS: Final = FLAG_REPLY | VERSION

# Feature bits.
VIRTIO_RING_F_INDIRECT_DESC: Final = 1 << 28
VIRTIO_RING_F_EVENT_IDX: Final = 1 << 29
VHOST_USER_F_PROTOCOL_FEATURES: Final = 1 << 30
VIRTIO_F_VERSION_1: Final = 1 << 32
TRANSPORT_FEATURES: Final = (
    VIRTIO_F_VERSION_1
    | VHOST_USER_F_PROTOCOL_FEATURES
    | VIRTIO_RING_F_INDIRECT_DESC
    | VIRTIO_RING_F_EVENT_IDX
)

# Protocol feature bits.
PROTOCOL_F_MQ: Final = 1 << 0
PROTOCOL_F_REPLY_ACK: Final = 1 << 3
PROTOCOL_F_BACKEND_REQ: Final = 1 << 5
PROTOCOL_F_CONFIG: Final = 1 << 9
PROTOCOL_F_INBAND_NOTIFICATIONS: Final = 1 << 14
PROTOCOL_FEATURES: Final = (
    PROTOCOL_F_MQ | PROTOCOL_F_REPLY_ACK | PROTOCOL_F_BACKEND_REQ | PROTOCOL_F_CONFIG
)

VRING_INDEX_MASK: Final = 0xFF
VRING_INVALID_FD: Final = 1 << 8  # "VHOST_USER_VRING_POLL_MASK" in virtio_uml

HEADER: Final = struct.Struct("<III")
U64: Final = struct.Struct("<Q")
VRING_STATE: Final = struct.Struct("<II")
VRING_ADDR: Final = struct.Struct("<IIQQQQ")  # index, flags, desc, used, avail, log
MEM_HEADER: Final = struct.Struct("<II")  # nregions, padding
MEM_REGION: Final = struct.Struct("<QQQQ")  # guest_addr, size, user_addr, mmap_offset
CONFIG_HEADER: Final = struct.Struct("<III")  # offset, size, flags

MAX_FDS: Final = 8  # QEMU's VHOST_MEMORY_BASELINE_NREGIONS; UML sends at most 2
MAX_PAYLOAD: Final = 4096 + CONFIG_HEADER.size
MESSAGE_TIMEOUT_S: Final = 5  # for the rest of a message once its first bytes came
MAX_CONFIG: Final = 4096
_ANCILLARY: Final = socket.CMSG_SPACE(MAX_FDS * array.array("i").itemsize)


class VhostUserError(Exception):
    """The frontend broke the protocol; the connection cannot continue."""


class MessageError(Exception):
    """One message could not be carried out; the frontend gets a failure ack."""


class Watcher(Protocol):
    """Where the connection registers the kick fds it wants callbacks for (the event loop)."""

    def add_reader(self, fd: int, callback: Callable[[], None]) -> None: ...

    def remove_reader(self, fd: int) -> None: ...


def request_name(request: int) -> str:
    return REQUEST_NAMES.get(request, f"request {request}")


def _set_nonblocking(fd: int) -> None:
    os.set_blocking(fd, False)


class VhostUserConnection:
    """Serves one frontend connection for one device."""

    def __init__(
        self,
        sock: socket.socket,
        device: VirtioDevice,
        watcher: Watcher,
        name: str = "",
        scheduler: Scheduler | None = None,
    ) -> None:
        self.sock = sock
        self.device = device
        self.watcher = watcher
        self.name = name or device.name
        self.memory = GuestMemory()
        self.queues = [
            Virtqueue(i, self.memory, f"{self.name}.vq{i}") for i in range(device.num_queues)
        ]
        self.offered_features = TRANSPORT_FEATURES | device.device_features
        self.offered_protocol = PROTOCOL_FEATURES
        if not device.get_config():
            self.offered_protocol &= ~PROTOCOL_F_CONFIG
        self.scheduler: Scheduler = RealTime() if scheduler is None else scheduler
        if self.scheduler.in_band:
            self.offered_protocol |= PROTOCOL_F_INBAND_NOTIFICATIONS
        self.notifier: Notifier | None = None  # once in-band notifications are negotiated
        self.acked_features = 0
        self.protocol_features = 0
        self.backend_req_fd = -1
        self._replies = bytearray()  # what came back on the backend-request channel
        self._replies_due = 0
        self.closed = False
        # Non-blocking, with our own wait where a message is cut (`_wait`): a socket
        # timeout would make every recv and send a poll first.
        self.sock.setblocking(False)
        with device.lock:
            device.reset()
            device.attach_queues(self.queues)

    # Socket I/O

    def _wait(self, writing: bool = False) -> None:
        """Until the socket is readable (writable), for at most MESSAGE_TIMEOUT_S: the rest
        of a message whose first bytes came, or room for a reply."""
        poller = select.poll()
        poller.register(self.sock, select.POLLOUT if writing else select.POLLIN)
        if not poller.poll(MESSAGE_TIMEOUT_S * 1000):
            raise TimeoutError(f"the frontend stalled for {MESSAGE_TIMEOUT_S} s mid-message")

    def _recv_exact(self, n: int) -> bytes:
        chunks = []
        while n:
            try:
                chunk = self.sock.recv(n)
            except BlockingIOError:
                self._wait()
                continue
            if not chunk:
                raise ConnectionResetError("frontend closed the connection mid-message")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def read_message(self) -> tuple[int, int, bytes, list[int]] | None:
        """One message (request, flags, payload, fds), or None at end of file."""
        while True:
            try:
                data, ancdata, msg_flags, _ = self.sock.recvmsg(
                    HEADER.size, _ANCILLARY, socket.MSG_CMSG_CLOEXEC
                )
                break
            except BlockingIOError:
                self._wait()
        fds: list[int] = []
        for level, kind, cdata in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds_arr = array.array("i")
                fds_arr.frombytes(cdata[: len(cdata) - len(cdata) % fds_arr.itemsize])
                fds.extend(fds_arr)
        if not data:
            close_fds(fds)
            return None
        try:
            if msg_flags & socket.MSG_CTRUNC:
                raise VhostUserError(f"more than {MAX_FDS} file descriptors in one message")
            if len(data) < HEADER.size:
                data += self._recv_exact(HEADER.size - len(data))
            request, flags, size = HEADER.unpack(data)
            if size > MAX_PAYLOAD:
                raise VhostUserError(
                    f"{request_name(request)}: payload of {size} bytes is too large"
                )
            payload = self._recv_exact(size) if size else b""
        except BaseException:
            close_fds(fds)
            raise
        return request, flags, payload, fds

    def _send(self, request: int, payload: bytes) -> None:
        data = memoryview(HEADER.pack(request, REPLY_FLAGS, len(payload)) + payload)
        while data:
            try:
                data = data[self.sock.send(data) :]
            except BlockingIOError:
                self._wait(writing=True)

    def _reply_u64(self, request: int, value: int) -> None:
        self._send(request, U64.pack(value))

    # Dispatch

    def on_readable(self) -> bool:
        """Handle one message. False: the connection is over (closed or broken); call close()."""
        try:
            message = self.read_message()
        except (VhostUserError, OSError) as err:
            log.warning("%s: connection dropped: %s", self.name, err)
            return False
        if message is None:
            log.info("%s: frontend disconnected", self.name)
            return False
        request, flags, payload, fds = message
        try:
            with self.device.lock:
                self.handle(request, flags, payload, fds)
        except VhostUserError as err:
            log.warning(
                "%s: %s: %s; dropping the connection", self.name, request_name(request), err
            )
            return False
        except OSError as err:
            log.warning("%s: %s: reply failed: %s", self.name, request_name(request), err)
            return False
        return True

    def handle(self, request: int, flags: int, payload: bytes, fds: list[int]) -> None:
        """Carry out one message and send its reply or ack. Takes ownership of `fds`."""
        if flags & VERSION_MASK != VERSION:
            close_fds(fds)
            raise VhostUserError(f"unsupported protocol version in flags {flags:#x}")
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "%s: %s flags=%#x size=%d fds=%s",
                self.name,
                request_name(request),
                flags,
                len(payload),
                fds,
            )
        handler = self._handlers.get(request)
        status = 0
        if handler is None:
            close_fds(fds)
            log.warning(
                "%s: unsupported %s (flags %#x, %d bytes)",
                self.name,
                request_name(request),
                flags,
                len(payload),
            )
            status = 1
        else:
            try:
                replied = handler(self, request, payload, fds)
            except (MessageError, VirtqueueError, GuestMemoryError, struct.error) as err:
                log.error("%s: %s failed: %s", self.name, request_name(request), err)
                replied = False
                status = 1
            except VhostUserError:
                raise
            except OSError as err:
                if err.errno in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN):
                    raise
                log.error("%s: %s failed: %s", self.name, request_name(request), err)
                replied = False
                status = 1
            except BaseException as err:  # even SystemExit: the backend's thread must live on
                self.device.record_error("device", f"{self.name} {request_name(request)}", err)
                replied = False
                status = 1
            if replied:
                return
        if flags & FLAG_NEED_REPLY:
            self._reply_u64(request, status)

    # Helpers

    def _u64(self, payload: bytes) -> int:
        if len(payload) < U64.size:
            raise MessageError(f"payload of {len(payload)} bytes, expected a u64")
        return int(U64.unpack_from(payload)[0])

    def _vq(self, index: int) -> Virtqueue:
        if not 0 <= index < len(self.queues):
            raise MessageError(
                f"queue {index} does not exist ({self.device.name} has {len(self.queues)})"
            )
        return self.queues[index]

    def _vring_state(self, payload: bytes) -> tuple[Virtqueue, int]:
        if len(payload) < VRING_STATE.size:
            raise MessageError(f"payload of {len(payload)} bytes, expected a vring state")
        index, num = VRING_STATE.unpack_from(payload)
        return self._vq(index), num

    def _one_fd(self, payload: bytes, fds: list[int]) -> tuple[Virtqueue, int]:
        """The queue and fd of SET_VRING_KICK/CALL/ERR; fd -1 for "no fd"."""
        try:
            value = self._u64(payload)
            vq = self._vq(value & VRING_INDEX_MASK)
            if value & VRING_INVALID_FD:
                close_fds(fds)
                return vq, -1
            if len(fds) != 1:
                raise MessageError(f"expected one file descriptor, got {len(fds)}")
        except MessageError:
            close_fds(fds)
            raise
        return vq, fds[0]

    def _maybe_ready(self, vq: Virtqueue) -> None:
        if vq.ready:
            # What the driver queued before is the driver's business, not this
            # message's: its errors are reported like a kick's, the message is acked.
            self.process(vq, self.device.queue_ready)

    def _kick_callback(self, vq: Virtqueue) -> Callable[[], None]:
        fd = vq.kick_fd
        device = self.device
        read = os.read

        def kicked() -> None:
            try:
                read(fd, 8)
            except BlockingIOError:
                return
            except OSError as err:
                log.warning("%s: kick fd: %s", vq.name, err)
                self.watcher.remove_reader(fd)
                return
            with device.lock:
                if vq.ready:
                    self.process(vq)

        return kicked

    def process(self, vq: Virtqueue, hook: Callable[[Virtqueue], None] | None = None) -> None:
        """Let the device take what the driver made available on `vq` (lock held)."""
        try:
            (hook or self.device.queue_kicked)(vq)
        except VirtqueueError as err:
            # The ring is marked broken: nothing more is taken from it until it is set up again.
            self.device.record_error("device", vq.name, err)
        except BaseException as err:  # even SystemExit: the backend's thread must live on
            self.device.record_error("device", f"{vq.name} processing", err)

    def _drop_kick(self, vq: Virtqueue) -> None:
        if vq.kick_fd >= 0:
            self.watcher.remove_reader(vq.kick_fd)
            close_fds([vq.kick_fd])
            vq.kick_fd = -1

    @staticmethod
    def _replace_fd(old: int, new: int) -> int:
        if old >= 0:
            close_fds([old])
        return new

    # Message handlers: return True if they sent the reply themselves.

    def _get_features(self, request: int, payload: bytes, fds: list[int]) -> bool:
        close_fds(fds)
        self._reply_u64(request, self.offered_features)
        return True

    def _set_features(self, request: int, payload: bytes, fds: list[int]) -> bool:
        close_fds(fds)
        features = self._u64(payload)
        unknown = features & ~self.offered_features
        if unknown:
            log.warning("%s: frontend acked features we did not offer: %#x", self.name, unknown)
        self.acked_features = features
        for vq in self.queues:
            vq.event_idx = bool(features & VIRTIO_RING_F_EVENT_IDX)
            vq.indirect = bool(features & VIRTIO_RING_F_INDIRECT_DESC)
        self.device.set_features(features & ~TRANSPORT_FEATURES)
        if not features & VHOST_USER_F_PROTOCOL_FEATURES:
            # Without protocol features there is no SET_VRING_ENABLE: rings are enabled.
            for vq in self.queues:
                if not vq.enabled:
                    vq.enabled = True
                    self._maybe_ready(vq)
        return False

    def _set_owner(self, request: int, payload: bytes, fds: list[int]) -> bool:
        close_fds(fds)
        return False

    def _reset_owner(self, request: int, payload: bytes, fds: list[int]) -> bool:
        close_fds(fds)
        self._reset_rings()
        self.device.reset()
        self.acked_features = 0
        return False

    def _set_mem_table(self, request: int, payload: bytes, fds: list[int]) -> bool:
        try:
            if len(payload) < MEM_HEADER.size:
                raise MessageError("memory table payload too short")
            nregions, _ = MEM_HEADER.unpack_from(payload)
            if nregions > MAX_FDS or len(payload) < MEM_HEADER.size + nregions * MEM_REGION.size:
                raise MessageError(f"memory table of {nregions} regions in {len(payload)} bytes")
            specs = [
                RegionSpec(*MEM_REGION.unpack_from(payload, MEM_HEADER.size + i * MEM_REGION.size))
                for i in range(nregions)
            ]
            for vq in self.queues:
                vq.unmap()
            self.memory.set_table(specs, fds)
        finally:
            close_fds(fds)  # the mappings hold their own references
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s: memory table %s", self.name, self.memory.regions)
        for vq in self.queues:
            if vq.started:
                vq.map_rings()
        return False

    def _set_vring_num(self, request: int, payload: bytes, fds: list[int]) -> bool:
        close_fds(fds)
        vq, num = self._vring_state(payload)
        self.device.queue_reset(vq)
        vq.set_num(num)
        return False

    def _set_vring_addr(self, request: int, payload: bytes, fds: list[int]) -> bool:
        close_fds(fds)
        if len(payload) < VRING_ADDR.size:
            raise MessageError("vring address payload too short")
        index, _flags, desc, used, avail, _log = VRING_ADDR.unpack_from(payload)
        vq = self._vq(index)
        vq.set_addr(desc, used, avail)
        return False

    def _set_vring_base(self, request: int, payload: bytes, fds: list[int]) -> bool:
        close_fds(fds)
        vq, base = self._vring_state(payload)
        self.device.queue_reset(vq)
        vq.set_base(base)
        return False

    def _get_vring_base(self, request: int, payload: bytes, fds: list[int]) -> bool:
        close_fds(fds)
        vq, _ = self._vring_state(payload)
        self.device.queue_reset(vq)
        vq.stop()
        self._drop_kick(vq)
        self._send(request, VRING_STATE.pack(vq.index, vq.last_avail))
        return True

    def _set_vring_kick(self, request: int, payload: bytes, fds: list[int]) -> bool:
        vq, fd = self._one_fd(payload, fds)
        self._drop_kick(vq)
        if fd >= 0:
            _set_nonblocking(fd)
            vq.kick_fd = fd
            self.watcher.add_reader(fd, self._kick_callback(vq))
        else:
            log.warning("%s: no kick fd: only in-band VRING_KICK messages will be noticed", vq.name)
        vq.start()
        if not self.acked_features & VHOST_USER_F_PROTOCOL_FEATURES:
            vq.enabled = True
        self._maybe_ready(vq)
        return False

    def _set_vring_call(self, request: int, payload: bytes, fds: list[int]) -> bool:
        vq, fd = self._one_fd(payload, fds)
        if fd >= 0:
            _set_nonblocking(fd)
        vq.call_fd = self._replace_fd(vq.call_fd, fd)
        return False

    def _set_vring_err(self, request: int, payload: bytes, fds: list[int]) -> bool:
        vq, fd = self._one_fd(payload, fds)
        vq.err_fd = self._replace_fd(vq.err_fd, fd)
        return False

    def _get_protocol_features(self, request: int, payload: bytes, fds: list[int]) -> bool:
        close_fds(fds)
        self._reply_u64(request, self.offered_protocol)
        return True

    def _set_protocol_features(self, request: int, payload: bytes, fds: list[int]) -> bool:
        close_fds(fds)
        features = self._u64(payload)
        if features & ~self.offered_protocol:
            log.warning(
                "%s: frontend set protocol features we did not offer: %#x", self.name, features
            )
        self.protocol_features = features
        notifier = self.notifier
        if self.in_band:
            if notifier is None:
                notifier = self.notifier = self.scheduler.notifier(self)
            for vq in self.queues:
                vq.signal = notifier.signal
                vq.kicks = notifier.kicks(vq)
        else:
            for vq in self.queues:
                vq.signal = None
                vq.kicks = True
        return False

    @property
    def in_band(self) -> bool:
        """Notifications are messages (INBAND_NOTIFICATIONS with BACKEND_REQ)."""
        both = PROTOCOL_F_INBAND_NOTIFICATIONS | PROTOCOL_F_BACKEND_REQ
        return self.scheduler.in_band and self.protocol_features & both == both

    def _get_queue_num(self, request: int, payload: bytes, fds: list[int]) -> bool:
        close_fds(fds)
        self._reply_u64(request, len(self.queues))
        return True

    def _set_vring_enable(self, request: int, payload: bytes, fds: list[int]) -> bool:
        close_fds(fds)
        vq, enable = self._vring_state(payload)
        if enable and self.in_band and not vq.started:
            vq.start()  # no SET_VRING_KICK comes
        was = vq.enabled
        vq.enabled = bool(enable)
        if vq.enabled and not was:
            self._maybe_ready(vq)
        return False

    def _set_backend_req_fd(self, request: int, payload: bytes, fds: list[int]) -> bool:
        if len(fds) != 1:
            close_fds(fds)
            raise MessageError(f"expected one file descriptor, got {len(fds)}")
        # UML makes this a socketpair: replies to our NEED_REPLY come back on it.
        self._drop_backend_req()
        self.backend_req_fd = fds[0]
        if self.in_band:
            _set_nonblocking(self.backend_req_fd)
            self.watcher.add_reader(self.backend_req_fd, self._backend_replies)
        return False

    # In-band notifications (loop thread): the notifier's `Link`

    def look_at_rings(self) -> None:
        """The guest waits: take what it queued without a kick (`Virtqueue.kicks`)."""
        for vq in self.queues:
            if not vq.kicks and vq.ready and vq.avail_moved():
                with self.device.lock:
                    self.process(vq)

    def send_calls(self, queues: list[int]) -> None:
        """Send BACKEND_VRING_CALL for these queues in one write; with REPLY_ACK, the
        notifier is told what is in flight until the guest's replies."""
        if self.closed or self.backend_req_fd < 0 or self.notifier is None:
            return
        need_reply = bool(self.protocol_features & PROTOCOL_F_REPLY_ACK)
        flags = VERSION | (FLAG_NEED_REPLY if need_reply else 0)
        header = HEADER.pack(BACKEND_VRING_CALL, flags, VRING_STATE.size)
        calls = b"".join(header + VRING_STATE.pack(index, 0) for index in queues)
        try:
            os.write(self.backend_req_fd, calls)
        except OSError as err:
            log.warning("%s: in-band call: %s", self.name, err)
            return
        if need_reply:
            self._replies_due += len(queues)
            self.notifier.in_flight(len(queues))
            # The write woke the guest, which mostly answers before this thread runs on:
            # take the reply now instead of after another round of the event loop.
            self._backend_replies()

    def _backend_replies(self) -> None:
        fd = self.backend_req_fd
        try:
            data = os.read(fd, 4096)
        except BlockingIOError:
            return
        except OSError as err:
            log.warning("%s: backend-request channel: %s", self.name, err)
            data = b""
        if not data:
            self._drop_backend_req()
            return
        self._replies += data
        size = HEADER.size + U64.size
        while len(self._replies) >= size:
            request, flags, length = HEADER.unpack_from(self._replies)
            status = U64.unpack_from(self._replies, HEADER.size)[0]
            del self._replies[:size]
            if request != BACKEND_VRING_CALL or not flags & FLAG_REPLY or length != U64.size:
                log.warning(
                    "%s: unexpected reply %s on the backend-request channel",
                    self.name,
                    request_name(request),
                )
            elif status:
                log.warning("%s: the guest refused a call (status %d)", self.name, status)
            self._reply_came()

    def _reply_came(self) -> None:
        if self._replies_due and self.notifier is not None:
            self._replies_due -= 1
            self.notifier.replied()

    def _drop_backend_req(self) -> None:
        if self.backend_req_fd >= 0:
            self.watcher.remove_reader(self.backend_req_fd)
        self.backend_req_fd = self._replace_fd(self.backend_req_fd, -1)
        self._replies.clear()
        while self._replies_due:
            self._reply_came()

    def _get_config(self, request: int, payload: bytes, fds: list[int]) -> bool:
        close_fds(fds)
        if len(payload) < CONFIG_HEADER.size:
            raise MessageError("config payload too short")
        offset, size, cflags = CONFIG_HEADER.unpack_from(payload)
        if size > MAX_CONFIG or offset > MAX_CONFIG:
            log.warning("%s: GET_CONFIG of %d bytes at %d refused", self.name, size, offset)
            self._send(request, b"")
            return True
        config = self.device.get_config()[offset : offset + size]
        config += bytes(size - len(config))
        self._send(request, CONFIG_HEADER.pack(offset, size, cflags) + config)
        return True

    def _set_config(self, request: int, payload: bytes, fds: list[int]) -> bool:
        close_fds(fds)
        if len(payload) < CONFIG_HEADER.size:
            raise MessageError("config payload too short")
        offset, size, _ = CONFIG_HEADER.unpack_from(payload)
        data = payload[CONFIG_HEADER.size : CONFIG_HEADER.size + size]
        self.device.set_config(offset, data)
        return False

    def _vring_kick(self, request: int, payload: bytes, fds: list[int]) -> bool:
        close_fds(fds)
        vq, _ = self._vring_state(payload)
        if vq.ready:
            self.process(vq)
        return False

    def _unsupported_log(self, request: int, payload: bytes, fds: list[int]) -> bool:
        close_fds(fds)
        raise MessageError("dirty-page logging is not supported (VHOST_F_LOG_ALL is not offered)")

    _handlers: dict[int, Callable[[VhostUserConnection, int, bytes, list[int]], bool]] = {
        GET_FEATURES: _get_features,
        SET_FEATURES: _set_features,
        SET_OWNER: _set_owner,
        RESET_OWNER: _reset_owner,
        SET_MEM_TABLE: _set_mem_table,
        SET_LOG_BASE: _unsupported_log,
        SET_LOG_FD: _unsupported_log,
        SET_VRING_NUM: _set_vring_num,
        SET_VRING_ADDR: _set_vring_addr,
        SET_VRING_BASE: _set_vring_base,
        GET_VRING_BASE: _get_vring_base,
        SET_VRING_KICK: _set_vring_kick,
        SET_VRING_CALL: _set_vring_call,
        SET_VRING_ERR: _set_vring_err,
        GET_PROTOCOL_FEATURES: _get_protocol_features,
        SET_PROTOCOL_FEATURES: _set_protocol_features,
        GET_QUEUE_NUM: _get_queue_num,
        SET_VRING_ENABLE: _set_vring_enable,
        SET_BACKEND_REQ_FD: _set_backend_req_fd,
        GET_CONFIG: _get_config,
        SET_CONFIG: _set_config,
        VRING_KICK: _vring_kick,
    }

    # Teardown

    def _reset_rings(self) -> None:
        for vq in self.queues:
            self.device.queue_reset(vq)
            vq.stop()
            vq.enabled = False
            self._drop_kick(vq)
            vq.call_fd = self._replace_fd(vq.call_fd, -1)
            vq.err_fd = self._replace_fd(vq.err_fd, -1)

    def close(self) -> None:
        """Release everything this connection holds and put the device back to power-on state."""
        if self.closed:
            return
        self.closed = True
        if self.notifier is not None:
            self.notifier.close()  # what it holds is released with the channel, below
        with self.device.lock:
            self._reset_rings()
            self.device.reset()
            self.device.detach_queues()
            self.memory.clear()
            self._drop_backend_req()
        try:
            self.sock.close()
        except OSError as err:
            if err.errno != errno.EBADF:
                raise
