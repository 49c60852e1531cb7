"""The GPIO character device v2 helpers: ioctl numbers, struct layouts from
include/uapi/linux/gpio.h, and a consumer's calls against a fake agent."""

from __future__ import annotations

import os
import select
import struct
from typing import Any, cast

import pytest

from roadtest.guest.client import AgentClient
from roadtest.testing import gpio
from roadtest.testing.gpio import (
    EDGE_BOTH,
    ChipInfo,
    EventId,
    GpioChip,
    LineAttrId,
    LineConfig,
    LineEvent,
    LineFlag,
    LineInfo,
)
from roadtest.testing.guestpath import GuestPath


def test_ioctl_numbers() -> None:
    # _IOR/_IOWR(0xB4, nr, struct ...) on x86_64, as strace prints them.
    assert gpio.GPIO_GET_CHIPINFO_IOCTL == 0x8044B401
    assert gpio.GPIO_V2_GET_LINEINFO_IOCTL == 0xC100B405
    assert gpio.GPIO_V2_GET_LINE_IOCTL == 0xC250B407
    assert gpio.GPIO_V2_LINE_SET_CONFIG_IOCTL == 0xC110B40D
    assert gpio.GPIO_V2_LINE_GET_VALUES_IOCTL == 0xC010B40E
    assert gpio.GPIO_V2_LINE_SET_VALUES_IOCTL == 0xC010B40F


def test_struct_sizes() -> None:
    assert gpio.GPIOCHIP_INFO.size == 68
    assert gpio.LINE_ATTRIBUTE.size == 16
    assert gpio.LINE_CONFIG_ATTRIBUTE.size == 24
    assert gpio.LINE_CONFIG_SIZE == 272
    assert gpio.LINE_REQUEST_SIZE == 592
    assert gpio.LINE_INFO_SIZE == 256
    assert gpio.LINE_VALUES.size == 16
    assert gpio.LINE_EVENT.size == 48


def test_flag_values() -> None:
    # enum gpio_v2_line_flag: _BITULL(0) .. _BITULL(12)
    assert int(LineFlag.INPUT) == 4 and int(LineFlag.OUTPUT) == 8
    assert int(EDGE_BOTH) == 0x30
    assert int(LineFlag.BIAS_DISABLED) == 0x400 and int(LineFlag.EVENT_CLOCK_HTE) == 0x1000
    assert int(EventId.RISING_EDGE) == 1 and int(EventId.FALLING_EDGE) == 2


def test_request_layout() -> None:
    config = LineConfig.build([3, 5], LineFlag.OUTPUT, {5: 1, 3: 0}, debounce_us=1000)
    data = gpio.pack_request([3, 5], "tester", config, event_buffer_size=32)
    assert len(data) == 592
    assert struct.unpack_from("<3I", data, 0) == (3, 5, 0)  # offsets[64]
    assert data[256:263] == b"tester\0"  # consumer[32] after the offsets
    flags, num_attrs = struct.unpack_from("<QI", data, 288)  # the config, 8-aligned
    assert (flags, num_attrs) == (LineFlag.OUTPUT, 2)
    # attrs[0] at config + 32: output values, bit per request index (5 is index 1)
    assert struct.unpack_from("<IIQQ", data, 288 + 32) == (LineAttrId.OUTPUT_VALUES, 0, 0b10, 0b11)
    assert struct.unpack_from("<IIQQ", data, 288 + 56) == (LineAttrId.DEBOUNCE, 0, 1000, 0b11)
    assert struct.unpack_from("<II", data, 560) == (2, 32)  # num_lines, event_buffer_size
    assert struct.unpack_from("<i", data, 588) == (0,)  # fd, last
    assert gpio.request_fd(data[:588] + struct.pack("<i", 9)) == 9


def test_request_checks() -> None:
    config = LineConfig(LineFlag.INPUT)
    with pytest.raises(ValueError, match="once"):
        gpio.pack_request([1, 1], "x", config)
    with pytest.raises(ValueError, match="1 to 64"):
        gpio.pack_request([], "x", config)
    with pytest.raises(ValueError, match="does not fit"):
        gpio.pack_request([1], "x" * 32, config)
    with pytest.raises(ValueError, match="not in the request"):
        LineConfig.build([1], LineFlag.OUTPUT, {2: 1})


def test_line_info_unpack() -> None:
    data = bytearray(256)
    data[0:4] = b"led\0"
    data[32:40] = b"roadtest"
    struct.pack_into("<IIQ", data, 64, 7, 1, LineFlag.USED | LineFlag.INPUT | LineFlag.EDGE_RISING)
    struct.pack_into("<IIQ", data, 80, LineAttrId.DEBOUNCE, 0, 0xDEAD_0000_0000_0064)
    info = LineInfo.unpack(bytes(data))
    assert info.name == "led" and info.consumer == "roadtest" and info.offset == 7
    assert info.used and not info.is_output
    assert LineFlag.EDGE_RISING in info.flags
    assert info.debounce_us == 100  # the union's __u32
    assert LineInfo.query(7)[64:68] == b"\x07\0\0\0"
    with pytest.raises(ValueError):
        LineInfo.unpack(bytes(255))


