"""The vhost-user server side, driven by a fake frontend over real sockets.

Most tests use a socketpair into a VhostUserConnection served by the real
event loop on its own thread; the reconnect tests use the Backend's listening
sockets, as UML does.
"""

from __future__ import annotations

import array
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Generic, TypeVar

import pytest
import virtio_spec as spec
from fake_frontend import (
    GUEST_BASE,
    MEMORY_SIZE,
    MMAP_OFFSET,
    USER_BASE,
    FakeFrontend,
    FrontendError,
)

from roadtest.backend import vhost_user as vu
from roadtest.backend.device import BackendError, VirtioDevice
from roadtest.backend.gpio import VirtioGpio
from roadtest.backend.i2c import VirtioI2C
from roadtest.backend.server import Backend, BackendStartError, EventLoop
from roadtest.backend.virtqueue import Virtqueue
from roadtest.models import SimpleSMBusModel
from roadtest.simtime.notify import Link, Notifier, Queue, Scheduler

D = TypeVar("D", bound=VirtioDevice)


class Served(Generic[D]):
    """A device behind a socketpair, served by an EventLoop thread."""

    def __init__(self, device: D, scheduler: Scheduler | None = None) -> None:
        self.device = device
        self.loop = EventLoop()
        ours, theirs = socket.socketpair()
        self.conn = vu.VhostUserConnection(ours, device, self.loop, scheduler=scheduler)
        self.dropped = threading.Event()
        self.loop.add_reader(ours.fileno(), self._readable)
        self.thread = threading.Thread(target=self.loop.run, daemon=True)
        self.thread.start()
        theirs.settimeout(5)
        self.fe = FakeFrontend(theirs)

    def _readable(self) -> None:
        if not self.conn.on_readable():
            self.loop.remove_reader(self.conn.sock.fileno())
            self.conn.close()
            self.dropped.set()

    def close(self) -> None:
        self.loop.stop()
        self.thread.join(5)
        self.conn.close()
        self.loop.close()
        self.fe.close()


@pytest.fixture
def i2c() -> Iterator[Served[VirtioI2C]]:
    dev = VirtioI2C()
    dev.attach(0x48, SimpleSMBusModel({0: 0x1234}, regbytes=2, byteorder="big"))
    served = Served(dev)
    yield served
    served.close()


@pytest.fixture
def gpio() -> Iterator[Served[VirtioGpio]]:
    served = Served(VirtioGpio(ngpio=8, names=[f"l{i}" for i in range(8)]))
    yield served
    served.close()


@pytest.fixture
def workdir() -> Iterator[Path]:
    # Not tmp_path: UNIX socket paths must stay under 108 bytes.
    with tempfile.TemporaryDirectory(prefix="rt-vu-") as d:
        yield Path(d)


def wait_for(cond: Callable[[], bool], timeout: float = 2.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.001)
    return cond()


# Negotiation


def test_features_offered(i2c: Served[VirtioI2C]) -> None:
    features = i2c.fe.get_u64(spec.VHOST_USER_GET_FEATURES)
    for bit in (
        spec.VIRTIO_F_VERSION_1,
        spec.VHOST_USER_F_PROTOCOL_FEATURES,
        spec.VIRTIO_RING_F_INDIRECT_DESC,
        spec.VIRTIO_RING_F_EVENT_IDX,
        spec.VIRTIO_I2C_F_ZERO_LENGTH_REQUEST,
    ):
        assert features & bit, hex(bit)


def test_protocol_features_offered(i2c: Served[VirtioI2C]) -> None:
    proto = i2c.fe.get_u64(spec.VHOST_USER_GET_PROTOCOL_FEATURES)
    for bit in (
        spec.VHOST_USER_PROTOCOL_F_MQ,
        spec.VHOST_USER_PROTOCOL_F_REPLY_ACK,
        spec.VHOST_USER_PROTOCOL_F_BACKEND_REQ,
    ):
        assert proto & bit, hex(bit)
    # Virtio 1.2, 5.19.4: virtio-i2c defines no configuration layout, so no CONFIG.
    assert not proto & spec.VHOST_USER_PROTOCOL_F_CONFIG


