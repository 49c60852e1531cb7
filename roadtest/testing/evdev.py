"""The input subsystem's event device ABI (/dev/input/eventN), used inside the guest.

What `evtest` does, from the host: open the node in the guest through the agent, ask its
name, id and capabilities by ioctl, read the key state, and read `struct input_event`
records. Numbers and layouts come from the 6.12 tree's UAPI headers
(include/uapi/linux/input.h, include/uapi/linux/input-event-codes.h) and the generic
ioctl encoding (roadtest.testing.uapi).

Layout: on a 64-bit guest (UML x86_64 and x86_64, the only ones roadtest boots) struct
input_event is a struct timeval (two 8-byte longs: seconds, microseconds), then __u16
type, __u16 code and __s32 value: 24 bytes, little-endian, no padding. Bitmaps
(EVIOCGBIT, EVIOCGKEY) are arrays of longs; on a little-endian machine bit N is bit N % 8
of byte N // 8.

Reads never block the agent: each poll in short guest slices against a deadline in host
seconds first (roadtest.testing.uapi.wait_readable), as the IIO and RTC helpers do.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import ClassVar, Final

from roadtest.testing.devnode import DeviceNode
from roadtest.testing.guestpath import GuestPath
from roadtest.testing.uapi import IOR, IOW, POLLIN, wait_readable

# include/uapi/linux/input-event-codes.h
EV_SYN: Final = 0x00
EV_KEY: Final = 0x01
EV_REL: Final = 0x02
EV_ABS: Final = 0x03
EV_MSC: Final = 0x04
EV_SW: Final = 0x05
EV_LED: Final = 0x11
EV_SND: Final = 0x12
EV_REP: Final = 0x14
EV_FF: Final = 0x15
EV_PWR: Final = 0x16
EV_FF_STATUS: Final = 0x17
EV_MAX: Final = 0x1F

SYN_REPORT: Final = 0
SYN_CONFIG: Final = 1
SYN_MT_REPORT: Final = 2
SYN_DROPPED: Final = 3

MSC_SCAN: Final = 0x04

KEY_MAX: Final = 0x2FF
REL_MAX: Final = 0x0F
ABS_MAX: Final = 0x3F
MSC_MAX: Final = 0x07
SW_MAX: Final = 0x10
LED_MAX: Final = 0x0F
SND_MAX: Final = 0x07
REP_MAX: Final = 0x01
FF_MAX: Final = 0x7F

#: The highest code of each event type, for sizing EVIOCGBIT's buffer.
CODE_MAX: Final = {
    EV_SYN: EV_MAX,  # EVIOCGBIT(0, ...) answers the event types
    EV_KEY: KEY_MAX,
    EV_REL: REL_MAX,
    EV_ABS: ABS_MAX,
    EV_MSC: MSC_MAX,
    EV_SW: SW_MAX,
    EV_LED: LED_MAX,
    EV_SND: SND_MAX,
    EV_REP: REP_MAX,
    EV_FF: FF_MAX,
}

EV_NAMES: Final = {
    EV_SYN: "EV_SYN",
    EV_KEY: "EV_KEY",
    EV_REL: "EV_REL",
    EV_ABS: "EV_ABS",
    EV_MSC: "EV_MSC",
    EV_SW: "EV_SW",
    EV_LED: "EV_LED",
    EV_SND: "EV_SND",
    EV_REP: "EV_REP",
    EV_FF: "EV_FF",
    EV_PWR: "EV_PWR",
    EV_FF_STATUS: "EV_FF_STATUS",
}

# include/uapi/linux/input.h
INPUT_EVENT: Final = struct.Struct("<qqHHi")  # struct timeval, type, code, value
INPUT_ID: Final = struct.Struct("<4H")  # bustype, vendor, product, version
_INT: Final = struct.Struct("<i")
_UINT2: Final = struct.Struct("<2I")

EVIOCGVERSION: Final = IOR("E", 0x01, _INT.size)
EVIOCGID: Final = IOR("E", 0x02, INPUT_ID.size)
EVIOCGREP: Final = IOR("E", 0x03, _UINT2.size)
EVIOCGKEYCODE: Final = IOR("E", 0x04, _UINT2.size)
EVIOCGRAB: Final = IOW("E", 0x90, _INT.size)

BUS_I2C: Final = 0x18
BUS_SPI: Final = 0x1C

#: Bytes asked for a name, phys or uniq string (the kernel truncates to the buffer).
STRING_MAX: Final = 256


def EVIOCGNAME(length: int) -> int:  # noqa: N802 (the kernel's names)
    return IOR("E", 0x06, length)  # _IOC(_IOC_READ, 'E', 0x06, len)


def EVIOCGPHYS(length: int) -> int:  # noqa: N802
    return IOR("E", 0x07, length)  # _IOC(_IOC_READ, 'E', 0x07, len)


def EVIOCGUNIQ(length: int) -> int:  # noqa: N802
    return IOR("E", 0x08, length)  # _IOC(_IOC_READ, 'E', 0x08, len)


def EVIOCGKEY(length: int) -> int:  # noqa: N802
    return IOR("E", 0x18, length)  # _IOC(_IOC_READ, 'E', 0x18, len)


def EVIOCGBIT(ev: int, length: int) -> int:  # noqa: N802
    return IOR("E", 0x20 + ev, length)  # _IOC(_IOC_READ, 'E', 0x20 + (ev), len)


def bitmap_bytes(max_code: int) -> int:
    """The size of a kernel bitmap of `max_code` + 1 bits: whole 8-byte longs."""
    longs = (max_code + 1 + 63) // 64
    return longs * 8


def bits_set(bitmap: bytes) -> set[int]:
    """The bit numbers set in a little-endian long bitmap, as EVIOCGBIT returns it."""
    return {i * 8 + b for i, byte in enumerate(bitmap) for b in range(8) if byte >> b & 1}


def bitmap_of(bits: Iterable[int], max_code: int) -> bytes:
    """The inverse of `bits_set`: a bitmap of `max_code` + 1 bits (for tests)."""
    data = bytearray(bitmap_bytes(max_code))
    for bit in bits:
        if not 0 <= bit <= max_code:
            raise ValueError(f"bit {bit} is outside 0..{max_code}")
        data[bit // 8] |= 1 << bit % 8
    return bytes(data)


@dataclass(frozen=True)
class InputEvent:
    """One struct input_event. `sec`/`usec` are the kernel's timestamp (CLOCK_MONOTONIC
    unless EVIOCSCLOCKID said otherwise); compare events by `key`, never by time."""

    type: int
    code: int
    value: int
    sec: int = 0
    usec: int = 0

    SIZE: ClassVar[int] = INPUT_EVENT.size

    @property
    def key(self) -> tuple[int, int, int]:
        """(type, code, value): what an event says, without its time."""
        return (self.type, self.code, self.value)

    @property
    def is_report(self) -> bool:
        """EV_SYN/SYN_REPORT: the end of one frame of changes."""
        return self.type == EV_SYN and self.code == SYN_REPORT

    def pack(self) -> bytes:
        return INPUT_EVENT.pack(self.sec, self.usec, self.type, self.code, self.value)

    @classmethod
    def unpack(cls, data: bytes) -> InputEvent:
        sec, usec, type_, code, value = INPUT_EVENT.unpack(data)
        return cls(type_, code, value, sec, usec)

    @classmethod
    def unpack_all(cls, data: bytes) -> list[InputEvent]:
        """Every whole event in `data` (the kernel's read returns whole events only)."""
        if len(data) % INPUT_EVENT.size:
            raise ValueError(
                f"{len(data)} bytes are not whole {INPUT_EVENT.size}-byte input events"
            )
        return [cls.unpack(data[i : i + cls.SIZE]) for i in range(0, len(data), cls.SIZE)]

    def __str__(self) -> str:
        kind = EV_NAMES.get(self.type, f"type {self.type:#x}")
        return f"{self.sec}.{self.usec:06d} {kind} code {self.code:#x} value {self.value}"


def frames(events: Iterable[InputEvent]) -> list[list[tuple[int, int, int]]]:
    """The events as frames: each a list of (type, code, value) up to a SYN_REPORT, which is
    left out. Events after the last SYN_REPORT (an unfinished frame) are left out too."""
    found: list[list[tuple[int, int, int]]] = []
    current: list[tuple[int, int, int]] = []
    for event in events:
        if event.is_report:
            found.append(current)
            current = []
        else:
            current.append(event.key)
    return found


@dataclass(frozen=True)
class InputId:
    """struct input_id."""

    bustype: int
    vendor: int
    product: int
    version: int


def event_node(device_dir: GuestPath) -> GuestPath:
    """/dev/input/eventN of the input device a bound device registered: the one under
    `<device>/input/inputM/eventN` in sysfs (numbers depend on what registered before)."""
    input_dir = (device_dir / "input").only("input*")
    event = input_dir.only("event*")
    return GuestPath(device_dir.agent, f"/dev/input/{event.name}")


DEFAULT_TIMEOUT: Final = 5.0


class EvdevTimeout(TimeoutError):
    """No input event became readable in time."""


class EvdevDevice(DeviceNode):
    """One /dev/input/eventN, open in the guest for the `with` block.

        with EvdevDevice.of(dev.path) as keypad:
            assert keypad.name() == "tca8418"
            dev.model.press(0, 0)
            assert keypad.read_frame() == [(EV_MSC, MSC_SCAN, 0), (EV_KEY, KEY_A, 1)]

    Events queue in the kernel from the open on; earlier ones are lost to this reader,
    as to any userspace reader (the key state, `keys_down()`, is not).
    """

    open_flags = os.O_RDONLY | os.O_NONBLOCK

    def __init__(self, node: GuestPath) -> None:
        super().__init__(node)
        self._queued: list[InputEvent] = []

    @classmethod
    def of(cls, device_dir: GuestPath) -> EvdevDevice:
        """The event device of a bound device (its sysfs directory), by `event_node`."""
        return cls(event_node(device_dir))

    def _ioctl(self, request: int, size: int, arg: bytes | None = None) -> tuple[int, bytes]:
        """An ioctl that fills `size` bytes (or reads and fills `arg`)."""
        return self.ioctl(request, arg if arg is not None else bytes(size))

    # Identity

    def _string(self, request: int) -> str:
        ret, buf = self._ioctl(request, STRING_MAX)
        # The kernel returns the bytes it copied, the NUL included.
        return buf[: max(ret, 0)].split(b"\0", 1)[0].decode(errors="replace")

    def name(self) -> str:
        """EVIOCGNAME: the input device's name."""
        return self._string(EVIOCGNAME(STRING_MAX))

    def phys(self) -> str:
        """EVIOCGPHYS: its physical path ("" when the driver set none: the kernel's ENOENT)."""
        try:
            return self._string(EVIOCGPHYS(STRING_MAX))
        except FileNotFoundError:
            return ""

    def id(self) -> InputId:
        """EVIOCGID."""
        _, buf = self._ioctl(EVIOCGID, INPUT_ID.size)
        return InputId(*INPUT_ID.unpack(buf))

    def version(self) -> int:
        """EVIOCGVERSION: the evdev protocol version (EV_VERSION, 0x010001)."""
        _, buf = self._ioctl(EVIOCGVERSION, _INT.size)
        return int(_INT.unpack(buf)[0])

    # Capabilities and state

    def event_types(self) -> set[int]:
        """EVIOCGBIT(0): the event types the device sends (EV_SYN, EV_KEY, ...)."""
        return self.capabilities(0)

    def capabilities(self, ev_type: int) -> set[int]:
        """EVIOCGBIT(ev_type): the codes of that type the device can send (0: the types)."""
        max_code = CODE_MAX.get(ev_type, KEY_MAX)
        size = bitmap_bytes(max_code)
        _, buf = self._ioctl(EVIOCGBIT(ev_type, size), size)
        return bits_set(buf)

    def keys_down(self) -> set[int]:
        """EVIOCGKEY: the key codes the input core holds as pressed."""
        size = bitmap_bytes(KEY_MAX)
        _, buf = self._ioctl(EVIOCGKEY(size), size)
        return bits_set(buf)

    def keycode(self, scancode: int) -> int:
        """EVIOCGKEYCODE: the key code the device's keymap gives `scancode`."""
        _, buf = self._ioctl(EVIOCGKEYCODE, _UINT2.size, _UINT2.pack(scancode, 0))
        return int(_UINT2.unpack(buf)[1])

    def repeat(self) -> tuple[int, int]:
        """EVIOCGREP: autorepeat (delay, period) in ms."""
        _, buf = self._ioctl(EVIOCGREP, _UINT2.size)
        delay, period = _UINT2.unpack(buf)
        return int(delay), int(period)

    # Events

    def pending(self) -> bool:
        """Whether an event is readable now (a zero-timeout poll) or already read and queued."""
        if self._queued:
            return True
        return any(rev & POLLIN for _, rev in self.agent.poll([(self.fd, POLLIN)], 0))

    def read_events(
        self, timeout: float = DEFAULT_TIMEOUT, max_events: int = 64
    ) -> list[InputEvent]:
        """Every event readable now, at least one: `EvdevTimeout` when none arrives within
        `timeout` host seconds."""
        if self._queued:
            queued, self._queued = self._queued, []
            return queued
        deadline = time.monotonic() + timeout
        while True:
            try:
                wait_readable(
                    self.agent, self.fd, max(deadline - time.monotonic(), 0.0), "input event"
                )
            except TimeoutError:
                raise EvdevTimeout(
                    f"{self.node}: no input event within {timeout:g} s (host time); "
                    "see the kernel log for the driver's interrupt handling"
                ) from None
            try:
                data = self.agent.read(self.fd, max_events * INPUT_EVENT.size)
            except BlockingIOError:  # readable, then not (the fd is non-blocking): wait on
                continue
            return InputEvent.unpack_all(data)

    def events(self, timeout: float = DEFAULT_TIMEOUT) -> Iterator[InputEvent]:
        """Events one by one, waiting up to `timeout` host seconds for each."""
        while True:
            yield from self.read_events(timeout)

    def read_frame(self, timeout: float = DEFAULT_TIMEOUT) -> list[tuple[int, int, int]]:
        """The next frame: the (type, code, value) of each event up to the next SYN_REPORT
        (left out). `timeout` host seconds for the whole frame."""
        deadline = time.monotonic() + timeout
        frame: list[tuple[int, int, int]] = []
        while True:
            batch = self.read_events(max(deadline - time.monotonic(), 0.0))
            for i, event in enumerate(batch):
                if event.is_report:
                    self._queued = batch[i + 1 :] + self._queued
                    return frame
                frame.append(event.key)

    def read_values(
        self, count: int, timeout: float = DEFAULT_TIMEOUT
    ) -> list[tuple[int, int, int]]:
        """Whole frames, joined, until they hold at least `count` events (SYN_REPORTs left
        out): the input core ends a frame on its own when its buffer of values fills
        (drivers/input/input.c), so a driver's one burst of many changes may come as several
        frames. `timeout` host seconds for all of them."""
        deadline = time.monotonic() + timeout
        found: list[tuple[int, int, int]] = []
        while len(found) < count:
            found += self.read_frame(max(deadline - time.monotonic(), 0.0))
        return found

    def read_frames(
        self, count: int, timeout: float = DEFAULT_TIMEOUT
    ) -> list[list[tuple[int, int, int]]]:
        """The next `count` frames, `timeout` host seconds for all of them."""
        deadline = time.monotonic() + timeout
        return [self.read_frame(max(deadline - time.monotonic(), 0.0)) for _ in range(count)]

    def drain(self) -> list[InputEvent]:
        """Every event readable now, without waiting (none: an empty list)."""
        found, self._queued = self._queued, []
        while any(rev & POLLIN for _, rev in self.agent.poll([(self.fd, POLLIN)], 0)):
            try:
                found.extend(InputEvent.unpack_all(self.agent.read(self.fd, 64 * INPUT_EVENT.size)))
            except BlockingIOError:
                break
        return found
