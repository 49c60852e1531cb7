"""The GPIO character device's v2 userspace ABI (include/uapi/linux/gpio.h), used in the guest.

A test is a GPIO consumer as libgpiod would be: it opens /dev/gpiochipN, asks for the
chip's and its lines' information, requests lines as inputs (with edge detection) or
outputs, gets and sets their values and reads edge events. Every open, ioctl, poll and
read runs in the guest through the agent; this module packs and unpacks the structures
(the x86_64 layout the UML and QEMU guests share: little-endian, `__aligned_u64` on 8
bytes) and computes the ioctl numbers as the header's _IOR/_IOWR do.

Sizes (the header's comments and static asserts in gpiolib-cdev): gpiochip_info 68,
gpio_v2_line_attribute 16, gpio_v2_line_config_attribute 24, gpio_v2_line_config 272,
gpio_v2_line_request 592, gpio_v2_line_info 256, gpio_v2_line_values 16,
gpio_v2_line_event 48.

Reads of edge events poll first, in short slices against a deadline in host time: a read
that blocked in the guest would block the agent, and under simulated time or time-travel
the guest's clock jumps over idle waits (roadtest.testing.uapi).
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from roadtest.guest.client import AgentClient
from roadtest.testing.devnode import DeviceNode, GuestFd
from roadtest.testing.guestpath import GuestPath
from roadtest.testing.uapi import IOR, IOWR, POLLIN, wait_readable

GPIO_MAX_NAME_SIZE: Final = 32
GPIO_V2_LINES_MAX: Final = 64
GPIO_V2_LINE_NUM_ATTRS_MAX: Final = 10

# struct gpiochip_info: name[32], label[32], __u32 lines.
GPIOCHIP_INFO: Final = struct.Struct("<32s32sI")
# struct gpio_v2_line_attribute: __u32 id, __u32 padding, then a union of __aligned_u64
# flags, __aligned_u64 values and __u32 debounce_period_us (its low 4 bytes here).
LINE_ATTRIBUTE: Final = struct.Struct("<IIQ")
# struct gpio_v2_line_config_attribute: the attribute, then __aligned_u64 mask.
LINE_CONFIG_ATTRIBUTE: Final = struct.Struct("<IIQQ")
# struct gpio_v2_line_config: __aligned_u64 flags, __u32 num_attrs, __u32 padding[5],
# then attrs[10].
_LINE_CONFIG_HEAD: Final = struct.Struct("<QI20x")
LINE_CONFIG_SIZE: Final = _LINE_CONFIG_HEAD.size + GPIO_V2_LINE_NUM_ATTRS_MAX * (
    LINE_CONFIG_ATTRIBUTE.size
)
# struct gpio_v2_line_request: __u32 offsets[64], consumer[32], the config,
# __u32 num_lines, __u32 event_buffer_size, __u32 padding[5], __s32 fd.
_REQUEST_HEAD: Final = struct.Struct(f"<{GPIO_V2_LINES_MAX}I32s")
_REQUEST_TAIL: Final = struct.Struct("<II20xi")
LINE_REQUEST_SIZE: Final = _REQUEST_HEAD.size + LINE_CONFIG_SIZE + _REQUEST_TAIL.size
# struct gpio_v2_line_info: name[32], consumer[32], __u32 offset, __u32 num_attrs,
# __aligned_u64 flags, attrs[10], __u32 padding[4].
_LINE_INFO_HEAD: Final = struct.Struct("<32s32sIIQ")
LINE_INFO_SIZE: Final = _LINE_INFO_HEAD.size + GPIO_V2_LINE_NUM_ATTRS_MAX * LINE_ATTRIBUTE.size + 16
# struct gpio_v2_line_values: __aligned_u64 bits, __aligned_u64 mask.
LINE_VALUES: Final = struct.Struct("<QQ")
# struct gpio_v2_line_event: __aligned_u64 timestamp_ns, __u32 id, offset, seqno,
# line_seqno, __u32 padding[6].
LINE_EVENT: Final = struct.Struct("<QIIII24x")

_GPIO: Final = chr(0xB4)  # the ioctls' type
GPIO_GET_CHIPINFO_IOCTL: Final = IOR(_GPIO, 0x01, GPIOCHIP_INFO.size)
GPIO_V2_GET_LINEINFO_IOCTL: Final = IOWR(_GPIO, 0x05, LINE_INFO_SIZE)
GPIO_V2_GET_LINE_IOCTL: Final = IOWR(_GPIO, 0x07, LINE_REQUEST_SIZE)
GPIO_V2_LINE_SET_CONFIG_IOCTL: Final = IOWR(_GPIO, 0x0D, LINE_CONFIG_SIZE)
GPIO_V2_LINE_GET_VALUES_IOCTL: Final = IOWR(_GPIO, 0x0E, LINE_VALUES.size)
GPIO_V2_LINE_SET_VALUES_IOCTL: Final = IOWR(_GPIO, 0x0F, LINE_VALUES.size)


class LineFlag(enum.IntFlag):
    """enum gpio_v2_line_flag."""

    USED = 1 << 0
    ACTIVE_LOW = 1 << 1
    INPUT = 1 << 2
    OUTPUT = 1 << 3
    EDGE_RISING = 1 << 4
    EDGE_FALLING = 1 << 5
    OPEN_DRAIN = 1 << 6
    OPEN_SOURCE = 1 << 7
    BIAS_PULL_UP = 1 << 8
    BIAS_PULL_DOWN = 1 << 9
    BIAS_DISABLED = 1 << 10
    EVENT_CLOCK_REALTIME = 1 << 11
    EVENT_CLOCK_HTE = 1 << 12


EDGE_BOTH: Final = LineFlag.EDGE_RISING | LineFlag.EDGE_FALLING
NO_FLAGS: Final = LineFlag(0)


class LineAttrId(enum.IntEnum):
    """enum gpio_v2_line_attr_id."""

    FLAGS = 1
    OUTPUT_VALUES = 2
    DEBOUNCE = 3


class EventId(enum.IntEnum):
    """enum gpio_v2_line_event_id."""

    RISING_EDGE = 1
    FALLING_EDGE = 2


def _cstr(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode(errors="replace")


def _name(text: str, what: str) -> bytes:
    raw = text.encode()
    if len(raw) >= GPIO_MAX_NAME_SIZE:
        raise ValueError(f"{what} {text!r} does not fit {GPIO_MAX_NAME_SIZE - 1} bytes")
    return raw


def _bits(offsets: Sequence[int], mapping: Mapping[int, bool | int]) -> tuple[int, int]:
    """(bits, mask) over a request's line indices for {offset: value}."""
    bits = mask = 0
    for offset, value in mapping.items():
        try:
            index = offsets.index(offset)
        except ValueError:
            raise ValueError(f"line {offset} is not in the request {list(offsets)}") from None
        mask |= 1 << index
        if value:
            bits |= 1 << index
    return bits, mask


