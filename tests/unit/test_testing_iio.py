"""roadtest.testing.iio without a guest: ioctl numbers, event ids, and the agent calls it makes."""

from __future__ import annotations

import os
import select
import struct
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roadtest.guest.client import AgentClient
from roadtest.testing.guestpath import GuestPath
from roadtest.testing.iio import (
    IIO_BUFFER_GET_FD_IOCTL,
    IIO_GET_EVENT_FD_IOCTL,
    IIOBuffer,
    IIOChanType,
    IIOEvent,
    IIOEventDirection,
    IIOEventMonitor,
    IIOEventType,
    IIOModifier,
    device_index,
    devnode,
    iio_event_code,
)


def test_ioctl_numbers() -> None:
    # _IOR('i', 0x90, int) and _IOWR('i', 0x91, int) as the kernel computes them.
    assert IIO_GET_EVENT_FD_IOCTL == 0x80046990
    assert IIO_BUFFER_GET_FD_IOCTL == 0xC0046991


def test_enums_match_the_uapi_headers() -> None:
    assert int(IIOChanType.IIO_PROXIMITY) == 8
    assert int(IIOChanType.IIO_MASSCONCENTRATION) == 34
    assert int(IIOChanType.IIO_CHROMATICITY) == 38  # the last one in 6.12
    assert int(IIOModifier.IIO_MOD_LIGHT_UVB) == 52
    assert int(IIOEventType.IIO_EV_TYPE_GESTURE) == 7
    assert int(IIOEventDirection.IIO_EV_DIR_DOUBLETAP) == 5
    assert [int(v) for v in IIOChanType] == list(range(len(IIOChanType)))


def test_decode_vcnl4010_rising_event() -> None:
    # IIO_UNMOD_EVENT_CODE(IIO_PROXIMITY, 1, IIO_EV_TYPE_THRESH, IIO_EV_DIR_RISING)
    event = IIOEvent(0x0001_0008_0000_0001, 1234)
    assert event.chan_type == IIOChanType.IIO_PROXIMITY
    assert event.direction == IIOEventDirection.IIO_EV_DIR_RISING
    assert event.event_type == IIOEventType.IIO_EV_TYPE_THRESH
    assert event.modifier == IIOModifier.IIO_NO_MOD
    assert event.channel == 1 and event.channel2 == 0 and not event.differential
    assert event.id == iio_event_code(8, 1, 0, 1)
    assert "IIO_PROXIMITY1" in str(event) and "IIO_EV_DIR_RISING" in str(event)


def test_decode_all_fields() -> None:
    code = iio_event_code(
        IIOChanType.IIO_VOLTAGE, 3, IIOEventType.IIO_EV_TYPE_MAG, 2, 13, diff=True, chan2=-2
    )
    event = IIOEvent(code, -5)
    assert event.chan_type == IIOChanType.IIO_VOLTAGE
    assert event.event_type == IIOEventType.IIO_EV_TYPE_MAG
    assert event.direction == IIOEventDirection.IIO_EV_DIR_FALLING
    assert event.modifier == IIOModifier.IIO_MOD_LIGHT_IR
    assert event.differential
    assert (event.channel, event.channel2) == (3, -2)  # __s16, as the EXTRACT macros
    assert event.timestamp == -5


def test_unknown_values_stay_numbers() -> None:
    event = IIOEvent(iio_event_code(200, 0, 99, 100, modifier=250), 0)
    assert event.chan_type == 200 and not isinstance(event.chan_type, IIOChanType)
    assert event.event_type == 99 and event.direction == 100 and event.modifier == 250


def test_from_bytes() -> None:
    data = struct.pack("=Qq", 0x0002_0008_0000_0001, 42)
    assert IIOEvent.from_bytes(data) == IIOEvent(0x0002_0008_0000_0001, 42)
    with pytest.raises(ValueError, match="16 bytes"):
        IIOEvent.from_bytes(data[:8])


