"""A vhost-user frontend and virtio driver in Python, for testing the backend without a guest.

Every byte it sends or reads is laid out from the specifications (virtio_spec),
not from roadtest.backend, so the backend's layouts are checked, not echoed.
It does what virtio_uml.c and a guest driver do between them: negotiates over
the socket, shares a memfd as guest memory, lays out split rings in it, adds
descriptor chains (direct or indirect), kicks through an eventfd and waits
for the call fd (a pipe, as UML uses). The memory is described with
guest-physical addresses that differ from the "frontend virtual" ones and a
non-zero mmap offset, so address translation is exercised too.

    with FakeFrontend.connect(backend.i2c_socket) as fe:
        fe.setup(num_queues=1)
        status, data = fe.i2c_transfer([(0x48, b"\\x00"), (0x48, 2)])
"""

from __future__ import annotations

import array
import mmap
import os
import select
import socket
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import virtio_spec as spec

GUEST_BASE = 0x4000_0000  # guest-physical address of the memory
USER_BASE = 0x7F00_0000_0000  # where the "frontend process" has it mapped
MMAP_OFFSET = 0x2000  # the region starts this far into the memfd
MEMORY_SIZE = 1 << 20


class FrontendError(Exception):
    pass


@dataclass
class Completion:
    """A used element: the chain's head, the length the device wrote, and the writable buffers."""

    head: int
    written: int
    buffers: list[bytes] = field(default_factory=list)


class DriverQueue:
    """The driver's side of one split virtqueue in the fake guest memory."""

    def __init__(self, fe: FakeFrontend, index: int, num: int) -> None:
        self.fe = fe
        self.index = index
        self.num = num
        self.desc = fe.alloc(spec.VIRTQ_DESC.size * num, 4096)
        self.avail = fe.alloc(spec.avail_size(num), 4096)
        self.used = fe.alloc(spec.used_size(num), 4096)
        self.free = list(range(num))
        self.avail_idx = 0
        self.last_used = 0
        self.pending: dict[int, tuple[list[int], list[tuple[int, int]]]] = {}
        self.kick_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self.call_r, self.call_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.kicks = 0

    def close(self) -> None:
        for fd in (self.kick_fd, self.call_r, self.call_w):
            if fd >= 0:
                os.close(fd)
        self.kick_fd = self.call_r = self.call_w = -1

    # Layout helpers

    def write_desc(self, table: int, i: int, addr: int, length: int, flags: int, nxt: int) -> None:
        self.fe.pack(spec.VIRTQ_DESC, table + spec.VIRTQ_DESC.size * i, addr, length, flags, nxt)

    @property
    def used_event_addr(self) -> int:
        return self.avail + 4 + 2 * self.num

    @property
    def avail_event_addr(self) -> int:
        return self.used + 4 + spec.VIRTQ_USED_ELEM.size * self.num

    def set_used_event(self, value: int) -> None:
        self.fe.pack(spec.LE16, self.used_event_addr, value & 0xFFFF)

    def avail_event(self) -> int:
        return int(self.fe.unpack(spec.LE16, self.avail_event_addr)[0])

    def used_idx(self) -> int:
        return int(self.fe.unpack(spec.LE16, self.used + 2)[0])

    def set_avail_flags(self, flags: int) -> None:
        self.fe.pack(spec.LE16, self.avail, flags)

    # Adding buffers

    def add(self, out: Sequence[bytes], in_lens: Sequence[int], indirect: bool = False) -> int:
        """Make one chain available (not kicked); returns its head."""
        bufs: list[tuple[int, int, int]] = []  # addr, len, flags
        for data in out:
            addr = self.fe.alloc(max(len(data), 1))
            self.fe.write(addr, data)
            bufs.append((addr, len(data), 0))
        in_bufs: list[tuple[int, int]] = []
        for length in in_lens:
            addr = self.fe.alloc(max(length, 1))
            self.fe.write(addr, b"\xee" * length)
            bufs.append((addr, length, spec.VIRTQ_DESC_F_WRITE))
            in_bufs.append((addr, length))
        if indirect:
            table = self.fe.alloc(spec.VIRTQ_DESC.size * len(bufs), 16)
            for i, (addr, length, flags) in enumerate(bufs):
                more = spec.VIRTQ_DESC_F_NEXT if i + 1 < len(bufs) else 0
                self.write_desc(table, i, addr, length, flags | more, i + 1 if more else 0)
            head = self.free.pop(0)
            size = spec.VIRTQ_DESC.size * len(bufs)
            self.write_desc(self.desc, head, table, size, spec.VIRTQ_DESC_F_INDIRECT, 0)
            used_descs = [head]
        else:
            if len(bufs) > len(self.free):
                raise FrontendError("no free descriptors")
            used_descs = [self.free.pop(0) for _ in bufs]
            for i, ((addr, length, flags), d) in enumerate(zip(bufs, used_descs, strict=True)):
                more = spec.VIRTQ_DESC_F_NEXT if i + 1 < len(bufs) else 0
                self.write_desc(
                    self.desc, d, addr, length, flags | more, used_descs[i + 1] if more else 0
                )
            head = used_descs[0]
        return self.publish(head, used_descs, in_bufs)

    def publish(self, head: int, descs: list[int], in_bufs: list[tuple[int, int]]) -> int:
        """Put `head` in the available ring (after its descriptors were written)."""
        self.pending[head] = (descs, in_bufs)
        self.fe.pack(spec.LE16, self.avail + 4 + 2 * (self.avail_idx % self.num), head)
        self.avail_idx = (self.avail_idx + 1) & 0xFFFF
        self.fe.pack(spec.LE16, self.avail + 2, self.avail_idx)
        return head

    def kick(self) -> None:
        self.kicks += 1
        os.eventfd_write(self.kick_fd, 1)

    # Completions

    def wait_call(self, timeout: float = 2.0) -> bool:
        """Wait for the device to signal the call fd; consumes the signal."""
        ready, _, _ = select.select([self.call_r], [], [], timeout)
        if not ready:
            return False
        while True:
            try:
                if not os.read(self.call_r, 4096):
                    return True
            except BlockingIOError:
                return True

    def called(self) -> bool:
        """Has the call fd been signalled (without waiting)?"""
        return self.wait_call(0)

    def get_used(self) -> list[Completion]:
        """Used elements added since last time, with what was written to their buffers."""
        result = []
        idx = self.used_idx()
        while self.last_used != idx:
            head, written = self.fe.unpack(
                spec.VIRTQ_USED_ELEM,
                self.used + 4 + spec.VIRTQ_USED_ELEM.size * (self.last_used % self.num),
            )
            self.last_used = (self.last_used + 1) & 0xFFFF
            descs, in_bufs = self.pending.pop(head)
            self.free.extend(descs)
            result.append(Completion(head, written, [self.fe.read(a, n) for a, n in in_bufs]))
        # Like virtqueue_enable_cb(): interrupt me at the next used buffer.
        self.set_used_event(self.last_used)
        return result

    def wait_used(self, count: int = 1, timeout: float = 2.0) -> list[Completion]:
        got: list[Completion] = []
        # One deadline for the whole wait: a call fd at EOF (the backend closed it) is
        # always readable, and must not make this spin forever.
        deadline = time.monotonic() + timeout
        while True:
            got.extend(self.get_used())
            if len(got) >= count:
                return got
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self.wait_call(remaining):
                got.extend(self.get_used())
                if len(got) >= count:
                    return got
                raise FrontendError(f"queue {self.index}: {len(got)} of {count} buffers came back")


