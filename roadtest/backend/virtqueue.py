"""Split virtqueues (virtio 1.x, section 2.7) over the frontend's shared memory.

The device side of one queue: take descriptor chains from the available ring
(`pop`), hand back buffers through the used ring (`push`) and tell the driver
(`notify`, through the call fd) when the event-index rules say it wants to
know.

Memory ordering. The driver runs on other CPUs and talks to us only through
this memory, so the order of our stores and loads matters. Python has no
barrier primitive; this code assumes an x86-64 host (TSO: stores are seen in
program order, loads are not reordered with loads) and uses a lock round trip
(a LOCK-prefixed instruction, a full barrier on x86) where a store must be
visible before a following load: publishing avail_event before re-reading the
available index, and updating the used index before reading used_event.
"""

from __future__ import annotations

import errno
import logging
import mmap
import os
import struct
import threading
from collections.abc import Callable
from typing import Final

from roadtest.backend.memory import GuestMemory, GuestMemoryError

log = logging.getLogger("roadtest.backend.virtqueue")

DESC: Final = struct.Struct("<QIHH")  # addr, len, flags, next
U16: Final = struct.Struct("<H")
USED_ELEM: Final = struct.Struct("<II")  # id, len

VRING_DESC_F_NEXT: Final = 1
VRING_DESC_F_WRITE: Final = 2
VRING_DESC_F_INDIRECT: Final = 4
VRING_AVAIL_F_NO_INTERRUPT: Final = 1
VRING_USED_F_NO_NOTIFY: Final = 1

MAX_QUEUE_SIZE: Final = 32768
_ONE: Final = (1).to_bytes(8, "little")


class VirtqueueError(Exception):
    """The driver put something in the ring that no device could process."""


def vring_need_event(event_idx: int, new_idx: int, old_idx: int) -> bool:
    """Virtio's rule: notify iff `event_idx` lies in [old_idx, new_idx) (16-bit wrapping)."""
    return ((new_idx - event_idx - 1) & 0xFFFF) < ((new_idx - old_idx) & 0xFFFF)


class Request:
    """One descriptor chain: the bytes the device may read, and where it may write.

    `out` is the device-readable part, concatenated. `in_segments` are the
    device-writable buffers in chain order as (mapping, offset, length);
    `in_len` is their total length. `descs` is how many of the ring's descriptors the
    chain holds until it is returned (1 for an indirect table, whatever its length).
    """

    __slots__ = ("head", "out", "in_segments", "in_len", "descs")

    def __init__(
        self,
        head: int,
        out: bytes,
        in_segments: list[tuple[mmap.mmap, int, int]],
        in_len: int,
        descs: int = 1,
    ) -> None:
        self.head = head
        self.out = out
        self.in_segments = in_segments
        self.in_len = in_len
        self.descs = descs

    def write(self, data: bytes, offset: int = 0) -> int:
        """Write `data` at `offset` of the writable area, across segments; returns the end."""
        n = len(data)
        end = offset + n
        if end > self.in_len:
            raise VirtqueueError(f"{end} bytes do not fit the {self.in_len}-byte writable buffer")
        mm, base, length = self.in_segments[0]
        if end <= length:
            mm[base + offset : base + end] = data
            return end
        pos = 0
        done = 0
        for mm, base, length in self.in_segments:
            if offset < pos + length and done < n:
                start = max(offset - pos, 0)
                k = min(length - start, n - done)
                mm[base + start : base + start + k] = data[done : done + k]
                done += k
            pos += length
            if done == n:
                break
        return end

    def write_last(self, value: int) -> None:
        """Set the last writable byte (where virtio devices put their status)."""
        mm, base, length = self.in_segments[-1]
        if length:
            mm[base + length - 1] = value
        else:
            self.write(bytes([value]), self.in_len - 1)

    def __repr__(self) -> str:
        return f"Request(head={self.head}, out={self.out!r}, in_len={self.in_len})"