def test_a_reply_on_the_wire_is_the_specifications_bytes(i2c: Served[VirtioI2C]) -> None:
    """GET_FEATURES (request 1) by hand: the reply is a 12-byte header, request 1, flags
    0x5 (version 1, reply), size 8, then the u64 with bits 32 (VERSION_1), 30
    (PROTOCOL_FEATURES), 28 (INDIRECT_DESC), 29 (EVENT_IDX) and virtio-i2c's bit 0."""
    i2c.fe.sock.sendall(b"\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00")
    reply = i2c.fe.recv_exact(20)
    assert reply[:12] == b"\x01\x00\x00\x00\x05\x00\x00\x00\x08\x00\x00\x00"
    features = int.from_bytes(reply[12:], "little")
    assert [bit for bit in (0, 28, 29, 30, 32) if features >> bit & 1] == [0, 28, 29, 30, 32]


def test_protocol_features_on_the_wire(i2c: Served[VirtioI2C]) -> None:
    """GET_PROTOCOL_FEATURES is request 15; MQ, REPLY_ACK, BACKEND_REQ and CONFIG are
    bits 0, 3, 5 and 9 (not CONFIG for virtio-i2c, which has no config space)."""
    i2c.fe.sock.sendall(b"\x0f\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00")
    reply = i2c.fe.recv_exact(20)
    assert reply[:12] == b"\x0f\x00\x00\x00\x05\x00\x00\x00\x08\x00\x00\x00"
    proto = int.from_bytes(reply[12:], "little")
    assert [bit for bit in (0, 3, 5, 9) if proto >> bit & 1] == [0, 3, 5]
    # In the host's time (no scheduler given) notifications are not messages.
    assert not proto & spec.VHOST_USER_PROTOCOL_F_INBAND_NOTIFICATIONS


def test_replies_carry_exactly_reply_and_version(i2c: Served[VirtioI2C]) -> None:
    i2c.fe.send(spec.VHOST_USER_GET_FEATURES)
    request, flags, payload = i2c.fe.recv()
    assert (request, flags, len(payload)) == (
        spec.VHOST_USER_GET_FEATURES,
        spec.VHOST_USER_FLAG_REPLY | spec.VHOST_USER_VERSION,
        8,
    )


def test_need_reply_gets_a_zero_ack(i2c: Served[VirtioI2C]) -> None:
    i2c.fe.send(
        spec.VHOST_USER_SET_OWNER, flags=spec.VHOST_USER_VERSION | spec.VHOST_USER_FLAG_NEED_REPLY
    )
    request, flags, payload = i2c.fe.recv()
    assert (request, flags, payload) == (
        spec.VHOST_USER_SET_OWNER,
        spec.VHOST_USER_REPLY_FLAGS,
        spec.VHOST_USER_U64.pack(0),
    )


def test_no_ack_without_need_reply(i2c: Served[VirtioI2C]) -> None:
    i2c.fe.send(spec.VHOST_USER_SET_OWNER)
    i2c.fe.send(
        spec.VHOST_USER_SET_PROTOCOL_FEATURES,
        spec.VHOST_USER_U64.pack(spec.VHOST_USER_PROTOCOL_F_REPLY_ACK),
    )
    # The next thing on the socket is the reply to this, not an ack of the above.
    assert i2c.fe.get_u64(spec.VHOST_USER_GET_QUEUE_NUM) == 1


def test_unknown_request(i2c: Served[VirtioI2C]) -> None:
    i2c.fe.send(99, b"abc", flags=spec.VHOST_USER_VERSION | spec.VHOST_USER_FLAG_NEED_REPLY)
    request, flags, payload = i2c.fe.recv()
    assert (request, flags) == (99, spec.VHOST_USER_REPLY_FLAGS)
    assert spec.VHOST_USER_U64.unpack(payload)[0] != 0
    i2c.fe.send(98)  # without NEED_REPLY: ignored, and the connection carries on
    assert i2c.fe.get_u64(spec.VHOST_USER_GET_QUEUE_NUM) == 1