class FakeFrontend:
    def __init__(self, sock: socket.socket, memory_size: int = MEMORY_SIZE) -> None:
        self.sock = sock
        self.memfd = os.memfd_create("fake-guest", os.MFD_CLOEXEC)
        os.ftruncate(self.memfd, MMAP_OFFSET + memory_size)
        self.mm = mmap.mmap(self.memfd, MMAP_OFFSET + memory_size)
        self.memory_size = memory_size
        self._next = GUEST_BASE + 0x1000
        self.queues: list[DriverQueue] = []
        self.protocol_features = 0
        self.backend_req_r = -1
        self.closed = False

    @classmethod
    def connect(cls, path: Path | str, timeout: float = 5.0) -> FakeFrontend:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        sock.settimeout(timeout)
        sock.connect(os.fspath(path))
        return cls(sock)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for q in self.queues:
            q.close()
        self.queues = []
        if self.backend_req_r >= 0:
            os.close(self.backend_req_r)
            self.backend_req_r = -1
        self.sock.close()
        self.mm.close()
        os.close(self.memfd)

    def __enter__(self) -> FakeFrontend:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # Guest memory

    def alloc(self, size: int, align: int = 8) -> int:
        addr = (self._next + align - 1) // align * align
        if addr + size > GUEST_BASE + self.memory_size:
            raise FrontendError("fake guest memory exhausted")
        self._next = addr + size
        return addr

    def offset(self, gpa: int) -> int:
        return MMAP_OFFSET + gpa - GUEST_BASE

    def write(self, gpa: int, data: bytes) -> None:
        off = self.offset(gpa)
        self.mm[off : off + len(data)] = data

    def read(self, gpa: int, length: int) -> bytes:
        off = self.offset(gpa)
        return self.mm[off : off + length]

    def pack(self, st: struct.Struct, gpa: int, *values: int) -> None:
        st.pack_into(self.mm, self.offset(gpa), *values)

    def unpack(self, st: struct.Struct, gpa: int) -> tuple[int, ...]:
        return tuple(st.unpack_from(self.mm, self.offset(gpa)))

    @staticmethod
    def user(gpa: int) -> int:
        return USER_BASE + gpa - GUEST_BASE

    # Messages

    def send(
        self,
        request: int,
        payload: bytes = b"",
        fds: Sequence[int] = (),
        flags: int = spec.VHOST_USER_VERSION,
    ) -> None:
        data = spec.VHOST_USER_HEADER.pack(request, flags, len(payload)) + payload
        if fds:
            anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())]
            self.sock.sendmsg([data], anc)
        else:
            self.sock.sendall(data)

    def recv(self) -> tuple[int, int, bytes]:
        header = self.recv_exact(spec.VHOST_USER_HEADER.size)
        request, flags, size = spec.VHOST_USER_HEADER.unpack(header)
        return request, flags, self.recv_exact(size)

    def recv_exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise FrontendError("backend closed the connection")
            data += chunk
        return data

    def request(self, request: int, payload: bytes = b"", fds: Sequence[int] = ()) -> bytes:
        """Send a message that has a reply of its own; return the reply's payload."""
        self.send(request, payload, fds)
        reply, flags, data = self.recv()
        if reply != request or flags != spec.VHOST_USER_REPLY_FLAGS:
            raise FrontendError(f"reply to {request} was {reply} with flags {flags:#x}")
        return data

    def message(self, request: int, payload: bytes = b"", fds: Sequence[int] = ()) -> int:
        """Send a message without a reply of its own; with REPLY_ACK, wait for the ack."""
        if not self.protocol_features & spec.VHOST_USER_PROTOCOL_F_REPLY_ACK:
            self.send(request, payload, fds)
            return 0
        self.send(request, payload, fds, spec.VHOST_USER_VERSION | spec.VHOST_USER_FLAG_NEED_REPLY)
        reply, flags, data = self.recv()
        if reply != request or flags != spec.VHOST_USER_REPLY_FLAGS or len(data) != 8:
            raise FrontendError(f"ack to {request} was {reply} with flags {flags:#x}, {data!r}")
        return int(spec.VHOST_USER_U64.unpack(data)[0])

    def get_u64(self, request: int) -> int:
        return int(spec.VHOST_USER_U64.unpack(self.request(request))[0])

    def set_u64(self, request: int, value: int) -> int:
        return self.message(request, spec.VHOST_USER_U64.pack(value))

    # The UML start-up sequence

    def negotiate(self, features: int | None = None, protocol_features: int | None = None) -> int:
        """SET_OWNER .. SET_BACKEND_REQ_FD, SET_FEATURES; returns the features acked."""
        self.message(spec.VHOST_USER_SET_OWNER)
        offered = self.get_u64(spec.VHOST_USER_GET_FEATURES)
        proto = self.get_u64(spec.VHOST_USER_GET_PROTOCOL_FEATURES)
        if protocol_features is not None:
            proto &= protocol_features
        self.protocol_features = proto
        if self.set_u64(spec.VHOST_USER_SET_PROTOCOL_FEATURES, proto):
            raise FrontendError("SET_PROTOCOL_FEATURES failed")
        if proto & spec.VHOST_USER_PROTOCOL_F_BACKEND_REQ:
            r, w = os.pipe2(os.O_CLOEXEC)
            self.backend_req_r = r
            status = self.message(spec.VHOST_USER_SET_BACKEND_REQ_FD, fds=[w])
            os.close(w)
            if status:
                raise FrontendError("SET_BACKEND_REQ_FD failed")
        acked = offered if features is None else offered & features
        if self.set_u64(spec.VHOST_USER_SET_FEATURES, acked):
            raise FrontendError("SET_FEATURES failed")
        return acked

    def set_mem_table(self) -> int:
        region = spec.VHOST_USER_MEMORY_REGION.pack(
            GUEST_BASE, self.memory_size, USER_BASE, MMAP_OFFSET
        )
        return self.message(
            spec.VHOST_USER_SET_MEM_TABLE, spec.VHOST_USER_MEMORY.pack(1, 0) + region, [self.memfd]
        )

    def setup_queue(self, index: int, num: int = 64) -> DriverQueue:
        q = DriverQueue(self, index, num)
        check = self.message
        if check(spec.VHOST_USER_SET_VRING_CALL, spec.VHOST_USER_U64.pack(index), [q.call_w]):
            raise FrontendError("SET_VRING_CALL failed")
        os.close(q.call_w)
        q.call_w = -1
        for request, value in (
            (spec.VHOST_USER_SET_VRING_NUM, num),
            (spec.VHOST_USER_SET_VRING_BASE, 0),
        ):
            if check(request, spec.VHOST_USER_VRING_STATE.pack(index, value)):
                raise FrontendError(f"request {request} failed")
        addr = spec.VHOST_USER_VRING_ADDR.pack(
            index, 0, self.user(q.desc), self.user(q.used), self.user(q.avail), 2**64 - 1
        )
        if check(spec.VHOST_USER_SET_VRING_ADDR, addr):
            raise FrontendError("SET_VRING_ADDR failed")
        self.queues.append(q)
        return q

    def start_queue(self, q: DriverQueue) -> None:
        if self.message(
            spec.VHOST_USER_SET_VRING_KICK, spec.VHOST_USER_U64.pack(q.index), [q.kick_fd]
        ):
            raise FrontendError("SET_VRING_KICK failed")
        if self.message(
            spec.VHOST_USER_SET_VRING_ENABLE, spec.VHOST_USER_VRING_STATE.pack(q.index, 1)
        ):
            raise FrontendError("SET_VRING_ENABLE failed")

    def setup(
        self,
        num_queues: int,
        num: int = 64,
        features: int | None = None,
        protocol_features: int | None = None,
    ) -> list[DriverQueue]:
        """The whole sequence virtio_uml.c sends for a device probe."""
        self.negotiate(features, protocol_features)
        if self.set_mem_table():
            raise FrontendError("SET_MEM_TABLE failed")
        queues = [self.setup_queue(i, num) for i in range(num_queues)]
        for q in queues:
            self.start_queue(q)
        return queues

    def get_config(self, size: int, offset: int = 0) -> bytes:
        reply = self.request(
            spec.VHOST_USER_GET_CONFIG, spec.VHOST_USER_CONFIG.pack(offset, size, 0) + bytes(size)
        )
        return reply[spec.VHOST_USER_CONFIG.size :]

    # Device helpers

    def i2c_transfer(
        self, msgs: Sequence[tuple[int, bytes | int]], indirect: bool = False, flags: int = 0
    ) -> list[tuple[int, bytes]]:
        """One I2C transfer like i2c-virtio.c: bytes = write, int = read of that length.

        Returns (status, data read) per message.
        """
        q = self.queues[0]
        heads = []
        for i, (addr, what) in enumerate(msgs):
            mflags = flags
            if i != len(msgs) - 1:
                mflags |= spec.VIRTIO_I2C_FLAGS_FAIL_NEXT
            hdr = spec.VIRTIO_I2C_OUT_HDR.pack(
                addr << 1, 0, mflags | (spec.VIRTIO_I2C_FLAGS_M_RD if isinstance(what, int) else 0)
            )
            if isinstance(what, int):
                out, ins = [hdr], ([what, 1] if what else [1])
            else:
                out, ins = ([hdr, what] if what else [hdr]), [1]
            heads.append(q.add(out, ins, indirect=indirect))
        q.kick()
        done = {c.head: c for c in q.wait_used(len(heads))}
        result = []
        for head in heads:
            c = done[head]
            status = c.buffers[-1][0]
            data = c.buffers[0] if len(c.buffers) == 2 else b""
            result.append((status, data))
        return result

    def gpio_request(self, kind: int, gpio: int, value: int = 0, rxlen: int = 2) -> bytes:
        """One requestq round trip; returns what the device wrote (status, value...)."""
        q = self.queues[0]
        q.add([spec.VIRTIO_GPIO_REQUEST.pack(kind, gpio, value)], [rxlen])
        q.kick()
        (c,) = q.wait_used(1)
        return c.buffers[0][: c.written]

    def gpio_value(self, kind: int, gpio: int, value: int = 0) -> tuple[int, int]:
        status, result = spec.VIRTIO_GPIO_RESPONSE.unpack(self.gpio_request(kind, gpio, value))
        return status, result

    def gpio_unmask(self, gpio: int) -> int:
        """Post an eventq buffer for `gpio`; returns its head."""
        q = self.queues[1]
        head = q.add([spec.VIRTIO_GPIO_IRQ_REQUEST.pack(gpio)], [1])
        q.kick()
        return head