class Virtqueue:
    """One queue's state as the vhost-user messages set it, and the ring operations.

    `ready` (started, enabled, mapped and not broken) says whether requests may
    be taken and returned; it is kept up to date as a plain attribute because
    every kick reads it.
    """

    def __init__(self, index: int, memory: GuestMemory, name: str = "") -> None:
        self.index = index
        self.memory = memory
        self.name = name or f"vq{index}"
        # Set by SET_VRING_NUM / _ADDR / _BASE.
        self.num = 0
        self.desc_addr = 0
        self.avail_addr = 0
        self.used_addr = 0
        self.last_avail = 0
        # Negotiated features.
        self.event_idx = False
        self.indirect = False
        # File descriptors (-1: none). The connection owns and closes them.
        self.kick_fd = -1
        self.call_fd = -1
        self.err_fd = -1
        # How the driver is told (None: through call_fd); it gets the queue and how long
        # after now (simulated ns) the device is done: a transfer's time on the bus.
        self.signal: Callable[[Virtqueue, int], None] | None = None
        # The driver busy-waits on the used ring after it kicks (hvc's put_chars): it
        # needs its kick served at once, and needs no notification to wake it.
        self.driver_spins = False
        # Whether the driver should kick. Under simulated time only a spinning driver
        # does: the device looks at the other rings whenever the guest waits, which is
        # when the guest's clock could move, and a kick would cost a message each way.
        self.kicks = True
        # Ring state machine (vhost-user "Ring states").
        self._started = False
        self._enabled = False
        self._broken = False
        self.ready = False
        # Translated ring locations, valid while mapped.
        self._mapped = False
        self._dmm: mmap.mmap | None = None
        self._amm: mmap.mmap | None = None
        self._umm: mmap.mmap | None = None
        self._doff = self._aoff = self._uoff = 0
        self.used_idx = 0
        self._avail_seen = -1  # the available index `avail_moved` saw last
        self._signalled_used = 0
        self._signalled_valid = False
        self._fence = threading.Lock()

    def _update(self) -> None:
        self.ready = self._started and self._enabled and not self._broken and self._mapped

    @property
    def started(self) -> bool:
        return self._started

    @property
    def enabled(self) -> bool:
        return self._enabled

    @enabled.setter
    def enabled(self, value: bool) -> None:
        self._enabled = value
        self._update()

    @property
    def broken(self) -> bool:
        return self._broken

    @broken.setter
    def broken(self, value: bool) -> None:
        self._broken = value
        self._update()

    def __repr__(self) -> str:
        state = "ready" if self.ready else ("broken" if self._broken else "stopped")
        return (
            f"Virtqueue({self.name}, num={self.num}, {state}, "
            f"avail={self.last_avail}, used={self.used_idx})"
        )

    # Set-up

    def set_num(self, num: int) -> None:
        if not 0 < num <= MAX_QUEUE_SIZE or num & (num - 1):
            raise VirtqueueError(
                f"{self.name}: queue size {num} is not a power of two in 1..{MAX_QUEUE_SIZE}"
            )
        self.num = num

    def set_base(self, base: int) -> None:
        self.last_avail = base & 0xFFFF

    def set_addr(self, desc: int, used: int, avail: int) -> None:
        self.desc_addr = desc
        self.used_addr = used
        self.avail_addr = avail
        if self._started:
            self.map_rings()

    def map_rings(self) -> None:
        """Translate the ring addresses through the memory table (again, after SET_MEM_TABLE)."""
        self.unmap()
        num = self.num
        if num == 0:
            raise VirtqueueError(f"{self.name}: started before SET_VRING_NUM")
        translate = self.memory.translate_user
        try:
            self._dmm, self._doff = translate(self.desc_addr, 16 * num)
            self._amm, self._aoff = translate(self.avail_addr, 6 + 2 * num)
            self._umm, self._uoff = translate(self.used_addr, 6 + 8 * num)
        except GuestMemoryError as err:
            self.unmap()
            raise VirtqueueError(f"{self.name}: ring is not in shared memory: {err}") from err
        self.used_idx = U16.unpack_from(self._umm, self._uoff + 2)[0]
        if self.used_idx != self.last_avail:
            # A ring that ran before (a restart): the driver sees what was used as done.
            log.debug("%s: used index %d, base %d", self.name, self.used_idx, self.last_avail)
        self._signalled_valid = False
        self._avail_seen = -1
        self._mapped = True
        self._update()

    def start(self) -> None:
        self._started = True
        self._broken = False
        self.map_rings()

    def stop(self) -> None:
        self._started = False
        self.unmap()

    def unmap(self) -> None:
        """The memory table is going away: forget translations, keep the state."""
        self._mapped = False
        self._dmm = self._amm = self._umm = None
        self._update()

    # Ring operations

    def avail_moved(self) -> bool:
        """Whether the driver made chains available since the last call (for a queue that
        does not kick: a look at the ring that finds what it found before costs nothing)."""
        amm = self._amm
        if amm is None:
            return False
        idx: int = _u16(amm, self._aoff + 2)[0]
        if idx == self._avail_seen:
            return False
        self._avail_seen = idx
        return True

    def avail_pending(self) -> int:
        """How many chains the driver has made available that we have not taken."""
        if self._amm is None:
            return 0
        idx: int = U16.unpack_from(self._amm, self._aoff + 2)[0]
        return (idx - self.last_avail) & 0xFFFF

    def pop(self) -> Request | None:
        """The next available chain, or None. Raises VirtqueueError on a malformed ring."""
        amm = self._amm
        umm = self._umm
        if not self.ready or amm is None or umm is None:
            return None
        aoff = self._aoff
        last = self.last_avail
        idx = _u16(amm, aoff + 2)[0]
        if idx == last:
            if not self.kicks:
                # Half the index space ahead: vring_need_event() never holds (VIRTIO_F_EVENT_IDX),
                # or VRING_USED_F_NO_NOTIFY without it.
                if self.event_idx:
                    _u16_into(umm, self._uoff + 4 + 8 * self.num, last ^ 0x8000)
                else:
                    _u16_into(umm, self._uoff, VRING_USED_F_NO_NOTIFY)
                return None
            if not self.event_idx:
                return None
            # Ask for a kick at the next buffer, then look again: the driver may
            # have added one after our first look and before it saw avail_event.
            _u16_into(umm, self._uoff + 4 + 8 * self.num, last)
            with self._fence:
                pass
            idx = _u16(amm, aoff + 2)[0]
            if idx == last:
                return None
        num = self.num
        if (idx - last) & 0xFFFF > num:
            self.broken = True
            raise VirtqueueError(
                f"{self.name}: available index {idx} is more than {num} ahead of {last}"
            )
        head: int = _u16(amm, aoff + 4 + 2 * (last & (num - 1)))[0]
        self.last_avail = (last + 1) & 0xFFFF
        try:
            return self._chain(head)
        except (VirtqueueError, GuestMemoryError) as err:
            self.broken = True
            raise VirtqueueError(f"{self.name}: chain at head {head}: {err}") from err

    def _chain(self, head: int) -> Request:
        num = self.num
        if head >= num:
            raise VirtqueueError(f"head index {head} out of range (queue size {num})")
        main = self.memory.main
        if main is None:
            raise GuestMemoryError("no memory table")
        g0, gend, mmm, delta = main
        table = self._dmm
        assert table is not None
        toff = self._doff
        tlen = num
        out: list[bytes] = []
        segs: list[tuple[mmap.mmap, int, int]] = []
        in_len = 0
        idx = head
        count = 0
        indirect = False
        while True:
            if idx >= tlen:
                raise VirtqueueError(f"descriptor index {idx} out of range ({tlen} descriptors)")
            addr, length, flags, nxt = _desc(table, toff + 16 * idx)
            if flags & VRING_DESC_F_INDIRECT:
                if indirect:
                    raise VirtqueueError("nested indirect descriptor table")
                if not self.indirect:
                    raise VirtqueueError(
                        "indirect descriptor, but VIRTIO_RING_F_INDIRECT_DESC not negotiated"
                    )
                if flags & VRING_DESC_F_NEXT:
                    raise VirtqueueError("descriptor has both INDIRECT and NEXT")
                if length == 0 or length % 16:
                    raise VirtqueueError(f"indirect table length {length} is not a multiple of 16")
                table, toff = self.memory.translate(addr, length)
                tlen = length // 16
                indirect = True
                idx = 0
                count = 0
                continue
            count += 1
            if count > tlen:
                raise VirtqueueError("descriptor chain loops")
            if g0 <= addr and addr + length <= gend:
                mm = mmm
                moff = addr + delta
            else:
                mm, moff = self.memory.translate(addr, length)
            if flags & VRING_DESC_F_WRITE:
                segs.append((mm, moff, length))
                in_len += length
            elif segs:
                raise VirtqueueError("device-readable descriptor after a device-writable one")
            else:
                out.append(mm[moff : moff + length])
            if not flags & VRING_DESC_F_NEXT:
                break
            idx = nxt
        return Request(
            head, out[0] if len(out) == 1 else b"".join(out), segs, in_len, 1 if indirect else count
        )

    def push(self, req: Request, written: int, notify: bool = True) -> None:
        """Return `req` with `written` bytes written; then notify unless told not to."""
        umm = self._umm
        if umm is None:
            raise VirtqueueError(f"{self.name}: push while the ring is not mapped")
        uoff = self._uoff
        idx = self.used_idx
        # The element first, then the index that publishes it (x86 keeps store order).
        _used_elem(umm, uoff + 4 + 8 * (idx & (self.num - 1)), req.head, written)
        idx = (idx + 1) & 0xFFFF
        _u16_into(umm, uoff + 2, idx)
        self.used_idx = idx
        if notify:
            self.notify()

    def notify(self, after: int = 0) -> None:
        """Tell the driver about what was pushed since last time, if it wants to hear: through
        `signal` if set (`after` ns of simulated time from now), else the call fd."""
        new = self.used_idx
        old = self._signalled_used
        if self._signalled_valid and new == old:
            return
        amm = self._amm
        if amm is None:
            return
        if self.event_idx:
            with self._fence:
                pass
            used_event = _u16(amm, self._aoff + 4 + 2 * self.num)[0]
            need = not self._signalled_valid or vring_need_event(used_event, new, old)
        else:
            need = not _u16(amm, self._aoff)[0] & VRING_AVAIL_F_NO_INTERRUPT
        self._signalled_used = new
        self._signalled_valid = True
        if need and self.signal is not None:
            self.signal(self, after)
        elif need and self.call_fd >= 0:
            try:
                # An eventfd adds 1; UML's call fd is a pipe, and any 8 bytes wake it.
                os.write(self.call_fd, _ONE)
            except BlockingIOError:
                pass  # a full pipe already has wake-ups pending
            except OSError as err:
                if err.errno != errno.EPIPE:
                    raise
                log.debug("%s: call fd closed by the frontend", self.name)


_u16 = U16.unpack_from
_u16_into = U16.pack_into
_desc = DESC.unpack_from
_used_elem = USED_ELEM.pack_into
