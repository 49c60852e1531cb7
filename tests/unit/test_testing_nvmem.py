"""The nvmem helper against a fake guest: finding a device's nvmem children, pread and write."""

from __future__ import annotations

import os
from typing import cast

import pytest

from roadtest.guest.client import AgentClient
from roadtest.testing import GuestPath, nvmem_devices, only_nvmem

DEVICE = "/sys/bus/i2c/devices/0-0051"


class FakeAgent:
    """A device directory with one nvmem child of two bytes (and a driver link)."""

    def __init__(self) -> None:
        self.content = bytearray(b"\x5a\xa5")
        self.fds: dict[int, tuple[str, int]] = {}
        self.calls: list[str] = []

    nvmem_files = ["nvmem", "type", "force_ro", "uevent"]

    def listdir(self, path: str) -> list[str]:
        children = {
            DEVICE: ["uevent", "rtc", "driver", "chip_nvram0", "name"],
            f"{DEVICE}/rtc": ["rtc1"],
            f"{DEVICE}/driver": ["bind", "unbind", "uevent", "0-0051"],
            f"{DEVICE}/chip_nvram0": self.nvmem_files,
        }
        if path in children:
            return children[path]
        raise NotADirectoryError(path)  # an attribute: listdir(2) says ENOTDIR

    def read_file(self, path: str) -> bytes:
        assert path == f"{DEVICE}/chip_nvram0/type"
        return b"Battery backed\n"

    def open(self, path: str, flags: int) -> int:
        assert path == f"{DEVICE}/chip_nvram0/nvmem"
        self.fds[9] = (path, flags)
        self.calls.append(f"open {flags}")
        return 9

    def close(self, fd: int) -> None:
        del self.fds[fd]
        self.calls.append("close")

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        assert self.fds[fd][1] == os.O_RDONLY
        self.calls.append(f"pread {size} {offset}")
        return bytes(self.content[offset : offset + size])

    def write(self, fd: int, data: bytes) -> int:
        assert self.fds[fd][1] == os.O_WRONLY
        if len(data) > len(self.content):
            raise OSError(27, "File too large")
        self.content[: len(data)] = data
        return len(data)


def device() -> tuple[FakeAgent, GuestPath]:
    agent = FakeAgent()
    return agent, GuestPath(cast(AgentClient, agent), DEVICE)


def test_finds_the_nvmem_child() -> None:
    _, dev = device()
    [found] = nvmem_devices(dev)
    assert found.name == "chip_nvram0"
    assert only_nvmem(dev).name == "chip_nvram0"
    assert found.type == "Battery backed"


def test_read_to_the_end_and_at_an_offset() -> None:
    agent, dev = device()
    nvmem = only_nvmem(dev)
    assert nvmem.read() == b"\x5a\xa5"
    assert nvmem.size() == 2
    agent.calls.clear()
    assert nvmem.read(1, 1) == b"\xa5"
    assert agent.calls == [f"open {os.O_RDONLY}", "pread 1 1", "close"]
    assert not agent.fds


def test_write_and_its_errors() -> None:
    agent, dev = device()
    nvmem = only_nvmem(dev)
    nvmem.write(b"\x01")
    assert agent.content == bytearray(b"\x01\xa5")
    with pytest.raises(OSError) as info:
        nvmem.write(b"abc")
    assert info.value.errno == 27
    assert not agent.fds  # closed after a failed write too


def test_none_or_several_is_an_error() -> None:
    agent, dev = device()
    agent.nvmem_files = ["power"]
    assert nvmem_devices(dev) == []
    with pytest.raises(FileNotFoundError, match="expected one nvmem device"):
        only_nvmem(dev)