def test_chip_info_and_event_round_trip() -> None:
    info = ChipInfo("gpiochip2", "pcf8574", 8)
    assert ChipInfo.unpack(info.pack()) == info
    event = LineEvent(123_456_789, EventId.FALLING_EDGE, 4, 2, 1)
    data = event.pack()
    assert data[:8] == (123_456_789).to_bytes(8, "little")
    assert struct.unpack_from("<4I", data, 8) == (2, 4, 2, 1)
    assert LineEvent.unpack(data) == event and not event.rising


class FakeCdev:
    """Stands in for the guest's agent and a gpiochip's cdev: 8 lines, one request at a
    time, events queued by the test."""

    broken = False

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.levels = 0
        self.offsets: list[int] = []
        self.events = b""

    def listdir(self, path: str) -> list[str]:
        assert path == "/sys/bus/i2c/devices/0-0020"
        return ["driver", "gpiochip3", "name"]

    def open(self, path: str, flags: int) -> int:
        self.calls.append(("open", (path, flags)))
        return 7

    def close(self, fd: int) -> None:
        self.calls.append(("close", fd))

    def ioctl(self, fd: int, request: int, arg: bytes) -> tuple[int, bytes]:
        self.calls.append(("ioctl", (fd, request)))
        if request == gpio.GPIO_GET_CHIPINFO_IOCTL:
            return 0, struct.pack("<32s32sI", b"gpiochip3", b"pcf8574", 8)
        if request == gpio.GPIO_V2_GET_LINE_IOCTL:
            (num,) = struct.unpack_from("<I", arg, 560)
            self.offsets = list(struct.unpack_from(f"<{num}I", arg, 0))
            return 0, arg[:588] + struct.pack("<i", 11)
        if request == gpio.GPIO_V2_LINE_GET_VALUES_IOCTL:
            assert fd == 11
            _, mask = struct.unpack("<QQ", arg)
            bits = sum(
                1 << i
                for i, offset in enumerate(self.offsets)
                if mask >> i & 1 and self.levels >> offset & 1
            )
            return 0, struct.pack("<QQ", bits, mask)
        if request == gpio.GPIO_V2_LINE_SET_VALUES_IOCTL:
            bits, mask = struct.unpack("<QQ", arg)
            for i, offset in enumerate(self.offsets):
                if mask >> i & 1:
                    self.levels = self.levels & ~(1 << offset) | (bits >> i & 1) << offset
            return 0, arg
        raise AssertionError(f"unexpected ioctl {request:#x}")

    def poll(self, fds: list[tuple[int, int]], timeout_ms: int) -> list[tuple[int, int]]:
        self.calls.append(("poll", (fds, timeout_ms)))
        return [(fds[0][0], select.POLLIN)] if self.events else []

    def read(self, fd: int, size: int) -> bytes:
        assert fd == 11 and self.events, "read() would block the agent"
        data, self.events = self.events[:size], self.events[size:]
        return data


def test_consumer_against_a_fake_cdev() -> None:
    cdev = FakeCdev()
    dev = GuestPath(cast(AgentClient, cdev), "/sys/bus/i2c/devices/0-0020")
    with GpioChip(dev) as chip:
        assert str(chip.node) == "/dev/gpiochip3"
        assert chip.info() == ChipInfo("gpiochip3", "pcf8574", 8)
        with chip.request_output({6: 1, 2: 0}) as lines:
            lines.set_values({2: 1})
            assert cdev.levels == 0b0000_0100
            assert lines.get_values() == {6: 0, 2: 1}
            assert lines.get_value(2) == 1
        assert ("close", 11) in cdev.calls
        with chip.request_input([4], edges=EDGE_BOTH) as lines:
            with pytest.raises(gpio.GpioEventTimeout, match="/dev/gpiochip3"):
                lines.read_event(timeout=0.05)
            first = LineEvent(5, EventId.RISING_EDGE, 4, 1, 1)
            second = LineEvent(9, EventId.FALLING_EDGE, 4, 2, 2)
            cdev.events = first.pack() + second.pack()
            assert lines.read_event() == first
            assert lines.pending_events() == [second]
            assert lines.pending_events() == []
        with pytest.raises(RuntimeError, match="released"):
            lines.get_values()
    assert cdev.calls[0] == ("open", ("/dev/gpiochip3", os.O_RDONLY))
    assert cdev.calls[-1] == ("close", 7)


def test_chip_from_a_node_and_closed_use() -> None:
    cdev = FakeCdev()
    chip = GpioChip(GuestPath(cast(AgentClient, cdev), "/dev/gpiochip0"))
    assert str(chip.node) == "/dev/gpiochip0"
    with pytest.raises(RuntimeError, match="with block"):
        chip.info()