def test_unknown_request_fds_are_closed(i2c: Served[VirtioI2C]) -> None:
    r, w = os.pipe()
    try:
        i2c.fe.send(97, b"", [w], flags=spec.VHOST_USER_VERSION | spec.VHOST_USER_FLAG_NEED_REPLY)
        i2c.fe.recv()
        os.close(w)
        w = -1
        # Every copy of the write end is gone: reading sees end of file.
        assert os.read(r, 1) == b""
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)


def test_failed_message_acks_non_zero(i2c: Served[VirtioI2C]) -> None:
    i2c.fe.protocol_features = spec.VHOST_USER_PROTOCOL_F_REPLY_ACK
    assert (
        i2c.fe.message(spec.VHOST_USER_SET_VRING_NUM, spec.VHOST_USER_VRING_STATE.pack(5, 64)) != 0
    )  # no queue 5
    assert (
        i2c.fe.message(spec.VHOST_USER_SET_VRING_NUM, spec.VHOST_USER_VRING_STATE.pack(0, 63)) != 0
    )  # not a power of 2
    assert i2c.fe.message(spec.VHOST_USER_SET_FEATURES, b"\x01") != 0  # short payload
    assert i2c.fe.message(spec.VHOST_USER_SET_LOG_BASE, spec.VHOST_USER_U64.pack(0)) != 0
    assert (
        i2c.fe.message(spec.VHOST_USER_SET_VRING_NUM, spec.VHOST_USER_VRING_STATE.pack(0, 64)) == 0
    )


def test_get_queue_num(i2c: Served[VirtioI2C], gpio: Served[VirtioGpio]) -> None:
    assert i2c.fe.get_u64(spec.VHOST_USER_GET_QUEUE_NUM) == 1
    assert gpio.fe.get_u64(spec.VHOST_USER_GET_QUEUE_NUM) == 2


def test_bad_version_drops_the_connection(i2c: Served[VirtioI2C]) -> None:
    i2c.fe.send(spec.VHOST_USER_GET_FEATURES, flags=0x2)
    assert i2c.dropped.wait(2)


def test_oversized_payload_drops_the_connection(i2c: Served[VirtioI2C]) -> None:
    i2c.fe.sock.sendall(
        spec.VHOST_USER_HEADER.pack(spec.VHOST_USER_SET_CONFIG, spec.VHOST_USER_VERSION, 1 << 20)
    )
    assert i2c.dropped.wait(2)


def test_set_features_reaches_the_device_and_the_rings(i2c: Served[VirtioI2C]) -> None:
    acked = i2c.fe.negotiate()
    assert i2c.device.features == acked & 0xFFFFFF
    assert all(q.event_idx and q.indirect for q in i2c.conn.queues)
    assert i2c.conn.acked_features == acked
    assert i2c.fe.backend_req_r >= 0
    assert i2c.conn.backend_req_fd >= 0


# Memory and rings


def test_mem_table_and_translation(i2c: Served[VirtioI2C]) -> None:
    i2c.fe.negotiate()
    i2c.fe.write(GUEST_BASE + 0x80, b"guest bytes")
    assert i2c.fe.set_mem_table() == 0
    mem = i2c.conn.memory
    (region,) = mem.regions
    assert (region.guest_addr, region.size, region.user_addr, region.mmap_offset) == (
        GUEST_BASE,
        MEMORY_SIZE,
        USER_BASE,
        MMAP_OFFSET,
    )
    mm, off = mem.translate(GUEST_BASE + 0x80, 11)
    assert mm[off : off + 11] == b"guest bytes"
    mm, off = mem.translate_user(USER_BASE + 0x80, 11)
    assert mm[off : off + 11] == b"guest bytes"
    mm[off : off + 5] = b"BACK!"  # shared, both ways
    assert i2c.fe.read(GUEST_BASE + 0x80, 5) == b"BACK!"


