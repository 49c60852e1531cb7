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
    BufferedCapture,
    IIOBuffer,
    IIOChanType,
    IIOEvent,
    IIOEventDirection,
    IIOEventMonitor,
    IIOEventType,
    IIOModifier,
    ScanElement,
    ScanLayout,
    ScanType,
    SysfsTrigger,
    device_index,
    devnode,
    enable_scan_elements,
    iio_event_code,
    scan_elements,
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
        self.broken = False  # AgentClient's: the channel still answers
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


# Scan elements: the ABI's type strings (Documentation/ABI/testing/sysfs-bus-iio, bufferY/
# *_type) and the natural alignment of Documentation/iio/iio_devbuf.rst


def test_scan_type_parses_the_abi_form() -> None:
    t = ScanType.parse("le:s12/16>>4\n")
    assert t == ScanType("le", True, 12, 16, shift=4)
    assert (t.size, t.alignment) == (2, 2)
    assert str(t) == "le:s12/16>>4"
    assert ScanType.parse("be:u16/16>>0") == ScanType("be", False, 16, 16)
    repeated = ScanType.parse("le:s16/16X4>>0")
    assert (repeated.repeat, repeated.size) == (4, 8)
    assert str(repeated) == "le:s16/16X4>>0"
    assert ScanType.parse("le:s64/64>>0").size == 8


@pytest.mark.parametrize("text", ["", "le:s12/16>>", "xe:s12/16>>4", "le:x12/16", "le:s12/12"])
def test_scan_type_refuses_other_forms(text: str) -> None:
    with pytest.raises(ValueError):
        ScanType.parse(text)


def test_scan_type_checks_that_the_bits_fit() -> None:
    with pytest.raises(ValueError, match="do not fit"):
        ScanType("le", True, 14, 16, shift=4)


def test_abi_example_s48_in_64_shifted_by_2() -> None:
    # The ABI's own example: "s48/64>>2 ... shift right 2 and apply a mask to zero the
    # top 16 bits of the result"; here signed, so sign-extended.
    t = ScanType.parse("le:s48/64>>2")
    raw = ((-5 & ((1 << 48) - 1)) << 2 | 0b11) | (0xABCD << 50 & ((1 << 64) - 1))
    assert t.decode(raw.to_bytes(8, "little")) == -5


@pytest.mark.parametrize(
    ("text", "data", "value"),
    [
        ("le:s12/16>>4", bytes([0x10, 0x00]), 1),  # iio_devbuf.rst's accelerometer form
        ("le:s12/16>>4", bytes([0xF0, 0xFF]), -1),
        ("le:s12/16>>4", bytes([0xFF, 0x7F]), 2047),  # low four bits masked away
        ("le:s12/16>>4", bytes([0x00, 0x80]), -2048),
        ("be:s12/16>>4", bytes([0x80, 0x00]), -2048),
        ("le:u16/16>>0", bytes([0x34, 0x12]), 0x1234),
        ("be:u16/16>>0", bytes([0x12, 0x34]), 0x1234),
        ("le:s16/16>>0", bytes([0x00, 0x80]), -32768),
    ],
)
def test_scan_type_decode(text: str, data: bytes, value: int) -> None:
    assert ScanType.parse(text).decode(data) == value


def test_repeated_elements_decode_to_tuples() -> None:
    t = ScanType.parse("le:s16/16X3>>0")
    assert t.decode(struct.pack("<hhh", 1, -2, 3)) == (1, -2, 3)


@given(st.integers(-2048, 2047))
def test_encode_decode_round_trip_s12(value: int) -> None:
    t = ScanType.parse("le:s12/16>>4")
    assert t.decode(t.encode(value)) == value
    assert t.encode(value) == struct.pack("<h", value << 4)


def element(name: str, index: int, text: str, enabled: bool = True) -> ScanElement:
    return ScanElement(name, index, ScanType.parse(text), enabled)


def test_layout_of_iio_devbuf_example() -> None:
    # Documentation/iio/iio_devbuf.rst: u16, u32, u32, u64 -> 0, 4, 8, 16; 24 bytes.
    elements = [
        element("in_c3", 3, "be:u64/64>>0"),
        element("in_c0", 0, "be:u16/16>>0"),
        element("in_c1", 1, "be:u32/32>>0"),
        element("in_c2", 2, "be:u32/32>>0"),
    ]
    layout = ScanLayout.of(elements)
    assert [(e.name, offset) for e, offset in layout.offsets] == [
        ("in_c0", 0),
        ("in_c1", 4),
        ("in_c2", 8),
        ("in_c3", 16),
    ]
    assert layout.size == 24
    # Only channel0 and channel3: six bytes of padding, 16 in all.
    only = ScanLayout.of(
        [element("in_c0", 0, "be:u16/16>>0"), element("in_c3", 3, "be:u64/64>>0")]
        + [element("in_c1", 1, "be:u32/32>>0", enabled=False)]
    )
    assert [offset for _, offset in only.offsets] == [0, 8]
    assert only.size == 16


