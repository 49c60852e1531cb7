"""An fd the agent holds open in the guest, and a device node opened for a `with` block.

The base of every userspace-ABI helper that keeps a file open across calls
(`/dev/gpiochipN` and its line requests, `/dev/input/eventN`, `/dev/rtcN`).
"""

from __future__ import annotations

import os
from types import TracebackType
from typing import ClassVar, Self

from roadtest.guest.client import AgentClient
from roadtest.testing.guestpath import GuestPath


class GuestFd:
    """An fd open in the guest, closed by `close()` or when the `with` block ends.

    Once the agent's channel has broken (a call timed out), nothing more can be
    asked of it: the fd goes with the guest, and closing it is not tried.
    """

    def __init__(self, agent: AgentClient, what: str, fd: int | None = None) -> None:
        self.agent = agent
        self.what = what  # names the file in errors: "/dev/rtc0", "lines [0, 1] of ..."
        self._fd = fd

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None and not self.agent.broken:
            self.agent.close(fd)

    @property
    def closed(self) -> bool:
        return self._fd is None

    @property
    def fd(self) -> int:
        if self._fd is None:
            raise RuntimeError(f"{self.what} is not open: {self._not_open_hint()}")
        return self._fd

    def _not_open_hint(self) -> str:
        return f"use the {type(self).__name__} in a with block"

    def ioctl(self, request: int, arg: bytes) -> tuple[int, bytes]:
        """ioctl(2) with an argument buffer: the call's return value and the buffer after it."""
        ret, buf = self.agent.ioctl(self.fd, request, arg)
        if buf is None:
            raise RuntimeError(f"ioctl {request:#x} on {self.what}: the agent returned no buffer")
        return ret, buf

    def ioctl_none(self, request: int) -> int:
        """ioctl(2) that takes no argument (`_IO`): its return value."""
        ret, _ = self.agent.ioctl(self.fd, request)
        return ret


class DeviceNode(GuestFd):
    """A device node of the guest, opened when the `with` block starts."""

    open_flags: ClassVar[int] = os.O_RDONLY

    def __init__(self, node: GuestPath) -> None:
        super().__init__(node.agent, str(node))
        self.node = node

    def __enter__(self) -> Self:
        if self._fd is not None:
            raise RuntimeError(f"{self.node} is already open")
        self._fd = self.agent.open(str(self.node), self.open_flags)
        return self
