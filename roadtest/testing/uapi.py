"""What every userspace-ABI helper needs: ioctl numbers, and waiting on a guest fd.

ioctl numbers are computed as include/uapi/asm-generic/ioctl.h does (UML and
x86_64 use the generic layout), with the kernel's names.

Waiting: a read(2) that blocks in the guest blocks the single-threaded agent,
which then answers nothing until the host's call timeout breaks the channel
and costs a guest. So a helper polls first, in short guest slices, until a
deadline in host time: with time-travel the guest clock jumps over idle
waits, so a guest-side timeout says nothing about how long the driver had.
"""

from __future__ import annotations

import select
import time
from typing import Final

from roadtest.guest.client import AgentClient

_IOC_NRBITS: Final = 8
_IOC_TYPEBITS: Final = 8
_IOC_SIZEBITS: Final = 14
_IOC_NRSHIFT: Final = 0
_IOC_TYPESHIFT: Final = _IOC_NRSHIFT + _IOC_NRBITS
_IOC_SIZESHIFT: Final = _IOC_TYPESHIFT + _IOC_TYPEBITS
_IOC_DIRSHIFT: Final = _IOC_SIZESHIFT + _IOC_SIZEBITS
_IOC_NONE: Final = 0
_IOC_WRITE: Final = 1
_IOC_READ: Final = 2


def _ioc(direction: int, type_: str, nr: int, size: int) -> int:
    if not 0 <= size < 1 << _IOC_SIZEBITS:
        raise ValueError(f"ioctl argument size {size} does not fit in {_IOC_SIZEBITS} bits")
    return (
        direction << _IOC_DIRSHIFT
        | size << _IOC_SIZESHIFT
        | ord(type_) << _IOC_TYPESHIFT
        | nr << _IOC_NRSHIFT
    )


def IO(type_: str, nr: int) -> int:  # noqa: N802 (the kernel's names)
    return _ioc(_IOC_NONE, type_, nr, 0)


def IOR(type_: str, nr: int, size: int) -> int:  # noqa: N802
    """_IOR(type, nr, T) with `size` = sizeof(T): the kernel writes the argument."""
    return _ioc(_IOC_READ, type_, nr, size)


def IOW(type_: str, nr: int, size: int) -> int:  # noqa: N802
    """_IOW(type, nr, T): the kernel reads the argument."""
    return _ioc(_IOC_WRITE, type_, nr, size)


def IOWR(type_: str, nr: int, size: int) -> int:  # noqa: N802
    """_IOWR(type, nr, T): the argument goes in and comes back out."""
    return _ioc(_IOC_READ | _IOC_WRITE, type_, nr, size)


POLLIN: Final = select.POLLIN
#: What poll(2) reports on a sysfs attribute after sysfs_notify() (fs/kernfs/file.c,
#: kernfs_generic_poll): the value changed since this open file last read it.
POLL_NOTIFIED: Final = select.POLLPRI | select.POLLERR
_POLL_FAILED: Final = select.POLLERR | select.POLLHUP | select.POLLNVAL
#: One guest poll(2) slice, in guest milliseconds (which time-travel makes cheap).
POLL_SLICE_MS: Final = 50


def wait_events(agent: AgentClient, fd: int, events: int, timeout: float, what: str) -> int:
    """Poll the guest's `fd` for `events` until one comes (its revents are returned);
    `TimeoutError` after `timeout` host seconds, `OSError` if the fd fails otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        for _, revents in agent.poll([(fd, events)], POLL_SLICE_MS):
            if revents & events:
                return revents
            if revents & _POLL_FAILED:
                raise OSError(f"poll of {what} (guest fd {fd}) failed: revents {revents:#x}")
        if time.monotonic() >= deadline:
            raise TimeoutError(f"no {what} within {timeout:g} s (host time)")


def wait_readable(agent: AgentClient, fd: int, timeout: float, what: str) -> None:
    """Poll the guest's `fd` until it is readable; `TimeoutError` after `timeout` host seconds."""
    wait_events(agent, fd, POLLIN, timeout, what)
