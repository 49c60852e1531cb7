"""roadtest.testing.evdev without a guest: the uapi numbers and layouts, and the agent calls
it makes (a fake agent that answers as the kernel's evdev does)."""

from __future__ import annotations

import errno
import os
import select
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roadtest.guest.client import AgentClient
from roadtest.testing import evdev
from roadtest.testing.evdev import (
    EV_KEY,
    EV_MSC,
    EV_SYN,
    MSC_SCAN,
    SYN_REPORT,
    EvdevDevice,
    EvdevTimeout,
    InputEvent,
    InputId,
    bitmap_of,
    bits_set,
    event_node,
    frames,
)
from roadtest.testing.guestpath import GuestPath

KEY_A, KEY_B = 30, 48  # include/uapi/linux/input-event-codes.h


def test_ioctl_numbers() -> None:
    # As <linux/input.h> computes them on x86_64 (and as strace prints them).
    assert evdev.EVIOCGVERSION == 0x80044501
    assert evdev.EVIOCGID == 0x80084502
    assert evdev.EVIOCGREP == 0x80084503
    assert evdev.EVIOCGKEYCODE == 0x80084504
    assert evdev.EVIOCGRAB == 0x40044590
    assert evdev.EVIOCGNAME(256) == 0x81004506
    assert evdev.EVIOCGPHYS(256) == 0x81004507
    assert evdev.EVIOCGUNIQ(256) == 0x81004508
    assert evdev.EVIOCGKEY(96) == 0x80604518
    assert evdev.EVIOCGBIT(0, 8) == 0x80084520
    assert evdev.EVIOCGBIT(EV_KEY, 96) == 0x80604521


def test_event_codes() -> None:
    assert (evdev.EV_SYN, evdev.EV_KEY, evdev.EV_MSC, evdev.EV_REP, evdev.EV_MAX) == (
        0,
        1,
        4,
        0x14,
        0x1F,
    )
    assert (evdev.SYN_REPORT, evdev.SYN_DROPPED, evdev.MSC_SCAN, evdev.KEY_MAX) == (
        0,
        3,
        4,
        0x2FF,
    )


def test_input_event_layout() -> None:
    # struct input_event on a 64-bit guest: struct timeval (two longs), __u16 type,
    # __u16 code, __s32 value: 24 bytes.
    assert InputEvent.SIZE == 24
    event = InputEvent(EV_KEY, KEY_A, 1, sec=5, usec=250)
    data = event.pack()
    assert data == (
        (5).to_bytes(8, "little")
        + (250).to_bytes(8, "little")
        + (EV_KEY).to_bytes(2, "little")
        + (KEY_A).to_bytes(2, "little")
        + (1).to_bytes(4, "little")
    )
    assert InputEvent.unpack(data) == event
    assert InputEvent.unpack(InputEvent(EV_KEY, KEY_A, -1).pack()).value == -1  # __s32
    assert event.key == (EV_KEY, KEY_A, 1) and not event.is_report
    assert InputEvent(EV_SYN, SYN_REPORT, 0).is_report
    assert "EV_KEY" in str(event)
    with pytest.raises(ValueError, match="24-byte"):
        InputEvent.unpack_all(data[:20])


@given(
    type_=st.integers(0, 0xFFFF),
    code=st.integers(0, 0xFFFF),
    value=st.integers(-(2**31), 2**31 - 1),
    sec=st.integers(0, 2**62),
    usec=st.integers(0, 999_999),
)
def test_pack_unpack_round_trip(type_: int, code: int, value: int, sec: int, usec: int) -> None:
    event = InputEvent(type_, code, value, sec, usec)
    assert InputEvent.unpack_all(event.pack() * 2) == [event, event]


def test_frames() -> None:
    events = [
        InputEvent(EV_MSC, MSC_SCAN, 0),
        InputEvent(EV_KEY, KEY_A, 1),
        InputEvent(EV_SYN, SYN_REPORT, 0),
        InputEvent(EV_SYN, SYN_REPORT, 0),
        InputEvent(EV_KEY, KEY_B, 1),  # unfinished: left out
    ]
    assert frames(events) == [[(EV_MSC, MSC_SCAN, 0), (EV_KEY, KEY_A, 1)], []]


def test_bitmaps() -> None:
    # A kernel bitmap of KEY_MAX + 1 = 768 bits is 12 longs.
    assert evdev.bitmap_bytes(evdev.KEY_MAX) == 96
    assert evdev.bitmap_bytes(evdev.EV_MAX) == 8
    data = bitmap_of({0, 1, 30, 64, 767}, evdev.KEY_MAX)
    assert data[0] == 0b11 and data[3] == 0b0100_0000 and data[8] == 1 and data[95] == 0x80
    assert bits_set(data) == {0, 1, 30, 64, 767}
    with pytest.raises(ValueError):
        bitmap_of({768}, evdev.KEY_MAX)