def test_layout_with_timestamp_and_decode() -> None:
    layout = ScanLayout.of(
        [element("in_voltage0", 4, "le:s12/16>>4"), element("in_timestamp", 8, "le:s64/64>>0")]
    )
    assert layout.size == 16
    data = struct.pack("<h6xq", -100 << 4, 123456789)
    assert layout.decode(data) == {"in_voltage0": -100, "in_timestamp": 123456789}
    with pytest.raises(ValueError, match="16 bytes"):
        layout.decode(data[:8])


def test_layout_rounds_up_to_the_largest_element() -> None:
    layout = ScanLayout.of([element("a", 0, "le:u32/32>>0"), element("b", 1, "le:u16/16>>0")])
    assert layout.size == 8
    assert ScanLayout.of([]).size == 0


class SysfsAgent(FakeAgent):
    """A fake sysfs: files by path, with iio-trig-sysfs's add and remove."""

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[str, str] = {"/sys/bus/iio/devices/trigger0/name": "other\n"}
        self.writes: list[tuple[str, str]] = []

    def read_file(self, path: str) -> bytes:
        return self.files[path].encode()

    def write_file(self, path: str, data: bytes | str) -> None:
        text = data.decode() if isinstance(data, bytes) else data
        self.writes.append((path, text))
        if path.endswith("/add_trigger"):
            self.files[f"/sys/bus/iio/devices/trigger{int(text) + 1}/name"] = f"sysfstrig{text}\n"
        elif path.endswith("/remove_trigger"):
            del self.files[f"/sys/bus/iio/devices/trigger{int(text) + 1}/name"]
        else:
            self.files[path] = text

    def listdir(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return sorted({p[len(prefix) :].split("/")[0] for p in self.files if p.startswith(prefix)})


def test_sysfs_trigger_adds_fires_and_removes() -> None:
    agent = SysfsAgent()
    with SysfsTrigger(agent, trigger_id=3) as trigger:
        assert trigger.name == "sysfstrig3"
        assert agent.writes == [("/sys/bus/iio/devices/iio_sysfs_trigger/add_trigger", "3")]
        trigger.fire()
        assert agent.writes[-1] == ("/sys/bus/iio/devices/trigger4/trigger_now", "1")
    assert agent.writes[-1] == ("/sys/bus/iio/devices/iio_sysfs_trigger/remove_trigger", "3")
    assert "/sys/bus/iio/devices/trigger4/name" not in agent.files
    with pytest.raises(RuntimeError, match="not entered"):
        trigger.fire()


def test_enable_scan_elements_disables_the_others_first() -> None:
    agent = SysfsAgent()
    base = "/sys/bus/i2c/devices/0-0048/iio:device0/buffer0"
    for name, index, enabled in [("in_voltage0", 4, "1"), ("in_voltage1", 5, "0")]:
        agent.files[f"{base}/{name}_index"] = f"{index}\n"
        agent.files[f"{base}/{name}_type"] = "le:s12/16>>4\n"
        agent.files[f"{base}/{name}_en"] = f"{enabled}\n"
    agent.files[f"{base}/in_timestamp_index"] = "8\n"
    agent.files[f"{base}/in_timestamp_type"] = "le:s64/64>>0\n"
    agent.files[f"{base}/in_timestamp_en"] = "0\n"
    iio = GuestPath(agent, "/sys/bus/i2c/devices/0-0048/iio:device0")
    layout = enable_scan_elements(iio, ["in_voltage1", "in_timestamp"])
    assert agent.writes == [
        (f"{base}/in_voltage0_en", "0"),
        (f"{base}/in_voltage1_en", "1"),
        (f"{base}/in_timestamp_en", "1"),
    ]
    assert layout.names() == ["in_voltage1", "in_timestamp"]
    assert layout.size == 16
    assert set(scan_elements(iio)) == {"in_voltage0", "in_voltage1", "in_timestamp"}
    with pytest.raises(KeyError, match="in_voltage9"):
        enable_scan_elements(iio, ["in_voltage9"])


# BufferedCapture: the ABI's order (Documentation/iio/iio_devbuf.rst): scan elements, the
# trigger, the buffer's length, enable; and back


def imu_agent() -> tuple[SysfsAgent, GuestPath, str]:
    agent = SysfsAgent()
    base = "/sys/bus/i2c/devices/0-0068/iio:device3"
    agent.files["/sys/bus/iio/devices/trigger1/name"] = "bmi160-dev3\n"
    agent.files[f"{base}/trigger/current_trigger"] = "bmi160-dev3\n"
    for name, index in [("in_anglvel_x", 4), ("in_accel_x", 7), ("in_accel_y", 8)]:
        agent.files[f"{base}/buffer0/{name}_index"] = f"{index}\n"
        agent.files[f"{base}/buffer0/{name}_type"] = "le:s16/16>>0\n"
        agent.files[f"{base}/buffer0/{name}_en"] = "0\n"
    agent.files[f"{base}/buffer0/in_timestamp_index"] = "10\n"
    agent.files[f"{base}/buffer0/in_timestamp_type"] = "le:s64/64>>0\n"
    agent.files[f"{base}/buffer0/in_timestamp_en"] = "0\n"
    return agent, GuestPath(agent, base), base


def test_buffered_capture_reads_little_endian_scans() -> None:
    agent, iio, base = imu_agent()
    with BufferedCapture(
        iio, ["in_accel_y", "in_anglvel_x", "in_timestamp"], "bmi160-dev3", length=4, timeout=0.05
    ) as cap:
        assert cap.layout.names() == ["in_anglvel_x", "in_accel_y", "in_timestamp"]
        assert cap.layout.size == 16
        assert agent.writes == [
            (f"{base}/buffer0/in_accel_y_en", "1"),
            (f"{base}/buffer0/in_anglvel_x_en", "1"),
            (f"{base}/buffer0/in_timestamp_en", "1"),
            (f"{base}/trigger/current_trigger", "bmi160-dev3"),
            (f"{base}/buffer0/length", "4"),
            (f"{base}/buffer0/enable", "1"),
        ]
        assert ("open", "/dev/iio:device3") in agent.calls
        fd = max(agent.open_fds)
        # two scans: s16 -2 and 0x1234 little-endian, 4 bytes of padding, then s64
        agent.readable[fd] = struct.pack("<hh4xq", -2, 0x1234, 10**9) + struct.pack(
            "<hh4xq", 32767, -32768, 2 * 10**9
        )
        first, second = cap.read(2)
        assert first == {"in_anglvel_x": -2, "in_accel_y": 0x1234, "in_timestamp": 10**9}
        assert second["in_anglvel_x"] == 32767 and second["in_accel_y"] == -32768
        with pytest.raises(TimeoutError, match="buffer0 scan"):
            cap.read()
    assert agent.writes[-2:] == [
        (f"{base}/buffer0/enable", "0"),
        (f"{base}/trigger/current_trigger", "bmi160-dev3"),
    ]
    assert agent.open_fds == set()
    with pytest.raises(RuntimeError, match="not running"):
        cap.read()


def test_buffered_capture_unknown_trigger_undoes_nothing_it_did_not_do() -> None:
    agent, iio, base = imu_agent()
    with pytest.raises(KeyError, match="bmi160-dev3"):
        BufferedCapture(iio, ["in_accel_x"], "no-such-trigger").__enter__()
    assert not any(path.endswith(("current_trigger", "enable")) for path, _ in agent.writes)
    assert agent.open_fds == set()


def test_buffered_capture_undoes_the_trigger_when_enable_fails() -> None:
    agent, iio, base = imu_agent()

    def refuse(path: str, data: bytes | str) -> None:
        if path.endswith("/enable") and data in ("1", b"1"):
            raise OSError(22, "Invalid argument")
        SysfsAgent.write_file(agent, path, data)

    agent.write_file = refuse  # type: ignore[method-assign]
    with pytest.raises(OSError):
        BufferedCapture(iio, ["in_accel_x"], "bmi160-dev3").__enter__()
    assert agent.files[f"{base}/trigger/current_trigger"] == "bmi160-dev3"
    assert agent.open_fds == set()
    assert not any(p.endswith("/enable") and d == "0" for p, d in agent.writes)


def test_buffered_capture_without_a_trigger_leaves_current_trigger_alone() -> None:
    agent, iio, base = imu_agent()
    with BufferedCapture(iio, ["in_accel_x"]) as cap:
        assert cap.layout.size == 2
    assert not any(path.endswith("current_trigger") for path, _ in agent.writes)
    with pytest.raises(ValueError, match="length 0"):
        BufferedCapture(iio, ["in_accel_x"], length=0)