@given(
    chan_type=st.integers(0, 255),
    chan=st.integers(-32768, 32767),
    event_type=st.integers(0, 255),
    direction=st.integers(0, 127),
    modifier=st.integers(0, 255),
    diff=st.booleans(),
    chan2=st.integers(-32768, 32767),
)
def test_encode_decode_round_trip(
    chan_type: int,
    chan: int,
    event_type: int,
    direction: int,
    modifier: int,
    diff: bool,
    chan2: int,
) -> None:
    e = IIOEvent(iio_event_code(chan_type, chan, event_type, direction, modifier, diff, chan2), 0)
    assert (e.chan_type, e.channel, e.event_type, e.direction, e.modifier, e.differential) == (
        chan_type,
        chan,
        event_type,
        direction,
        modifier,
        diff,
    )
    assert e.channel2 == chan2
    assert e.id < 1 << 64


class FakeAgent(AgentClient):
    """Records the calls; fds become readable when the test says so."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.next_fd = 3
        self.readable: dict[int, bytes] = {}
        self.open_fds: set[int] = set()

    def open(self, path: str, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
        self.calls.append(("open", path))
        fd, self.next_fd = self.next_fd, self.next_fd + 1
        self.open_fds.add(fd)
        return fd

    def ioctl(self, fd: int, request: int, arg: int | bytes = 0) -> tuple[int, bytes | None]:
        assert isinstance(arg, bytes)
        self.calls.append(("ioctl", (fd, request, struct.unpack("=i", arg)[0])))
        fd, self.next_fd = self.next_fd, self.next_fd + 1
        self.open_fds.add(fd)
        return 0, struct.pack("=i", fd)

    def poll(self, fds: list[tuple[int, int]], timeout_ms: int) -> list[tuple[int, int]]:
        self.calls.append(("poll", fds))
        return [(fd, select.POLLIN) for fd, _ in fds if self.readable.get(fd)]

    def read(self, fd: int, size: int) -> bytes:
        self.calls.append(("read", (fd, size)))
        data, self.readable[fd] = self.readable[fd][:size], self.readable[fd][size:]
        return data

    def close(self, fd: int) -> None:
        self.calls.append(("close", fd))
        self.open_fds.remove(fd)


def test_event_monitor_polls_before_reading() -> None:
    agent = FakeAgent()
    iio = GuestPath(agent, "/sys/bus/i2c/devices/0-0010/iio:device2")
    assert device_index(iio) == 2
    with IIOEventMonitor(devnode(iio)) as monitor:
        assert agent.calls[:2] == [
            ("open", "/dev/iio:device2"),
            ("ioctl", (3, IIO_GET_EVENT_FD_IOCTL, 0)),
        ]
        with pytest.raises(TimeoutError, match="no IIO event within 0.05 s"):
            monitor.read(timeout=0.05)
        assert not any(call[0] == "read" for call in agent.calls)  # never a blocking read
        assert not monitor.pending()
        agent.readable[4] = struct.pack("=Qq", iio_event_code(8, 0, 0, 2), 7)
        assert monitor.read().direction == IIOEventDirection.IIO_EV_DIR_FALLING
    assert agent.open_fds == set()
    assert agent.calls[-2:] == [("close", 4), ("close", 3)]


def test_buffer_reads_one_scan() -> None:
    agent = FakeAgent()
    with IIOBuffer(GuestPath(agent, "/dev/iio:device0"), index=1) as buffer:
        assert agent.calls[1] == ("ioctl", (3, IIO_BUFFER_GET_FD_IOCTL, 1))
        agent.readable[4] = struct.pack("=HH", 0xF002, 0xFFFF)
        assert buffer.read("=H") == (0xF002,)
        assert buffer.read("=H") == (0xFFFF,)
        with pytest.raises(TimeoutError, match="buffer1 scan"):
            buffer.read("=H", timeout=0.01)
    assert agent.open_fds == set()


def test_devnode_wants_an_iio_device_dir() -> None:
    with pytest.raises(ValueError, match="iio:deviceN"):
        devnode(GuestPath(FakeAgent(), "/sys/bus/iio/devices/trigger0"))