class FakeEvdev:
    """Answers as drivers/input/evdev.c would for a keyboard named "tca8418"."""

    broken = False

    def __init__(self, queue: list[bytes] | None = None) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.queue = list(queue or [])
        self.down = {KEY_B}

    def listdir(self, path: str) -> list[str]:
        return {
            "/sys/bus/i2c/devices/0-0034/input": ["input7"],
            "/sys/bus/i2c/devices/0-0034/input/input7": ["capabilities", "event3", "name"],
        }[path]

    def open(self, path: str, flags: int) -> int:
        self.calls.append(("open", (path, flags)))
        return 9

    def close(self, fd: int) -> None:
        self.calls.append(("close", fd))

    def ioctl(self, fd: int, request: int, arg: int | bytes = 0) -> tuple[int, bytes | None]:
        assert fd == 9 and isinstance(arg, bytes)
        self.calls.append(("ioctl", request))
        if request == evdev.EVIOCGNAME(256):
            name = b"tca8418\0"
            return len(name), name + bytes(len(arg) - len(name))
        if request == evdev.EVIOCGPHYS(256):
            raise OSError(errno.ENOENT, "no phys")
        if request == evdev.EVIOCGID:
            return 0, evdev.INPUT_ID.pack(evdev.BUS_I2C, 1, 1, 1)
        if request == evdev.EVIOCGVERSION:
            return 0, (0x010001).to_bytes(4, "little")
        if request == evdev.EVIOCGBIT(0, 8):
            return 8, bitmap_of({EV_SYN, EV_KEY, EV_MSC}, evdev.EV_MAX)
        if request == evdev.EVIOCGBIT(EV_KEY, 96):
            return 96, bitmap_of({KEY_A, KEY_B}, evdev.KEY_MAX)
        if request == evdev.EVIOCGKEY(96):
            return 96, bitmap_of(self.down, evdev.KEY_MAX)
        if request == evdev.EVIOCGKEYCODE:
            scancode, _ = evdev._UINT2.unpack(arg)
            return 0, evdev._UINT2.pack(scancode, {0: KEY_A, 1: KEY_B}[scancode])
        raise AssertionError(f"unexpected ioctl {request:#x}")

    def poll(self, fds: list[tuple[int, int]], timeout_ms: int) -> list[tuple[int, int]]:
        self.calls.append(("poll", (fds, timeout_ms)))
        return [(9, select.POLLIN)] if self.queue else []

    def read(self, fd: int, size: int) -> bytes:
        if not self.queue:
            raise OSError(errno.EAGAIN, "would block")
        data = self.queue.pop(0)
        assert len(data) <= size
        return data


def agent(fake: FakeEvdev) -> AgentClient:
    return cast(AgentClient, fake)


DEVICE = "/sys/bus/i2c/devices/0-0034"


def test_node_from_sysfs() -> None:
    fake = FakeEvdev()
    assert str(event_node(GuestPath(agent(fake), DEVICE))) == "/dev/input/event3"


def test_identity_capabilities_and_state() -> None:
    fake = FakeEvdev()
    with EvdevDevice.of(GuestPath(agent(fake), DEVICE)) as dev:
        assert dev.name() == "tca8418"
        assert dev.phys() == ""
        assert dev.id() == InputId(evdev.BUS_I2C, 1, 1, 1)
        assert dev.version() == 0x010001
        assert dev.event_types() == {EV_SYN, EV_KEY, EV_MSC}
        assert dev.capabilities(EV_KEY) == {KEY_A, KEY_B}
        assert dev.keys_down() == {KEY_B}
        assert dev.keycode(1) == KEY_B
    assert fake.calls[0] == ("open", ("/dev/input/event3", os.O_RDONLY | os.O_NONBLOCK))
    assert fake.calls[-1] == ("close", 9)


def test_frames_are_read_across_reads() -> None:
    press = [InputEvent(EV_MSC, MSC_SCAN, 0), InputEvent(EV_KEY, KEY_A, 1)]
    report = InputEvent(EV_SYN, SYN_REPORT, 0)
    release = [InputEvent(EV_MSC, MSC_SCAN, 0), InputEvent(EV_KEY, KEY_A, 0), report]
    fake = FakeEvdev(
        [b"".join(e.pack() for e in press), b"".join(e.pack() for e in [report, *release])]
    )
    with EvdevDevice(GuestPath(agent(fake), "/dev/input/event3")) as dev:
        assert dev.read_frame() == [e.key for e in press]
        assert dev.pending()  # the release, read with the first frame's end and kept
        assert dev.read_frame() == [e.key for e in release[:2]]
        assert not dev.pending()
        assert dev.drain() == []


def test_read_times_out_in_host_time_without_blocking() -> None:
    fake = FakeEvdev()
    with EvdevDevice(GuestPath(agent(fake), "/dev/input/event3")) as dev:
        with pytest.raises(EvdevTimeout, match="/dev/input/event3"):
            dev.read_events(timeout=0.05)
    polls = [args for op, args in fake.calls if op == "poll"]
    assert polls and all(fds == [(9, select.POLLIN)] for fds, _ in polls)


def test_drain() -> None:
    event = InputEvent(EV_KEY, KEY_A, 1)
    fake = FakeEvdev([event.pack(), event.pack()])
    with EvdevDevice(GuestPath(agent(fake), "/dev/input/event3")) as dev:
        assert dev.drain() == [event, event]


def test_not_open() -> None:
    dev = EvdevDevice(GuestPath(agent(FakeEvdev()), "/dev/input/event3"))
    with pytest.raises(RuntimeError, match="with block"):
        dev.name()


def test_read_values_joins_whole_frames() -> None:
    report = InputEvent(EV_SYN, SYN_REPORT, 0)
    keys = [InputEvent(EV_KEY, code, 1) for code in (KEY_A, KEY_B, KEY_A)]
    fake = FakeEvdev([b"".join(e.pack() for e in [keys[0], keys[1], report, keys[2], report])])
    with EvdevDevice(GuestPath(agent(fake), "/dev/input/event3")) as dev:
        assert dev.read_values(3) == [e.key for e in keys]
        assert not dev.pending()  # the closing SYN_REPORT was read with them
