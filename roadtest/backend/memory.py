"""Guest memory shared by the frontend: the regions of VHOST_USER_SET_MEM_TABLE, mmapped.

Each region comes with a file descriptor; the backend maps `size` bytes of it
from `mmap_offset`. Two address spaces point into a region:

- guest-physical addresses (`guest_addr`): what descriptors carry;
- the frontend's own virtual addresses (`user_addr`): what
  VHOST_USER_SET_VRING_ADDR carries. QEMU puts its process addresses there;
  UML's virtio_uml.c puts the physical address in both fields, so translating
  ring addresses through `user_addr` is right for both.

Accesses go through the `mmap` objects directly (`struct.pack_into`, slice
reads and assignment) rather than through long-lived memoryviews, so a region
can always be unmapped when the frontend replaces the table or goes away.
"""

from __future__ import annotations

import logging
import mmap
import os
import stat
from dataclasses import dataclass

log = logging.getLogger("roadtest.backend.memory")


class GuestMemoryError(Exception):
    """An address the frontend gave is not inside the memory it shared."""


@dataclass(frozen=True)
class RegionSpec:
    """One region as the frontend described it."""

    guest_addr: int
    size: int
    user_addr: int
    mmap_offset: int


class MemoryRegion:
    """One mapped region; `base` is where guest address `guest_addr` sits in `mm`."""

    __slots__ = (
        "guest_addr",
        "size",
        "user_addr",
        "mmap_offset",
        "mm",
        "base",
        "guest_end",
        "user_end",
    )

    def __init__(self, spec: RegionSpec, fd: int) -> None:
        if spec.size <= 0:
            raise GuestMemoryError(f"memory region at {spec.guest_addr:#x} has size {spec.size}")
        try:
            st = os.fstat(fd)
        except OSError as err:
            raise GuestMemoryError(
                f"memory region at {spec.guest_addr:#x}: bad file descriptor: {err}"
            ) from err
        if stat.S_ISREG(st.st_mode) and st.st_size < spec.mmap_offset + spec.size:
            # Touching a mapping past the end of its file is SIGBUS, which would end
            # the whole test process: refuse it here instead.
            raise GuestMemoryError(
                f"memory region {spec.guest_addr:#x}+{spec.size:#x} "
                f"at fd offset {spec.mmap_offset:#x} "
                f"runs past the end of its file ({st.st_size:#x} bytes)"
            )
        aligned = spec.mmap_offset - spec.mmap_offset % mmap.ALLOCATIONGRANULARITY
        self.base = spec.mmap_offset - aligned
        try:
            self.mm = mmap.mmap(
                fd,
                spec.size + self.base,
                flags=mmap.MAP_SHARED,
                prot=mmap.PROT_READ | mmap.PROT_WRITE,
                offset=aligned,
            )
        except (OSError, ValueError) as err:
            raise GuestMemoryError(
                f"cannot map memory region {spec.guest_addr:#x}+{spec.size:#x} "
                f"(fd offset {spec.mmap_offset:#x}): {err}"
            ) from err
        self.guest_addr = spec.guest_addr
        self.size = spec.size
        self.user_addr = spec.user_addr
        self.mmap_offset = spec.mmap_offset
        self.guest_end = spec.guest_addr + spec.size
        self.user_end = spec.user_addr + spec.size

    def close(self) -> None:
        try:
            self.mm.close()
        except BufferError:
            # Someone still holds a view into the mapping; it goes when they do.
            log.debug(
                "memory region %#x still has exports; left to the garbage collector",
                self.guest_addr,
            )

    def __repr__(self) -> str:
        return (
            f"MemoryRegion(guest={self.guest_addr:#x}, size={self.size:#x}, "
            f"user={self.user_addr:#x})"
        )


class GuestMemory:
    """The current memory table. `translate*` return (mmap, offset) for a whole range."""

    def __init__(self) -> None:
        self.regions: list[MemoryRegion] = []
        # The largest region as (guest start, guest end, mapping, offset - guest address),
        # for the virtqueue's inlined fast path.
        self.main: tuple[int, int, mmap.mmap, int] | None = None

    def set_table(self, specs: list[RegionSpec], fds: list[int]) -> None:
        """Map the new regions, then drop the old ones. The fds are not closed here."""
        if len(specs) != len(fds):
            raise GuestMemoryError(
                f"memory table has {len(specs)} regions but {len(fds)} file descriptors"
            )
        new: list[MemoryRegion] = []
        try:
            for spec, fd in zip(specs, fds, strict=True):
                new.append(MemoryRegion(spec, fd))
        except GuestMemoryError:
            for region in new:
                region.close()
            raise
        self.clear()
        self.regions = new
        if new:
            big = max(new, key=lambda r: r.size)
            self.main = (big.guest_addr, big.guest_end, big.mm, big.base - big.guest_addr)

    def clear(self) -> None:
        self.main = None
        for region in self.regions:
            region.close()
        self.regions = []

    def translate(self, addr: int, length: int) -> tuple[mmap.mmap, int]:
        """Guest-physical `addr` .. `addr + length` → (mapping, offset into it)."""
        for region in self.regions:
            if region.guest_addr <= addr and addr + length <= region.guest_end:
                return region.mm, region.base + addr - region.guest_addr
        raise GuestMemoryError(self._describe(addr, length, "guest-physical"))

    def translate_user(self, addr: int, length: int) -> tuple[mmap.mmap, int]:
        """Frontend virtual `addr` (ring addresses) → (mapping, offset into it)."""
        for region in self.regions:
            if region.user_addr <= addr and addr + length <= region.user_end:
                return region.mm, region.base + addr - region.user_addr
        raise GuestMemoryError(self._describe(addr, length, "frontend virtual"))

    def _describe(self, addr: int, length: int, space: str) -> str:
        table = ", ".join(repr(r) for r in self.regions) or "no memory table"
        return f"{space} range {addr:#x}+{length:#x} is outside the shared memory ({table})"


def close_fds(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
