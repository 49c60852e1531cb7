"""Split virtqueue: chains, indirect tables, index wraparound, EVENT_IDX, malformed rings.

The driver side is the fake frontend's DriverQueue laying out rings in a
memfd; the device side is a Virtqueue over the same memfd, mapped the way
SET_MEM_TABLE maps it (guest-physical and "frontend virtual" addresses differ).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest
import virtio_spec as spec
from fake_frontend import (
    GUEST_BASE,
    MEMORY_SIZE,
    MMAP_OFFSET,
    USER_BASE,
    DriverQueue,
    FakeFrontend,
)

from roadtest.backend.memory import GuestMemory, GuestMemoryError, RegionSpec
from roadtest.backend.virtqueue import (
    Virtqueue,
    VirtqueueError,
    vring_need_event,
)


class Rig:
    def __init__(self, num: int = 8, event_idx: bool = False, indirect: bool = True) -> None:
        self.sock, self.peer = socket.socketpair()
        self.fe = FakeFrontend(self.sock)
        self.memory = GuestMemory()
        self.memory.set_table(
            [RegionSpec(GUEST_BASE, MEMORY_SIZE, USER_BASE, MMAP_OFFSET)], [self.fe.memfd]
        )
        self.dq = DriverQueue(self.fe, 0, num)
        self.vq = Virtqueue(0, self.memory, "test")
        self.vq.set_num(num)
        self.vq.set_base(0)
        self.vq.set_addr(
            self.fe.user(self.dq.desc), self.fe.user(self.dq.used), self.fe.user(self.dq.avail)
        )
        self.vq.event_idx = event_idx
        self.vq.indirect = indirect
        self.vq.call_fd = os.dup(self.dq.call_w)
        self.vq.start()
        self.vq.enabled = True

    def close(self) -> None:
        os.close(self.vq.call_fd)
        self.dq.close()
        self.memory.clear()
        self.fe.close()
        self.peer.close()


@pytest.fixture
def rig() -> Iterator[Rig]:
    r = Rig()
    yield r
    r.close()


@pytest.fixture
def rig_event_idx() -> Iterator[Rig]:
    r = Rig(event_idx=True)
    yield r
    r.close()


def test_ready_needs_started_enabled_and_mapped(rig: Rig) -> None:
    assert rig.vq.ready
    rig.vq.enabled = False
    assert not rig.vq.ready
    assert rig.vq.pop() is None
    rig.vq.enabled = True
    rig.vq.unmap()
    assert not rig.vq.ready
    rig.vq.map_rings()
    assert rig.vq.ready
    rig.vq.stop()
    assert not rig.vq.ready


def test_simple_chain_round_trip(rig: Rig) -> None:
    head = rig.dq.add([b"hello"], [4])
    assert rig.vq.avail_pending() == 1
    req = rig.vq.pop()
    assert req is not None
    assert req.head == head
    assert req.out == b"hello"
    assert req.in_len == 4
    assert rig.vq.pop() is None
    req.write(b"ab")
    req.write_last(0x7F)
    rig.vq.push(req, 4)
    assert rig.dq.called()
    (done,) = rig.dq.get_used()
    assert (done.head, done.written) == (head, 4)
    assert done.buffers == [b"ab\xee\x7f"]


def test_long_chain_concatenates_and_writes_across_segments(rig: Rig) -> None:
    rig.dq.add([b"ab", b"", b"cde"], [2, 1, 3])
    req = rig.vq.pop()
    assert req is not None
    assert req.out == b"abcde"
    assert req.in_len == 6
    assert req.write(b"123456") == 6
    with pytest.raises(VirtqueueError, match="do not fit"):
        req.write(b"xy", 5)
    req.write(b"Z", 2)
    rig.vq.push(req, 6)
    (done,) = rig.dq.get_used()
    assert done.buffers == [b"12", b"Z", b"456"]


def test_indirect_chain(rig: Rig) -> None:
    head = rig.dq.add([b"\x01\x02", b"\x03"], [2, 1], indirect=True)
    req = rig.vq.pop()
    assert req is not None
    assert req.head == head
    assert req.out == b"\x01\x02\x03"
    assert req.in_len == 3
    req.write(b"xyz")
    rig.vq.push(req, 3)
    (done,) = rig.dq.get_used()
    assert done.buffers == [b"xy", b"z"]


def test_indirect_needs_the_feature() -> None:
    r = Rig(indirect=False)
    try:
        r.dq.add([b"x"], [1], indirect=True)
        with pytest.raises(VirtqueueError, match="INDIRECT_DESC not negotiated"):
            r.vq.pop()
        assert r.vq.broken
        assert not r.vq.ready
    finally:
        r.close()


def test_ring_indices_wrap_around() -> None:
    r = Rig(num=4)
    try:
        start = 0xFFFE
        # A ring that ran before: both sides near the 16-bit wrap.
        r.dq.avail_idx = r.dq.last_used = start
        r.fe.pack(spec.LE16, r.dq.avail + 2, start)
        r.fe.pack(spec.LE16, r.dq.used + 2, start)
        r.vq.set_base(start)
        r.vq.map_rings()
        assert r.vq.used_idx == start
        for i in range(10):  # crosses 0xffff -> 0 and wraps the 4-entry ring twice
            head = r.dq.add([bytes([i])], [1])
            req = r.vq.pop()
            assert req is not None and req.out == bytes([i]) and req.head == head
            req.write(bytes([i + 100]))
            r.vq.push(req, 1)
            (done,) = r.dq.get_used()
            assert done.buffers == [bytes([i + 100])]
        assert r.vq.last_avail == (start + 10) & 0xFFFF == 8
        assert r.vq.used_idx == 8
    finally:
        r.close()


def test_several_available_at_once_in_order(rig: Rig) -> None:
    heads = [rig.dq.add([bytes([i])], [1]) for i in range(4)]
    reqs = []
    while (req := rig.vq.pop()) is not None:
        reqs.append(req)
    assert [r.head for r in reqs] == heads
    for req in reversed(reqs):  # devices may complete out of order
        rig.vq.push(req, 0, notify=False)
    assert not rig.dq.called()
    rig.vq.notify()
    assert rig.dq.called()
    assert [c.head for c in rig.dq.get_used()] == list(reversed(heads))


def test_vring_need_event() -> None:
    assert vring_need_event(0, 1, 0)
    assert not vring_need_event(1, 1, 0)
    assert vring_need_event(5, 10, 3)
    assert not vring_need_event(10, 10, 3)
    assert vring_need_event(0xFFFF, 2, 0xFFFE)  # across the wrap
    assert not vring_need_event(0, 0, 0)


def test_event_idx_notifies_only_when_used_event_is_crossed(rig_event_idx: Rig) -> None:
    rig = rig_event_idx
    dq, vq = rig.dq, rig.vq
    for i in range(4):
        dq.add([bytes([i])], [1])
    reqs = [req for _ in range(4) if (req := vq.pop()) is not None]
    assert len(reqs) == 4
    # The driver wants to hear once the third buffer is used (used_event = 2).
    dq.set_used_event(2)
    vq.push(reqs[0], 0)  # the very first notification always goes out
    assert dq.called()
    vq.push(reqs[1], 0)  # used 1 -> 2: event index 2 not crossed yet
    assert not dq.called()
    vq.push(reqs[2], 0)  # used 2 -> 3: crossed
    assert dq.called()
    vq.push(reqs[3], 0)
    assert not dq.called()
    vq.notify()  # nothing new: nothing sent
    assert not dq.called()
    dq.set_used_event(3)  # already passed: no interrupt until the index comes round
    vq.notify()
    assert not dq.called()


def test_event_idx_publishes_avail_event_when_empty(rig_event_idx: Rig) -> None:
    rig = rig_event_idx
    rig.dq.add([b"a"], [1])
    rig.dq.add([b"b"], [1])
    assert rig.vq.pop() is not None
    assert rig.vq.pop() is not None
    assert rig.dq.avail_event() == 0  # not written while there was work
    assert rig.vq.pop() is None
    assert rig.dq.avail_event() == 2  # "kick me when you add entry 2"


def test_a_queue_that_wants_no_kicks_tells_the_driver_so(rig_event_idx: Rig) -> None:
    """Virtio 1.x 2.7.10: with VIRTIO_F_EVENT_IDX the driver kicks when its new available
    index passes avail_event; a device that looks at the ring itself keeps it unreachable."""
    rig = rig_event_idx
    rig.vq.kicks = False
    rig.dq.add([b"a"], [1])
    assert rig.vq.avail_moved()
    assert rig.vq.pop() is not None
    assert rig.vq.pop() is None
    assert not rig.vq.avail_moved()  # nothing new since the last look
    old = 1
    for new in range(2, 200):  # the driver's rule, for each buffer it adds from here on
        assert not vring_need_event(rig.dq.avail_event(), new, old)
        old = new


def test_a_queue_that_wants_no_kicks_sets_no_notify_without_event_idx(rig: Rig) -> None:
    """Without VIRTIO_F_EVENT_IDX the device says it with VRING_USED_F_NO_NOTIFY (2.7.10)."""
    rig.vq.kicks = False
    assert rig.vq.pop() is None
    assert rig.fe.unpack(spec.LE16, rig.dq.used)[0] & spec.VIRTQ_USED_F_NO_NOTIFY


def test_no_interrupt_flag_without_event_idx(rig: Rig) -> None:
    rig.dq.add([b"a"], [1])
    rig.dq.add([b"b"], [1])
    a, b = rig.vq.pop(), rig.vq.pop()
    assert a is not None and b is not None
    rig.dq.set_avail_flags(spec.VIRTQ_AVAIL_F_NO_INTERRUPT)
    rig.vq.push(a, 0)
    assert not rig.dq.called()
    rig.dq.set_avail_flags(0)
    rig.vq.push(b, 0)
    assert rig.dq.called()


def _raw_chain(rig: Rig, descs: list[tuple[int, int, int, int]], table: int | None = None) -> None:
    """Write descriptors 0.. directly and make head 0 available."""
    base = rig.dq.desc if table is None else table
    for i, (addr, length, flags, nxt) in enumerate(descs):
        rig.fe.pack(spec.VIRTQ_DESC, base + 16 * i, addr, length, flags, nxt)
    rig.dq.publish(0, [], [])


@pytest.mark.parametrize(
    ("descs", "message"),
    [
        ([(0x1000, 16, 0, 0)], "outside the shared memory"),
        ([(GUEST_BASE + MEMORY_SIZE - 4, 16, 0, 0)], "outside the shared memory"),
        ([(GUEST_BASE + 0x100, 4, spec.VIRTQ_DESC_F_NEXT, 0)], "chain loops"),
        (
            [
                (GUEST_BASE + 0x100, 4, spec.VIRTQ_DESC_F_NEXT, 1),
                (GUEST_BASE, 4, spec.VIRTQ_DESC_F_NEXT, 0),
            ],
            "chain loops",
        ),
        ([(GUEST_BASE + 0x100, 4, spec.VIRTQ_DESC_F_NEXT, 99)], "descriptor index 99 out of range"),
        (
            [
                (GUEST_BASE + 0x100, 4, spec.VIRTQ_DESC_F_WRITE | spec.VIRTQ_DESC_F_NEXT, 1),
                (GUEST_BASE, 4, 0, 0),
            ],
            "readable descriptor after a device-writable",
        ),
        ([(GUEST_BASE + 0x100, 17, spec.VIRTQ_DESC_F_INDIRECT, 0)], "not a multiple of 16"),
        (
            [(GUEST_BASE + 0x100, 16, spec.VIRTQ_DESC_F_INDIRECT | spec.VIRTQ_DESC_F_NEXT, 1)],
            "INDIRECT and NEXT",
        ),
    ],
)
def test_bad_descriptors_raise_and_break_the_ring(
    rig: Rig, descs: list[tuple[int, int, int, int]], message: str
) -> None:
    _raw_chain(rig, descs)
    with pytest.raises(VirtqueueError, match=message):
        rig.vq.pop()
    assert rig.vq.broken
    assert rig.vq.pop() is None  # a broken ring is left alone
    rig.vq.start()  # set up again: usable
    assert rig.vq.ready


def test_nested_indirect_table_is_refused(rig: Rig) -> None:
    table = rig.fe.alloc(32, 16)
    rig.fe.pack(spec.VIRTQ_DESC, table, table, 16, spec.VIRTQ_DESC_F_INDIRECT, 0)
    _raw_chain(rig, [(table, 16, spec.VIRTQ_DESC_F_INDIRECT, 0)])
    with pytest.raises(VirtqueueError, match="nested indirect"):
        rig.vq.pop()


def test_indirect_table_that_loops(rig: Rig) -> None:
    table = rig.fe.alloc(32, 16)
    rig.fe.pack(spec.VIRTQ_DESC, table, GUEST_BASE + 0x100, 4, spec.VIRTQ_DESC_F_NEXT, 1)
    rig.fe.pack(spec.VIRTQ_DESC, table + 16, GUEST_BASE + 0x100, 4, spec.VIRTQ_DESC_F_NEXT, 0)
    _raw_chain(rig, [(table, 32, spec.VIRTQ_DESC_F_INDIRECT, 0)])
    with pytest.raises(VirtqueueError, match="loops"):
        rig.vq.pop()


def test_head_out_of_range(rig: Rig) -> None:
    rig.fe.pack(spec.LE16, rig.dq.avail + 4, 200)
    rig.fe.pack(spec.LE16, rig.dq.avail + 2, 1)
    with pytest.raises(VirtqueueError, match="head index 200 out of range"):
        rig.vq.pop()


def test_available_index_running_too_far_ahead(rig: Rig) -> None:
    rig.fe.pack(spec.LE16, rig.dq.avail + 2, 9)  # 9 new entries in an 8-entry ring
    with pytest.raises(VirtqueueError, match="more than 8 ahead"):
        rig.vq.pop()


def test_rings_outside_memory_cannot_start() -> None:
    r = Rig()
    try:
        r.vq.stop()
        r.vq.set_addr(0x10, 0x20, 0x30)
        with pytest.raises(VirtqueueError, match="not in shared memory"):
            r.vq.start()
        assert not r.vq.ready
    finally:
        r.close()


def test_queue_size_must_be_a_power_of_two() -> None:
    vq = Virtqueue(0, GuestMemory())
    for bad in (0, 3, 100, 65536):
        with pytest.raises(VirtqueueError, match="power of two"):
            vq.set_num(bad)
    vq.set_num(256)


def test_memory_translation() -> None:
    sock, peer = socket.socketpair()
    fe = FakeFrontend(sock)
    try:
        fe.write(GUEST_BASE + 0x40, b"marker")
        mem = GuestMemory()
        mem.set_table([RegionSpec(GUEST_BASE, MEMORY_SIZE, USER_BASE, MMAP_OFFSET)], [fe.memfd])
        mm, off = mem.translate(GUEST_BASE + 0x40, 6)
        assert mm[off : off + 6] == b"marker"
        mm, off = mem.translate_user(USER_BASE + 0x40, 6)
        assert mm[off : off + 6] == b"marker"
        with pytest.raises(GuestMemoryError):
            mem.translate(USER_BASE + 0x40, 6)
        with pytest.raises(GuestMemoryError):
            mem.translate(GUEST_BASE + MEMORY_SIZE - 2, 6)
        with pytest.raises(GuestMemoryError, match="runs past the end of its file"):
            mem.set_table([RegionSpec(0, 2 * MEMORY_SIZE, 0, 0)], [fe.memfd])
        assert mem.translate(GUEST_BASE, 1)  # the old table is still in place
        mem.clear()
        with pytest.raises(GuestMemoryError, match="no memory table"):
            mem.translate(GUEST_BASE, 1)
    finally:
        fe.close()
        peer.close()