def test_mem_table_with_two_regions(i2c: Served[VirtioI2C]) -> None:
    i2c.fe.negotiate()
    other = os.memfd_create("second", os.MFD_CLOEXEC)
    try:
        os.ftruncate(other, 3 * 4096)
        os.pwrite(other, b"second region", 4096)
        regions = spec.VHOST_USER_MEMORY_REGION.pack(
            GUEST_BASE, MEMORY_SIZE, USER_BASE, MMAP_OFFSET
        )
        regions += spec.VHOST_USER_MEMORY_REGION.pack(0x1_0000_0000, 8192, 0x5000_0000, 4096)
        payload = spec.VHOST_USER_MEMORY.pack(2, 0) + regions
        assert i2c.fe.message(spec.VHOST_USER_SET_MEM_TABLE, payload, [i2c.fe.memfd, other]) == 0
    finally:
        os.close(other)
    mm, off = i2c.conn.memory.translate(0x1_0000_0000, 13)
    assert mm[off : off + 13] == b"second region"
    mm, off = i2c.conn.memory.translate_user(0x5000_0000, 13)
    assert mm[off : off + 13] == b"second region"


def test_mem_table_errors_are_acked_not_fatal(i2c: Served[VirtioI2C]) -> None:
    i2c.fe.negotiate()
    too_big = spec.VHOST_USER_MEMORY.pack(1, 0) + spec.VHOST_USER_MEMORY_REGION.pack(
        0, 1 << 30, 0, 0
    )
    assert i2c.fe.message(spec.VHOST_USER_SET_MEM_TABLE, too_big, [i2c.fe.memfd]) != 0
    no_fd = spec.VHOST_USER_MEMORY.pack(1, 0) + spec.VHOST_USER_MEMORY_REGION.pack(0, 4096, 0, 0)
    assert i2c.fe.message(spec.VHOST_USER_SET_MEM_TABLE, no_fd) != 0
    assert i2c.fe.set_mem_table() == 0


def test_full_setup_and_a_transfer(i2c: Served[VirtioI2C]) -> None:
    i2c.fe.setup(1)
    assert i2c.conn.queues[0].ready
    assert i2c.fe.i2c_transfer([(0x48, b"\x00"), (0x48, 2)]) == [(0, b""), (0, b"\x12\x34")]


def test_call_fd_may_be_an_eventfd(i2c: Served[VirtioI2C]) -> None:
    i2c.fe.setup(1)
    q = i2c.fe.queues[0]
    efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
    try:
        assert (
            i2c.fe.message(spec.VHOST_USER_SET_VRING_CALL, spec.VHOST_USER_U64.pack(0), [efd]) == 0
        )
        q.add([b"\x90\x00\x00\x00\x00\x00\x00\x00"], [1])
        q.kick()
        assert wait_for(lambda: q.used_idx() == 1)
        assert os.eventfd_read(efd) == 1
    finally:
        os.close(efd)


def test_ring_without_kick_fd_takes_in_band_kicks(i2c: Served[VirtioI2C]) -> None:
    fe = i2c.fe
    fe.negotiate()
    fe.set_mem_table()
    q = fe.setup_queue(0)
    assert (
        fe.message(
            spec.VHOST_USER_SET_VRING_KICK,
            spec.VHOST_USER_U64.pack(spec.VHOST_USER_VRING_NOFD_MASK),
        )
        == 0
    )
    assert fe.message(spec.VHOST_USER_SET_VRING_ENABLE, spec.VHOST_USER_VRING_STATE.pack(0, 1)) == 0
    q.add([b"\x90\x00\x00\x00\x00\x00\x00\x00"], [1])
    assert fe.message(spec.VHOST_USER_VRING_KICK, spec.VHOST_USER_VRING_STATE.pack(0, 0)) == 0
    (done,) = q.wait_used(1)
    assert done.buffers == [b"\x00"]


