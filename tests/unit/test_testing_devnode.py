"""The open-file base of the ABI helpers: open, ioctl, close, and a broken agent."""

from __future__ import annotations

import os
from typing import Any, cast

import pytest

from roadtest.guest.client import AgentClient
from roadtest.testing.devnode import DeviceNode, GuestFd
from roadtest.testing.guestpath import GuestPath


class FakeAgent:
    """Records calls; ioctl echoes its buffer, or returns none when given an int."""

    def __init__(self) -> None:
        self.broken = False
        self.calls: list[tuple[str, Any]] = []

    def open(self, path: str, flags: int) -> int:
        self.calls.append(("open", (path, flags)))
        return 5

    def close(self, fd: int) -> None:
        self.calls.append(("close", fd))

    def ioctl(self, fd: int, request: int, arg: int | bytes = 0) -> tuple[int, bytes | None]:
        self.calls.append(("ioctl", (fd, request)))
        return 3, arg if isinstance(arg, bytes) else None


class NonBlockingNode(DeviceNode):
    open_flags = os.O_RDONLY | os.O_NONBLOCK


def node(agent: FakeAgent, path: str = "/dev/thing0") -> GuestPath:
    return GuestPath(cast(AgentClient, agent), path)


def test_opens_with_its_flags_and_closes_at_the_end_of_the_block() -> None:
    agent = FakeAgent()
    with NonBlockingNode(node(agent)) as dev:
        assert dev.fd == 5
        assert dev.ioctl(0x1234, b"ab") == (3, b"ab")
    assert agent.calls == [
        ("open", ("/dev/thing0", os.O_RDONLY | os.O_NONBLOCK)),
        ("ioctl", (5, 0x1234)),
        ("close", 5),
    ]
    assert dev.closed


def test_an_fd_is_not_closed_through_a_broken_agent() -> None:
    agent = FakeAgent()
    with pytest.raises(TimeoutError), DeviceNode(node(agent)):
        agent.broken = True  # as a timed-out call leaves it
        raise TimeoutError
    assert [name for name, _ in agent.calls] == ["open"]


def test_use_outside_the_block_names_the_node() -> None:
    dev = DeviceNode(node(FakeAgent(), "/dev/rtc2"))
    with pytest.raises(RuntimeError, match=r"/dev/rtc2 is not open: use the DeviceNode"):
        _ = dev.fd


def test_opening_twice_is_refused() -> None:
    with (
        DeviceNode(node(FakeAgent())) as dev,
        pytest.raises(RuntimeError, match="already open"),
    ):
        dev.__enter__()


def test_an_ioctl_without_a_buffer_back_is_an_error() -> None:
    agent = FakeAgent()
    fd = GuestFd(cast(AgentClient, agent), "lines [1] of /dev/gpiochip0", fd=9)
    assert fd.ioctl_none(0x5501) == 3
    with pytest.raises(RuntimeError, match="on lines \\[1\\] of /dev/gpiochip0: the agent"):
        agent.ioctl = lambda fd, request, arg=0: (0, None)  # type: ignore[method-assign]
        fd.ioctl(0x5502, b"x")
    fd.close()
    assert agent.calls[-1] == ("close", 9)