@dataclass(frozen=True)
class ChipInfo:
    """struct gpiochip_info: the chip's name (gpiochipN), label (the driver's) and lines."""

    name: str
    label: str
    lines: int

    @classmethod
    def unpack(cls, data: bytes) -> ChipInfo:
        name, label, lines = GPIOCHIP_INFO.unpack(data)
        return cls(_cstr(name), _cstr(label), lines)

    def pack(self) -> bytes:
        return GPIOCHIP_INFO.pack(self.name.encode(), self.label.encode(), self.lines)


@dataclass(frozen=True)
class LineAttribute:
    """struct gpio_v2_line_attribute: `value` is flags, output values or the debounce
    period (us), by `id`."""

    id: LineAttrId
    value: int

    def pack(self) -> bytes:
        return LINE_ATTRIBUTE.pack(self.id, 0, self.value)

    @classmethod
    def unpack(cls, data: bytes) -> LineAttribute:
        attr_id, _, value = LINE_ATTRIBUTE.unpack(data)
        if attr_id == LineAttrId.DEBOUNCE:
            value &= 0xFFFF_FFFF  # a __u32 in the union
        return cls(LineAttrId(attr_id), value)


@dataclass(frozen=True)
class LineInfo:
    """struct gpio_v2_line_info."""

    name: str
    consumer: str
    offset: int
    flags: LineFlag
    attrs: tuple[LineAttribute, ...] = ()

    @property
    def used(self) -> bool:
        return LineFlag.USED in self.flags

    @property
    def is_output(self) -> bool:
        return LineFlag.OUTPUT in self.flags

    @property
    def debounce_us(self) -> int | None:
        for attr in self.attrs:
            if attr.id == LineAttrId.DEBOUNCE:
                return attr.value
        return None

    @classmethod
    def unpack(cls, data: bytes) -> LineInfo:
        if len(data) != LINE_INFO_SIZE:
            raise ValueError(f"struct gpio_v2_line_info is {LINE_INFO_SIZE} bytes, not {len(data)}")
        name, consumer, offset, num_attrs, flags = _LINE_INFO_HEAD.unpack_from(data)
        if num_attrs > GPIO_V2_LINE_NUM_ATTRS_MAX:
            raise ValueError(f"gpio_v2_line_info has {num_attrs} attributes")
        base = _LINE_INFO_HEAD.size
        attrs = tuple(
            LineAttribute.unpack(
                data[base + i * LINE_ATTRIBUTE.size : base + (i + 1) * LINE_ATTRIBUTE.size]
            )
            for i in range(num_attrs)
        )
        return cls(_cstr(name), _cstr(consumer), offset, LineFlag(flags), attrs)

    @staticmethod
    def query(offset: int) -> bytes:
        """The ioctl's argument: the offset to describe, everything else zero."""
        data = bytearray(LINE_INFO_SIZE)
        struct.pack_into("<I", data, 2 * GPIO_MAX_NAME_SIZE, offset)
        return bytes(data)