def test_ring_waits_for_enable(i2c: Served[VirtioI2C]) -> None:
    fe = i2c.fe
    fe.negotiate()
    fe.set_mem_table()
    q = fe.setup_queue(0)
    assert fe.message(spec.VHOST_USER_SET_VRING_KICK, spec.VHOST_USER_U64.pack(0), [q.kick_fd]) == 0
    q.add([b"\x90\x00\x00\x00\x00\x00\x00\x00"], [1])
    q.kick()
    fe.get_u64(spec.VHOST_USER_GET_QUEUE_NUM)  # a round trip, after which the kick has been seen
    assert q.used_idx() == 0  # started but disabled: left alone
    assert fe.message(spec.VHOST_USER_SET_VRING_ENABLE, spec.VHOST_USER_VRING_STATE.pack(0, 1)) == 0
    assert len(q.wait_used(1)) == 1  # enabling processed what was waiting
    assert fe.message(spec.VHOST_USER_SET_VRING_ENABLE, spec.VHOST_USER_VRING_STATE.pack(0, 0)) == 0
    q.add([b"\x90\x00\x00\x00\x00\x00\x00\x00"], [1])
    q.kick()
    fe.get_u64(spec.VHOST_USER_GET_QUEUE_NUM)
    assert q.used_idx() == 1


def test_rings_enabled_without_protocol_features(i2c: Served[VirtioI2C]) -> None:
    fe = i2c.fe
    features = fe.get_u64(spec.VHOST_USER_GET_FEATURES) & ~spec.VHOST_USER_F_PROTOCOL_FEATURES
    fe.set_u64(spec.VHOST_USER_SET_FEATURES, features)
    fe.set_mem_table()
    q = fe.setup_queue(0)
    fe.send(
        spec.VHOST_USER_SET_VRING_KICK, spec.VHOST_USER_U64.pack(0), [q.kick_fd]
    )  # no SET_VRING_ENABLE follows
    assert fe.i2c_transfer([(0x48, b"\x00")]) == [(0, b"")]


def test_get_vring_base_stops_the_ring(i2c: Served[VirtioI2C]) -> None:
    i2c.fe.setup(1)
    for _ in range(3):
        i2c.fe.i2c_transfer([(0x48, b"\x00"), (0x48, 2)])
    reply = i2c.fe.request(spec.VHOST_USER_GET_VRING_BASE, spec.VHOST_USER_VRING_STATE.pack(0, 0))
    assert spec.VHOST_USER_VRING_STATE.unpack(reply) == (0, 6)
    vq = i2c.conn.queues[0]
    assert not vq.ready and vq.kick_fd == -1
    q = i2c.fe.queues[0]
    q.add([b"\x90\x00\x00\x00\x00\x00\x00\x00"], [1])
    q.kick()
    i2c.fe.get_u64(spec.VHOST_USER_GET_QUEUE_NUM)
    assert q.used_idx() == 6  # stopped: nothing more is taken


def test_get_config(gpio: Served[VirtioGpio]) -> None:
    gpio.fe.negotiate()
    config = gpio.fe.get_config(8)
    names = b"".join(f"l{i}".encode() + b"\0" for i in range(8))
    assert config == bytes([8, 0, 0, 0]) + len(names).to_bytes(4, "little")
    # UML asks for offset + len bytes from 0 and expects exactly that many back.
    assert gpio.fe.get_config(2) == bytes([8, 0])
    assert gpio.fe.get_config(12) == config + bytes(4)
    reply = gpio.fe.request(
        spec.VHOST_USER_GET_CONFIG, spec.VHOST_USER_CONFIG.pack(4, 4, 0) + bytes(4)
    )
    assert spec.VHOST_USER_CONFIG.unpack_from(reply) == (4, 4, 0)
    assert reply[12:] == len(names).to_bytes(4, "little")


