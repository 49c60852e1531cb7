"""The guest kernel's ABI per architecture: what the agent needs that Python does not know.

Keyed by os.uname().machine as the guest reports it, so the agent finds its own
table inside the guest, whatever machine booted it. This module is imported
there, by `python -I -S`, next to the agent: the stdlib only, and nothing that
costs boot time (no typing, no dataclasses).
"""

from __future__ import annotations

import errno


class ABI:
    """Syscall numbers (by the kernel's name) and the sizes of the C types structs use."""

    __slots__ = ("byteorder", "long_size", "machine", "syscalls")

    def __init__(
        self, machine: str, syscalls: dict[str, int], long_size: int, byteorder: str
    ) -> None:
        self.machine = machine
        self.syscalls = syscalls
        self.long_size = long_size
        self.byteorder = byteorder

    def syscall(self, name: str) -> int:
        try:
            return self.syscalls[name]
        except KeyError:
            raise OSError(errno.ENOSYS, f"no {name} syscall number for {self.machine}") from None


# arch/x86/entry/syscalls/syscall_64.tbl (UML on x86_64 uses the host's table too).
X86_64 = ABI("x86_64", {"finit_module": 313, "delete_module": 176}, long_size=8, byteorder="little")
# include/uapi/asm-generic/unistd.h, which arm64 uses.
AARCH64 = ABI("aarch64", {"finit_module": 273, "delete_module": 106}, 8, "little")

_BY_MACHINE = {abi.machine: abi for abi in (X86_64, AARCH64)}


def for_machine(machine: str) -> ABI:
    """The ABI of a guest whose os.uname().machine is `machine`."""
    try:
        return _BY_MACHINE[machine]
    except KeyError:
        raise OSError(
            errno.ENOSYS, f"roadtest/guest/abi.py has no table for {machine!r} guests"
        ) from None