@dataclass(frozen=True)
class ConfigAttribute:
    """struct gpio_v2_line_config_attribute: an attribute for the lines in `mask` (bits
    over the request's line indices, not offsets)."""

    attr: LineAttribute
    mask: int

    def pack(self) -> bytes:
        return LINE_CONFIG_ATTRIBUTE.pack(self.attr.id, 0, self.attr.value, self.mask)


@dataclass(frozen=True)
class LineConfig:
    """struct gpio_v2_line_config: the default flags and up to 10 attributes."""

    flags: LineFlag
    attrs: tuple[ConfigAttribute, ...] = ()

    def pack(self) -> bytes:
        if len(self.attrs) > GPIO_V2_LINE_NUM_ATTRS_MAX:
            raise ValueError(
                f"at most {GPIO_V2_LINE_NUM_ATTRS_MAX} attributes, not {len(self.attrs)}"
            )
        body = b"".join(a.pack() for a in self.attrs)
        body += bytes(LINE_CONFIG_ATTRIBUTE.size * (GPIO_V2_LINE_NUM_ATTRS_MAX - len(self.attrs)))
        return _LINE_CONFIG_HEAD.pack(int(self.flags), len(self.attrs)) + body

    @classmethod
    def build(
        cls,
        offsets: Sequence[int],
        flags: LineFlag,
        values: Mapping[int, bool | int] | None = None,
        debounce_us: int | None = None,
    ) -> LineConfig:
        """A config for a request of `offsets`: `flags` for all, output `values` by
        offset, a debounce period for all."""
        attrs: list[ConfigAttribute] = []
        every = (1 << len(offsets)) - 1
        if values:
            bits, mask = _bits(offsets, values)
            attrs.append(ConfigAttribute(LineAttribute(LineAttrId.OUTPUT_VALUES, bits), mask))
        if debounce_us is not None:
            attrs.append(ConfigAttribute(LineAttribute(LineAttrId.DEBOUNCE, debounce_us), every))
        return cls(flags, tuple(attrs))