def test_set_config_is_acked(gpio: Served[VirtioGpio]) -> None:
    gpio.fe.negotiate()
    assert (
        gpio.fe.message(
            spec.VHOST_USER_SET_CONFIG, spec.VHOST_USER_CONFIG.pack(0, 2, 0) + b"\x01\x00"
        )
        == 0
    )
    assert gpio.fe.get_config(2) == bytes([8, 0])


def test_reset_owner_resets_device_and_rings(gpio: Served[VirtioGpio]) -> None:
    gpio.fe.setup(2)
    assert gpio.fe.gpio_value(spec.VIRTIO_GPIO_MSG_SET_DIRECTION, 3, 1) == (0, 0)
    assert gpio.fe.message(spec.VHOST_USER_RESET_OWNER) == 0
    assert not any(q.ready for q in gpio.conn.queues)
    assert gpio.device.lines[3].direction == 2  # IN, the reset state


def test_fds_of_a_dropped_connection_are_closed(i2c: Served[VirtioI2C]) -> None:
    i2c.fe.setup(1)
    vq: Virtqueue = i2c.conn.queues[0]
    kick, call = vq.kick_fd, vq.call_fd
    i2c.fe.sock.shutdown(socket.SHUT_RDWR)
    assert i2c.dropped.wait(2)
    for fd in (kick, call):
        with pytest.raises(OSError):
            os.fstat(fd)
    assert i2c.conn.memory.regions == []


MAX_FDS = 8  # QEMU's VHOST_MEMORY_BASELINE_NREGIONS: the most fds a frontend sends at once


def test_too_many_fds_drop_the_connection(i2c: Served[VirtioI2C]) -> None:
    fds = [os.dup(0) for _ in range(MAX_FDS + 2)]
    try:
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())]
        i2c.fe.sock.sendmsg(
            [spec.VHOST_USER_HEADER.pack(spec.VHOST_USER_SET_OWNER, spec.VHOST_USER_VERSION, 0)],
            anc,
        )
        assert i2c.dropped.wait(2)
    finally:
        for fd in fds:
            os.close(fd)


# The Backend: listening sockets, reconnects


def test_backend_sockets_and_cleanup(workdir: Path) -> None:
    backend = Backend(workdir / "w")
    assert backend.i2c_socket == workdir / "w" / "i2c.sock"
    with backend:
        assert backend.running
        assert backend.i2c_socket.is_socket() and backend.gpio_socket.is_socket()
        with pytest.raises(BackendStartError):
            backend.start()
    assert not backend.running
    assert not backend.i2c_socket.exists() and not backend.gpio_socket.exists()
    backend.stop()  # twice is fine


def test_backend_socket_path_too_long() -> None:
    backend = Backend(Path("/tmp") / ("x" * 120))
    with pytest.raises(BackendStartError, match="longer than"):
        backend.start()


def test_backend_replaces_a_stale_socket_file(workdir: Path) -> None:
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(os.fspath(workdir / "i2c.sock"))
    stale.close()
    with Backend(workdir) as backend, FakeFrontend.connect(backend.i2c_socket) as fe:
        assert fe.get_u64(spec.VHOST_USER_GET_QUEUE_NUM) == 1


def test_disconnect_and_reconnect(workdir: Path) -> None:
    model = SimpleSMBusModel({0: 0x0102}, regbytes=2)
    with Backend(workdir) as backend:
        backend.i2c.attach(0x50, model)
        for _ in range(3):
            with FakeFrontend.connect(backend.i2c_socket) as fe:
                fe.setup(1)
                assert fe.i2c_transfer([(0x50, b"\x00"), (0x50, 2)]) == [(0, b""), (0, b"\x02\x01")]
            # The guest is gone; the device waits for the next one.
            assert wait_for(lambda: backend.i2c.queues == [])
        with FakeFrontend.connect(backend.gpio_socket) as fe:
            fe.setup(2)
            assert fe.gpio_value(spec.VIRTIO_GPIO_MSG_SET_DIRECTION, 1, 1) == (0, 0)
            assert fe.gpio_value(spec.VIRTIO_GPIO_MSG_GET_DIRECTION, 1) == (0, 1)
        with FakeFrontend.connect(backend.gpio_socket) as fe:
            fe.setup(2)
            assert fe.gpio_value(spec.VIRTIO_GPIO_MSG_GET_DIRECTION, 1) == (0, 2)  # reset: IN again
        assert backend.i2c.connections == 3
        assert backend.errors == []