def pack_request(
    offsets: Sequence[int], consumer: str, config: LineConfig, event_buffer_size: int = 0
) -> bytes:
    """struct gpio_v2_line_request, its fd zero (the kernel fills it in)."""
    if not 1 <= len(offsets) <= GPIO_V2_LINES_MAX:
        raise ValueError(f"a request has 1 to {GPIO_V2_LINES_MAX} lines, not {len(offsets)}")
    if len(set(offsets)) != len(offsets):
        raise ValueError(f"a line may be requested once: {list(offsets)}")
    padded = list(offsets) + [0] * (GPIO_V2_LINES_MAX - len(offsets))
    return (
        _REQUEST_HEAD.pack(*padded, _name(consumer, "consumer"))
        + config.pack()
        + _REQUEST_TAIL.pack(len(offsets), event_buffer_size, 0)
    )


def request_fd(data: bytes) -> int:
    """The fd the kernel put in a gpio_v2_line_request."""
    (_, _, fd) = _REQUEST_TAIL.unpack_from(data, LINE_REQUEST_SIZE - _REQUEST_TAIL.size)
    return int(fd)


@dataclass(frozen=True)
class LineEvent:
    """struct gpio_v2_line_event: an edge on `offset` (`id`), its timestamp (guest ns,
    CLOCK_MONOTONIC unless the request asked for another clock) and its sequence numbers
    in the request (`seqno`) and on its line (`line_seqno`)."""

    timestamp_ns: int
    id: EventId
    offset: int
    seqno: int
    line_seqno: int

    @property
    def rising(self) -> bool:
        return self.id == EventId.RISING_EDGE

    def pack(self) -> bytes:
        return LINE_EVENT.pack(self.timestamp_ns, self.id, self.offset, self.seqno, self.line_seqno)

    @classmethod
    def unpack(cls, data: bytes) -> LineEvent:
        timestamp, event_id, offset, seqno, line_seqno = LINE_EVENT.unpack(data)
        return cls(timestamp, EventId(event_id), offset, seqno, line_seqno)


class GpioEventTimeout(TimeoutError):
    """No edge event became readable in time."""


class LineRequest(GuestFd):
    """Requested lines: the request's fd in the guest, closed (the lines released) when
    the `with` block ends or by `release()`. Values are by offset."""

    def __init__(self, agent: AgentClient, fd: int, offsets: Sequence[int], node: str) -> None:
        super().__init__(agent, f"lines {list(offsets)} of {node}", fd)
        self.offsets = tuple(offsets)
        self.node = node

    def release(self) -> None:
        self.close()

    def _not_open_hint(self) -> str:
        return "they were released"

    def _ioctl(self, request: int, arg: bytes) -> bytes:
        return self.ioctl(request, arg)[1]

    def get_values(self, offsets: Iterable[int] | None = None) -> dict[int, int]:
        """GPIO_V2_LINE_GET_VALUES_IOCTL: {offset: 0 or 1} (logical values: an active-low
        line reads 1 when low)."""
        wanted = self.offsets if offsets is None else tuple(offsets)
        _, mask = _bits(self.offsets, dict.fromkeys(wanted, 1))
        data = self._ioctl(GPIO_V2_LINE_GET_VALUES_IOCTL, LINE_VALUES.pack(0, mask))
        bits, _ = LINE_VALUES.unpack(data)
        return {offset: (bits >> self.offsets.index(offset)) & 1 for offset in wanted}

    def get_value(self, offset: int) -> int:
        return self.get_values([offset])[offset]

    def set_values(self, values: Mapping[int, bool | int]) -> None:
        """GPIO_V2_LINE_SET_VALUES_IOCTL for {offset: value} (output lines only)."""
        bits, mask = _bits(self.offsets, values)
        self._ioctl(GPIO_V2_LINE_SET_VALUES_IOCTL, LINE_VALUES.pack(bits, mask))

    def reconfigure(self, config: LineConfig) -> None:
        """GPIO_V2_LINE_SET_CONFIG_IOCTL (e.g. `LineConfig.build(req.offsets, ...)`)."""
        self._ioctl(GPIO_V2_LINE_SET_CONFIG_IOCTL, config.pack())

    def read_event(self, timeout: float = 10.0) -> LineEvent:
        """The next edge event; `GpioEventTimeout` if none within `timeout` host seconds."""
        fd = self.fd
        try:
            wait_readable(self.agent, fd, timeout, "edge event")
        except TimeoutError:
            raise GpioEventTimeout(
                f"{self.node}: no edge event on lines {list(self.offsets)} within "
                f"{timeout:g} s; see the kernel log for the driver's interrupt handling"
            ) from None
        return LineEvent.unpack(self.agent.read(fd, LINE_EVENT.size))

    def pending_events(self) -> list[LineEvent]:
        """The events readable now, without waiting."""
        fd = self.fd
        events: list[LineEvent] = []
        while any(r & POLLIN for _, r in self.agent.poll([(fd, POLLIN)], 0)):
            data = self.agent.read(fd, 16 * LINE_EVENT.size)
            for start in range(0, len(data), LINE_EVENT.size):
                events.append(LineEvent.unpack(data[start : start + LINE_EVENT.size]))
        return events