def test_a_new_frontend_replaces_a_connected_one(workdir: Path) -> None:
    with Backend(workdir) as backend:
        backend.i2c.attach(0x50, SimpleSMBusModel({0: 7}))
        old = FakeFrontend.connect(backend.i2c_socket)
        try:
            old.setup(1)
            with FakeFrontend.connect(backend.i2c_socket) as new:
                new.setup(1)
                assert new.i2c_transfer([(0x50, b"\x00"), (0x50, 1)]) == [(0, b""), (0, b"\x07")]
            with pytest.raises((FrontendError, OSError)):
                old.get_u64(spec.VHOST_USER_GET_FEATURES)
        finally:
            old.close()


def test_backend_errors_and_callback(workdir: Path) -> None:
    seen: list[BackendError] = []
    with Backend(workdir, on_error=seen.append) as backend:
        backend.i2c.attach(0x50, SimpleSMBusModel({0: 7}))
        with FakeFrontend.connect(backend.i2c_socket) as fe:
            fe.setup(1)
            statuses = [status for status, _ in fe.i2c_transfer([(0x50, b"\x09"), (0x50, 1)])]
            assert statuses == [0, 1]
        assert len(backend.errors) == 1 and seen == backend.errors
        assert "unknown register 0x09" in str(backend.errors[0])


def test_call_soon_runs_on_the_backend_thread(workdir: Path) -> None:
    with Backend(workdir) as backend:
        ran = threading.Event()
        names: list[str] = []

        def job() -> None:
            names.append(threading.current_thread().name)
            ran.set()

        backend.call_soon(job)
        assert ran.wait(2)
        assert names == ["roadtest-backend"]


def test_bad_ring_at_enable_is_a_device_error_not_a_failed_message(i2c: Served[VirtioI2C]) -> None:
    seen: list[BackendError] = []
    i2c.device.report = seen.append
    fe = i2c.fe
    fe.negotiate()
    fe.set_mem_table()
    q = fe.setup_queue(0, num=8)
    fe.pack(spec.LE16, q.avail + 2, 100)  # garbage available index
    assert fe.message(spec.VHOST_USER_SET_VRING_KICK, spec.VHOST_USER_U64.pack(0), [q.kick_fd]) == 0
    assert fe.message(spec.VHOST_USER_SET_VRING_ENABLE, spec.VHOST_USER_VRING_STATE.pack(0, 1)) == 0
    assert i2c.conn.queues[0].broken
    (error,) = seen
    assert error.kind == "device" and "more than 8 ahead" in str(error)


# The seam to time: the transport asks its scheduler, and times nothing itself