class GpioChip(DeviceNode):
    """One /dev/gpiochipN, opened in the guest for the `with` block.

    Give it the bound device's sysfs directory (the GPIO device is its child,
    `<device>/gpiochipN`: the number depends on the order of registration), or a
    GuestPath of the node itself (`/dev/gpiochip0`).
    """

    def __init__(self, device_dir: GuestPath) -> None:
        if device_dir.path.startswith("/dev/"):
            name = device_dir.name
        else:
            name = device_dir.only("gpiochip*").name
        super().__init__(GuestPath(device_dir.agent, f"/dev/{name}"))
        self.name = name

    def _ioctl(self, request: int, arg: bytes) -> bytes:
        return self.ioctl(request, arg)[1]

    def info(self) -> ChipInfo:
        """GPIO_GET_CHIPINFO_IOCTL."""
        return ChipInfo.unpack(self._ioctl(GPIO_GET_CHIPINFO_IOCTL, bytes(GPIOCHIP_INFO.size)))

    def line_info(self, offset: int) -> LineInfo:
        """GPIO_V2_GET_LINEINFO_IOCTL."""
        return LineInfo.unpack(self._ioctl(GPIO_V2_GET_LINEINFO_IOCTL, LineInfo.query(offset)))

    def request(
        self,
        offsets: Sequence[int],
        config: LineConfig,
        consumer: str = "roadtest",
        event_buffer_size: int = 0,
    ) -> LineRequest:
        """GPIO_V2_GET_LINE_IOCTL: the lines, as `config` says."""
        data = self._ioctl(
            GPIO_V2_GET_LINE_IOCTL, pack_request(offsets, consumer, config, event_buffer_size)
        )
        return LineRequest(self.agent, request_fd(data), offsets, str(self.node))

    def request_input(
        self,
        offsets: Sequence[int],
        edges: LineFlag = NO_FLAGS,
        flags: LineFlag = NO_FLAGS,
        consumer: str = "roadtest",
    ) -> LineRequest:
        """Inputs, with edge detection for `edges` (EDGE_RISING, EDGE_FALLING, EDGE_BOTH)."""
        return self.request(offsets, LineConfig(LineFlag.INPUT | edges | flags), consumer)

    def request_output(
        self,
        values: Mapping[int, bool | int],
        flags: LineFlag = NO_FLAGS,
        consumer: str = "roadtest",
    ) -> LineRequest:
        """Outputs {offset: initial value}."""
        offsets = list(values)
        config = LineConfig.build(offsets, LineFlag.OUTPUT | flags, values)
        return self.request(offsets, config, consumer)