class RecordingNotifier:
    """A notifier that records what the transport tells it; queues that do not spin
    ask for no kicks, as under simulated time."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.signals: list[tuple[int, int]] = []  # (queue, after)
        self.in_flight_calls = 0
        self.replies = 0
        self.closed = False

    def kicks(self, vq: Queue) -> bool:
        return vq.driver_spins

    def signal(self, vq: Queue, after: int) -> None:
        self.signals.append((vq.index, after))

    def in_flight(self, calls: int) -> None:
        self.in_flight_calls += calls

    def replied(self) -> None:
        self.replies += 1

    def close(self) -> None:
        self.closed = True


class RecordingScheduler:
    in_band = True

    def __init__(self) -> None:
        self.notifiers: list[RecordingNotifier] = []

    def notifier(self, link: Link) -> Notifier:
        notifier = RecordingNotifier(link)
        self.notifiers.append(notifier)
        return notifier

    def listen(self, loop: object) -> None:
        pass

    def close(self) -> None:
        pass


def on_loop(served: Served[D], fn: Callable[[], object]) -> None:
    done = threading.Event()

    def call() -> None:
        try:
            fn()
        finally:
            done.set()

    served.loop.call_soon(call)
    assert done.wait(5)


def test_in_band_notifications_are_the_schedulers_to_time() -> None:
    """Offered only when the scheduler times them; then the transport kicks, looks at
    rings and sends calls only when its notifier says, and the calendar's hold on a
    call lasts until the guest's reply on the backend-request channel."""
    scheduler = RecordingScheduler()
    dev = VirtioI2C()
    dev.attach(0x48, SimpleSMBusModel({0: 0x1234}, regbytes=2, byteorder="big"))
    served = Served(dev, scheduler)
    fe = served.fe
    guests_end, backends_end = socket.socketpair()
    try:
        fe.message(spec.VHOST_USER_SET_OWNER)
        offered = fe.get_u64(spec.VHOST_USER_GET_FEATURES)
        proto = fe.get_u64(spec.VHOST_USER_GET_PROTOCOL_FEATURES)
        assert proto & spec.VHOST_USER_PROTOCOL_F_INBAND_NOTIFICATIONS
        fe.protocol_features = proto  # REPLY_ACK from here: each message is acked
        assert fe.set_u64(spec.VHOST_USER_SET_PROTOCOL_FEATURES, proto) == 0
        (notifier,) = scheduler.notifiers
        assert notifier.link is served.conn
        assert fe.message(spec.VHOST_USER_SET_BACKEND_REQ_FD, fds=[backends_end.fileno()]) == 0
        assert fe.set_u64(spec.VHOST_USER_SET_FEATURES, offered) == 0
        assert fe.set_mem_table() == 0
        q = fe.setup_queue(0)
        # No SET_VRING_KICK under in-band notifications: enabling starts the ring.
        assert (
            fe.message(spec.VHOST_USER_SET_VRING_ENABLE, spec.VHOST_USER_VRING_STATE.pack(0, 1))
            == 0
        )
        assert served.conn.queues[0].kicks is False  # the notifier's answer
        q.add([b"\x90\x00\x00\x00\x00\x00\x00\x00"], [1])
        fe.get_u64(spec.VHOST_USER_GET_QUEUE_NUM)
        assert q.used_idx() == 0  # nobody kicked, nobody looked
        before = len(notifier.signals)  # enabling the ring may have told of nothing at once
        on_loop(served, served.conn.look_at_rings)  # the guest waits
        (done,) = q.wait_used(1)
        assert done.buffers == [b"\x00"]
        # Told through the notifier, with the transfer's time on the bus (START, the
        # address byte and its ack, STOP at 100 kHz), and not through the call fd.
        assert notifier.signals[before:] == [(0, (1 + 9 + 1) * 10_000)]
        assert not q.called()
        on_loop(served, lambda: served.conn.send_calls([0]))
        guests_end.settimeout(5)
        call = guests_end.recv(spec.VHOST_USER_HEADER.size + spec.VHOST_USER_VRING_STATE.size)
        request, flags, size = spec.VHOST_USER_HEADER.unpack_from(call)
        assert (request, size) == (spec.VHOST_USER_BACKEND_VRING_CALL, 8)
        assert flags == spec.VHOST_USER_VERSION | spec.VHOST_USER_FLAG_NEED_REPLY
        assert spec.VHOST_USER_VRING_STATE.unpack_from(call, 12) == (0, 0)
        assert wait_for(lambda: notifier.in_flight_calls == 1)
        assert notifier.replies == 0
        guests_end.sendall(
            spec.VHOST_USER_HEADER.pack(
                spec.VHOST_USER_BACKEND_VRING_CALL, spec.VHOST_USER_REPLY_FLAGS, 8
            )
            + spec.VHOST_USER_U64.pack(0)
        )
        assert wait_for(lambda: notifier.replies == 1)
    finally:
        served.close()
        guests_end.close()
        backends_end.close()
    assert notifier.closed
