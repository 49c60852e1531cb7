"""The IIO userspace ABI (events and buffers) from the host, through the guest agent.

Every open, ioctl, poll and read here happens inside the guest, on file
descriptors the agent holds; the host only sees bytes. Numbers and layouts
come from the 6.12 tree's UAPI headers: include/uapi/linux/iio/types.h,
include/uapi/linux/iio/events.h, include/uapi/linux/iio/buffer.h and the
IIO_EVENT_CODE() layout in include/linux/iio/events.h.

Reads never block the agent. A blocking read(2) of an event or buffer fd with
nothing to read would hang the agent until the host's call timeout, break the
channel and cost a guest; so each read first polls the fd in the guest and
fails with `TimeoutError` when nothing arrived. The deadline is host time: the
guest runs with time-travel, so its clock jumps over idle waits (a guest
poll timeout can expire "at once" while the interrupt thread still waits on
the backend), and a guest-time timeout would say nothing about how long the
driver really had. The polls are therefore short slices in a host-timed loop.
"""

from __future__ import annotations

import enum
import re
import struct
import time
from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar, Final, TypeVar

from roadtest.guest.client import AgentClient
from roadtest.testing.devnode import DeviceNode, GuestFd
from roadtest.testing.guestpath import GuestPath
from roadtest.testing.uapi import IOR, IOWR, POLLIN, wait_readable
from roadtest.text import count

_INT: Final = struct.Struct("=i")  # the ioctls' `int` argument

#: include/uapi/linux/iio/events.h: _IOR('i', 0x90, int) == 0x80046990
IIO_GET_EVENT_FD_IOCTL: Final = IOR("i", 0x90, _INT.size)
#: include/uapi/linux/iio/buffer.h: _IOWR('i', 0x91, int) == 0xC0046991
IIO_BUFFER_GET_FD_IOCTL: Final = IOWR("i", 0x91, _INT.size)


class IIOChanType(enum.IntEnum):
    """enum iio_chan_type, include/uapi/linux/iio/types.h (6.12); the kernel's names."""

    IIO_VOLTAGE = 0
    IIO_CURRENT = 1
    IIO_POWER = 2
    IIO_ACCEL = 3
    IIO_ANGL_VEL = 4
    IIO_MAGN = 5
    IIO_LIGHT = 6
    IIO_INTENSITY = 7
    IIO_PROXIMITY = 8
    IIO_TEMP = 9
    IIO_INCLI = 10
    IIO_ROT = 11
    IIO_ANGL = 12
    IIO_TIMESTAMP = 13
    IIO_CAPACITANCE = 14
    IIO_ALTVOLTAGE = 15
    IIO_CCT = 16
    IIO_PRESSURE = 17
    IIO_HUMIDITYRELATIVE = 18
    IIO_ACTIVITY = 19
    IIO_STEPS = 20
    IIO_ENERGY = 21
    IIO_DISTANCE = 22
    IIO_VELOCITY = 23
    IIO_CONCENTRATION = 24
    IIO_RESISTANCE = 25
    IIO_PH = 26
    IIO_UVINDEX = 27
    IIO_ELECTRICALCONDUCTIVITY = 28
    IIO_COUNT = 29
    IIO_INDEX = 30
    IIO_GRAVITY = 31
    IIO_POSITIONRELATIVE = 32
    IIO_PHASE = 33
    IIO_MASSCONCENTRATION = 34
    IIO_DELTA_ANGL = 35
    IIO_DELTA_VELOCITY = 36
    IIO_COLORTEMP = 37
    IIO_CHROMATICITY = 38


class IIOModifier(enum.IntEnum):
    """enum iio_modifier, include/uapi/linux/iio/types.h (6.12)."""

    IIO_NO_MOD = 0
    IIO_MOD_X = 1
    IIO_MOD_Y = 2
    IIO_MOD_Z = 3
    IIO_MOD_X_AND_Y = 4
    IIO_MOD_X_AND_Z = 5
    IIO_MOD_Y_AND_Z = 6
    IIO_MOD_X_AND_Y_AND_Z = 7
    IIO_MOD_X_OR_Y = 8
    IIO_MOD_X_OR_Z = 9
    IIO_MOD_Y_OR_Z = 10
    IIO_MOD_X_OR_Y_OR_Z = 11
    IIO_MOD_LIGHT_BOTH = 12
    IIO_MOD_LIGHT_IR = 13
    IIO_MOD_ROOT_SUM_SQUARED_X_Y = 14
    IIO_MOD_SUM_SQUARED_X_Y_Z = 15
    IIO_MOD_LIGHT_CLEAR = 16
    IIO_MOD_LIGHT_RED = 17
    IIO_MOD_LIGHT_GREEN = 18
    IIO_MOD_LIGHT_BLUE = 19
    IIO_MOD_QUATERNION = 20
    IIO_MOD_TEMP_AMBIENT = 21
    IIO_MOD_TEMP_OBJECT = 22
    IIO_MOD_NORTH_MAGN = 23
    IIO_MOD_NORTH_TRUE = 24
    IIO_MOD_NORTH_MAGN_TILT_COMP = 25
    IIO_MOD_NORTH_TRUE_TILT_COMP = 26
    IIO_MOD_RUNNING = 27
    IIO_MOD_JOGGING = 28
    IIO_MOD_WALKING = 29
    IIO_MOD_STILL = 30
    IIO_MOD_ROOT_SUM_SQUARED_X_Y_Z = 31
    IIO_MOD_I = 32
    IIO_MOD_Q = 33
    IIO_MOD_CO2 = 34
    IIO_MOD_VOC = 35
    IIO_MOD_LIGHT_UV = 36
    IIO_MOD_LIGHT_DUV = 37
    IIO_MOD_PM1 = 38
    IIO_MOD_PM2P5 = 39
    IIO_MOD_PM4 = 40
    IIO_MOD_PM10 = 41
    IIO_MOD_ETHANOL = 42
    IIO_MOD_H2 = 43
    IIO_MOD_O2 = 44
    IIO_MOD_LINEAR_X = 45
    IIO_MOD_LINEAR_Y = 46
    IIO_MOD_LINEAR_Z = 47
    IIO_MOD_PITCH = 48
    IIO_MOD_YAW = 49
    IIO_MOD_ROLL = 50
    IIO_MOD_LIGHT_UVA = 51
    IIO_MOD_LIGHT_UVB = 52


class IIOEventType(enum.IntEnum):
    """enum iio_event_type, include/uapi/linux/iio/types.h (6.12)."""

    IIO_EV_TYPE_THRESH = 0
    IIO_EV_TYPE_MAG = 1
    IIO_EV_TYPE_ROC = 2
    IIO_EV_TYPE_THRESH_ADAPTIVE = 3
    IIO_EV_TYPE_MAG_ADAPTIVE = 4
    IIO_EV_TYPE_CHANGE = 5
    IIO_EV_TYPE_MAG_REFERENCED = 6
    IIO_EV_TYPE_GESTURE = 7


class IIOEventDirection(enum.IntEnum):
    """enum iio_event_direction, include/uapi/linux/iio/types.h (6.12)."""

    IIO_EV_DIR_EITHER = 0
    IIO_EV_DIR_RISING = 1
    IIO_EV_DIR_FALLING = 2
    IIO_EV_DIR_NONE = 3
    IIO_EV_DIR_SINGLETAP = 4
    IIO_EV_DIR_DOUBLETAP = 5


_E = TypeVar("_E", bound=enum.IntEnum)


def _enum_or_int(cls: type[_E], value: int) -> _E | int:
    """A newer kernel may send a value this table lacks: keep the number rather than fail."""
    try:
        return cls(value)
    except ValueError:
        return value


def _s16(value: int) -> int:
    value &= 0xFFFF
    return value - 0x10000 if value & 0x8000 else value


def iio_event_code(
    chan_type: int,
    chan: int,
    event_type: int,
    direction: int,
    modifier: int = 0,
    diff: bool = False,
    chan2: int = 0,
) -> int:
    """IIO_EVENT_CODE() of include/linux/iio/events.h: the 64-bit id the kernel sends.

    For a differential channel `chan` is the first channel (chan1) and `chan2`
    the second; IIO_UNMOD_EVENT_CODE(type, n, ev, dir) is
    `iio_event_code(type, n, ev, dir)`.
    """
    return (
        (event_type & 0xFF) << 56
        | int(diff) << 55
        | (direction & 0x7F) << 48
        | (modifier & 0xFF) << 40
        | (chan_type & 0xFF) << 32
        | (chan2 & 0xFFFF) << 16
        | (chan & 0xFFFF)
    )


_EVENT_DATA: Final = struct.Struct("=Qq")  # struct iio_event_data {__u64 id; __s64 timestamp;}


@dataclass(frozen=True)
class IIOEvent:
    """One struct iio_event_data, with the id decoded like IIO_EVENT_CODE_EXTRACT_*()."""

    id: int
    timestamp: int

    SIZE: ClassVar[int] = _EVENT_DATA.size

    @classmethod
    def from_bytes(cls, data: bytes) -> IIOEvent:
        if len(data) != _EVENT_DATA.size:
            raise ValueError(
                f"an IIO event is {_EVENT_DATA.size} bytes, got {len(data)}: {data.hex()}"
            )
        event_id, timestamp = _EVENT_DATA.unpack(data)
        return cls(event_id, timestamp)

    @property
    def event_type(self) -> IIOEventType | int:
        """IIO_EVENT_CODE_EXTRACT_TYPE: bits 56-63."""
        return _enum_or_int(IIOEventType, (self.id >> 56) & 0xFF)

    @property
    def differential(self) -> bool:
        """IIO_EVENT_CODE_EXTRACT_DIFF: bit 55."""
        return bool((self.id >> 55) & 0x1)

    @property
    def direction(self) -> IIOEventDirection | int:
        """IIO_EVENT_CODE_EXTRACT_DIR: bits 48-54."""
        return _enum_or_int(IIOEventDirection, (self.id >> 48) & 0x7F)

    @property
    def modifier(self) -> IIOModifier | int:
        """IIO_EVENT_CODE_EXTRACT_MODIFIER: bits 40-47."""
        return _enum_or_int(IIOModifier, (self.id >> 40) & 0xFF)

    @property
    def chan_type(self) -> IIOChanType | int:
        """IIO_EVENT_CODE_EXTRACT_CHAN_TYPE: bits 32-39."""
        return _enum_or_int(IIOChanType, (self.id >> 32) & 0xFF)

    @property
    def channel(self) -> int:
        """IIO_EVENT_CODE_EXTRACT_CHAN: the low 16 bits, signed (chan1 of a differential pair)."""
        return _s16(self.id)

    @property
    def channel2(self) -> int:
        """IIO_EVENT_CODE_EXTRACT_CHAN2: bits 16-31, signed."""
        return _s16(self.id >> 16)

    def __str__(self) -> str:
        def name(v: int) -> str:
            return v.name if isinstance(v, enum.IntEnum) else str(v)

        diff = f"-{self.channel2}" if self.differential else ""
        return (
            f"IIOEvent({name(self.chan_type)}{self.channel}{diff} {name(self.modifier)} "
            f"{name(self.event_type)} {name(self.direction)} at {self.timestamp} ns)"
        )


# Device nodes and sysfs


def devnode(iio_dir: GuestPath) -> GuestPath:
    """The character device of a sysfs `iio:deviceN` directory: /dev/iio:deviceN."""
    if not iio_dir.name.startswith("iio:device"):
        raise ValueError(f"{iio_dir} is not an iio:deviceN directory")
    return GuestPath(iio_dir.agent, f"/dev/{iio_dir.name}")


def device_index(iio_dir: GuestPath) -> int:
    """N of `iio:deviceN` (the id a driver's "%s-dev%d" trigger name uses)."""
    return int(iio_dir.name.removeprefix("iio:device"))


def triggers(agent: AgentClient) -> dict[str, GuestPath]:
    """Every registered IIO trigger, by its name, with its /sys/bus/iio/devices/triggerN dir.

    Trigger numbers depend on what registered before (other devices, earlier
    binds), so tests find a trigger by name rather than assume trigger0.
    """
    root = GuestPath(agent, "/sys/bus/iio/devices")
    found: dict[str, GuestPath] = {}
    for path in root.glob("trigger*"):
        found[(path / "name").read_text().rstrip("\n")] = path
    return found


# Waiting in the guest, timed on the host

DEFAULT_TIMEOUT: Final = 5.0


class _IIOFd:
    """The device node held open and an anonymous fd got from it by ioctl (closed in reverse).

    /dev/iio:deviceN can be open only once at a time (the kernel answers
    EBUSY to a second open), so an event monitor and a buffer reader of the
    same device cannot be open together.
    """

    def __init__(self, node: GuestPath) -> None:
        self.node = node
        self.agent = node.agent
        self._device = DeviceNode(node)
        self._anonymous = GuestFd(self.agent, f"{type(self).__name__} of {node}")

    def _open(self, request: int, arg: int) -> int:
        self._device.__enter__()
        try:
            ret, buf = self.agent.ioctl(self._device.fd, request, _INT.pack(arg))
            if ret != 0 or buf is None:
                raise OSError(f"ioctl {request:#x} on {self.node} returned {ret}, buffer {buf!r}")
            (fd,) = _INT.unpack(buf)
        except BaseException:
            self.close()
            raise
        self._anonymous = GuestFd(self.agent, self._anonymous.what, int(fd))
        return self._anonymous.fd

    @property
    def fd(self) -> int:
        """The anonymous fd (RuntimeError when not open)."""
        return self._anonymous.fd

    def _read(self, size: int, timeout: float, what: str) -> bytes:
        fd = self.fd
        wait_readable(self.agent, fd, timeout, what)
        data = self.agent.read(fd, size)
        if len(data) != size:
            raise OSError(
                f"read of {what} from {self.node}: {count(len(data), 'byte')}, wanted {size}"
            )
        return data

    def close(self) -> None:
        try:
            self._anonymous.close()
        finally:
            self._device.close()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class IIOEventMonitor(_IIOFd):
    """The device's event fd (IIO_GET_EVENT_FD_IOCTL), for reading pushed events.

        with IIOEventMonitor(devnode(iio)) as events:
            ...  # make the hardware raise its interrupt
            event = events.read()

    Events queue in the kernel from the moment the monitor is open; one that
    fired before it was opened is lost, as for any userspace reader.
    """

    def __enter__(self) -> IIOEventMonitor:
        self._open(IIO_GET_EVENT_FD_IOCTL, 0)
        return self

    def read(self, timeout: float = DEFAULT_TIMEOUT) -> IIOEvent:
        """The next event; `TimeoutError` when none arrives within `timeout` host seconds."""
        return IIOEvent.from_bytes(self._read(IIOEvent.SIZE, timeout, "IIO event"))

    def pending(self) -> bool:
        """Whether an event is queued right now (a zero-timeout poll, no waiting)."""
        return any(rev & POLLIN for _, rev in self.agent.poll([(self.fd, POLLIN)], 0))


class IIOBuffer(_IIOFd):
    """One buffer's fd (IIO_BUFFER_GET_FD_IOCTL on /dev/iio:deviceN), for reading scans.

    Enable the buffer (bufferN/enable) after entering: reads return whole
    scans only (the kernel rounds a read down to bytes_per_datum), so the
    struct format must describe one scan as the enabled channels lay it out.
    """

    def __init__(self, node: GuestPath, index: int = 0) -> None:
        super().__init__(node)
        self.index = index

    def __enter__(self) -> IIOBuffer:
        self._open(IIO_BUFFER_GET_FD_IOCTL, self.index)
        return self

    def read(self, fmt: str, timeout: float = DEFAULT_TIMEOUT) -> tuple[Any, ...]:
        """One scan unpacked with `fmt` (e.g. "=H" for a lone u16 channel, no timestamp)."""
        layout = struct.Struct(fmt)
        data = self._read(layout.size, timeout, f"buffer{self.index} scan")
        return layout.unpack(data)

    def read_scan(
        self, layout: ScanLayout, timeout: float = DEFAULT_TIMEOUT
    ) -> dict[str, int | tuple[int, ...]]:
        """One scan decoded by `layout` (from `enable_scan_elements`): {element: value}."""
        return layout.decode(self._read(layout.size, timeout, f"buffer{self.index} scan"))


# Scan elements: what a buffer holds and how (Documentation/ABI/testing/sysfs-bus-iio,
# bufferY/*_type, *_index, *_en; Documentation/iio/iio_devbuf.rst)


@dataclass(frozen=True)
class ScanType:
    """A scan element's storage, as its `_type` attribute gives it.

    The ABI's form is `[be|le]:[s|u]bits/storagebits[Xrepeat][>>shift]`: the byte
    order, the sign, the bits of data in `storagebits` of storage (which is also the
    element's alignment in a scan), how many such values (`repeat`), and the shift
    to apply before masking out the unused bits.
    """

    endianness: str  # "le" or "be"
    signed: bool
    realbits: int
    storagebits: int
    shift: int = 0
    repeat: int = 1

    _FORM: ClassVar[re.Pattern[str]] = re.compile(
        r"(?P<end>le|be):(?P<sign>[su])(?P<bits>\d+)/(?P<storage>\d+)"
        r"(?:X(?P<repeat>\d+))?(?:>>(?P<shift>\d+))?"
    )

    def __post_init__(self) -> None:
        if self.endianness not in ("le", "be"):
            raise ValueError(f"scan type endianness {self.endianness!r}: le or be")
        if self.storagebits % 8 or self.storagebits <= 0:
            raise ValueError(f"storagebits {self.storagebits} is not a whole number of bytes")
        if not 0 < self.realbits <= self.storagebits - self.shift:
            raise ValueError(
                f"{self.realbits} bits shifted by {self.shift} do not fit "
                f"{self.storagebits} bits of storage"
            )
        if self.repeat < 1:
            raise ValueError(f"repeat {self.repeat} < 1")

    @classmethod
    def parse(cls, text: str) -> ScanType:
        """`le:s12/16>>4`, as `bufferY/in_voltage0_type` reads (trailing newline allowed)."""
        found = cls._FORM.fullmatch(text.strip())
        if found is None:
            raise ValueError(f"not an IIO scan element type: {text!r}")
        return cls(
            endianness=found["end"],
            signed=found["sign"] == "s",
            realbits=int(found["bits"]),
            storagebits=int(found["storage"]),
            shift=int(found["shift"] or 0),
            repeat=int(found["repeat"] or 1),
        )

    def __str__(self) -> str:
        repeat = f"X{self.repeat}" if self.repeat > 1 else ""
        sign = "s" if self.signed else "u"
        return f"{self.endianness}:{sign}{self.realbits}/{self.storagebits}{repeat}>>{self.shift}"

    @property
    def size(self) -> int:
        """The element's size in a scan: storagebits/8 per value, `repeat` values."""
        return self.storagebits // 8 * self.repeat

    @property
    def alignment(self) -> int:
        """Where it may start in a scan: a multiple of its size ("naturally aligned")."""
        return self.size

    def _value(self, word: bytes) -> int:
        raw = int.from_bytes(word, "little" if self.endianness == "le" else "big")
        value = (raw >> self.shift) & ((1 << self.realbits) - 1)
        if self.signed and value >> (self.realbits - 1):
            value -= 1 << self.realbits
        return value

    def decode(self, data: bytes) -> int | tuple[int, ...]:
        """The clean value of an element's bytes: shifted, masked to `realbits`, sign-extended
        when signed; a tuple of `repeat` values when repeated."""
        if len(data) != self.size:
            raise ValueError(f"{self} is {self.size} bytes, got {len(data)}: {data.hex()}")
        size = self.storagebits // 8
        values = tuple(self._value(data[i : i + size]) for i in range(0, len(data), size))
        return values[0] if self.repeat == 1 else values

    def encode(self, value: int) -> bytes:
        """One value stored as a driver would push it (unused bits 0): for tests of decoding."""
        low = -(1 << (self.realbits - 1)) if self.signed else 0
        high = (1 << (self.realbits - (1 if self.signed else 0))) - 1
        if not low <= value <= high:
            raise ValueError(f"{value} does not fit {self}")
        raw = (value & ((1 << self.realbits) - 1)) << self.shift
        return raw.to_bytes(self.storagebits // 8, "little" if self.endianness == "le" else "big")


@dataclass(frozen=True)
class ScanElement:
    """One `bufferY/<name>_{index,type,en}` triple: `name` is e.g. "in_voltage0-voltage1"."""

    name: str
    index: int
    type: ScanType
    enabled: bool


@dataclass(frozen=True)
class ScanLayout:
    """Where each enabled element sits in one scan, and the scan's size.

    Elements come in `index` order, each at the next offset that is a multiple of its
    own size (Documentation/iio/iio_devbuf.rst: "naturally aligned"); the scan's size is
    rounded up to a multiple of its largest element, so that consecutive scans keep
    that alignment (what the kernel reports as bytes per datum).
    """

    offsets: tuple[tuple[ScanElement, int], ...]
    size: int

    @classmethod
    def of(cls, elements: Iterable[ScanElement]) -> ScanLayout:
        """The layout of the enabled ones among `elements`."""
        offsets: list[tuple[ScanElement, int]] = []
        position = largest = 0
        for element in sorted((e for e in elements if e.enabled), key=lambda e: e.index):
            align = element.type.alignment
            position = -(-position // align) * align
            offsets.append((element, position))
            position += element.type.size
            largest = max(largest, align)
        size = -(-position // largest) * largest if largest else 0
        return cls(tuple(offsets), size)

    def names(self) -> list[str]:
        return [element.name for element, _ in self.offsets]

    def decode(self, data: bytes) -> dict[str, int | tuple[int, ...]]:
        """{element name: clean value} of one scan's bytes."""
        if len(data) != self.size:
            raise ValueError(f"a scan of {self.names()} is {self.size} bytes, got {len(data)}")
        return {
            element.name: element.type.decode(data[offset : offset + element.type.size])
            for element, offset in self.offsets
        }


def buffer_dir(iio_dir: GuestPath, buffer: int = 0) -> GuestPath:
    """`iio:deviceN/bufferY`, where 5.11+ kernels keep the scan elements of buffer Y."""
    return iio_dir / f"buffer{buffer}"


def scan_elements(iio_dir: GuestPath, buffer: int = 0) -> dict[str, ScanElement]:
    """Every scan element of a buffer, by name ("in_voltage0", "in_timestamp")."""
    directory = buffer_dir(iio_dir, buffer)
    found: dict[str, ScanElement] = {}
    for index_file in directory.glob("*_index"):
        name = index_file.name.removesuffix("_index")
        found[name] = ScanElement(
            name=name,
            index=int(index_file.read_text()),
            type=ScanType.parse((directory / f"{name}_type").read_text()),
            enabled=(directory / f"{name}_en").read_text().strip() == "1",
        )
    return found


def enable_scan_elements(iio_dir: GuestPath, names: Iterable[str], buffer: int = 0) -> ScanLayout:
    """Enable exactly the scan elements `names` (disable the others) and return the layout
    the buffer's scans then have, read back from sysfs.

    An element the kernel refuses (a driver's validate_scan_mask, e.g. one channel at a
    time) fails with the guest's `OSError` (EINVAL)."""
    wanted = list(names)
    elements = scan_elements(iio_dir, buffer)
    unknown = [name for name in wanted if name not in elements]
    if unknown:
        raise KeyError(
            f"no scan element {unknown} in {buffer_dir(iio_dir, buffer)}: {sorted(elements)}"
        )
    directory = buffer_dir(iio_dir, buffer)
    for name, element in elements.items():  # disable first: a one-hot mask refuses a second
        if element.enabled and name not in wanted:
            (directory / f"{name}_en").write_text("0")
    for name in wanted:
        if not elements[name].enabled:
            (directory / f"{name}_en").write_text("1")
    return ScanLayout.of(scan_elements(iio_dir, buffer).values())


# Triggers of iio-trig-sysfs (Documentation/ABI/testing/sysfs-bus-iio-trigger-sysfs)

SYSFS_TRIGGER_DIR: Final = "/sys/bus/iio/devices/iio_sysfs_trigger"


class SysfsTrigger:
    """A trigger that the test fires by hand (CONFIG_IIO_SYSFS_TRIGGER):

        with SysfsTrigger(guest.agent) as trigger:
            write_str(iio / "trigger/current_trigger", trigger.name)
            ...  # enable the buffer
            trigger.fire()          # one scan, read with IIOBuffer

    Entering writes `trigger_id` to iio_sysfs_trigger/add_trigger and finds the trigger
    that appeared (its name, as triggerX/name reads); `fire()` writes triggerX/trigger_now;
    leaving writes the id to remove_trigger. Detach it from devices before leaving.
    """

    def __init__(self, agent: AgentClient, trigger_id: int = 0) -> None:
        self.agent = agent
        self.trigger_id = trigger_id
        self.path: GuestPath | None = None
        self._name: str | None = None

    @property
    def name(self) -> str:
        if self._name is None:
            raise RuntimeError("SysfsTrigger is not entered")
        return self._name

    def __enter__(self) -> SysfsTrigger:
        control = GuestPath(self.agent, SYSFS_TRIGGER_DIR)
        before = triggers(self.agent)
        (control / "add_trigger").write_text(str(self.trigger_id))
        try:
            new = {name: path for name, path in triggers(self.agent).items() if name not in before}
            if len(new) != 1:
                raise RuntimeError(
                    f"add_trigger {self.trigger_id}: {len(new)} new triggers ({sorted(new)})"
                )
            ((self._name, self.path),) = new.items()
        except BaseException:
            (control / "remove_trigger").write_text(str(self.trigger_id))
            raise
        return self

    def fire(self) -> None:
        """One trigger event: each device it drives captures a scan."""
        if self.path is None:
            raise RuntimeError("SysfsTrigger is not entered")
        (self.path / "trigger_now").write_text("1")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.path is not None:
            self.path = None
            self._name = None
            control = GuestPath(self.agent, SYSFS_TRIGGER_DIR)
            (control / "remove_trigger").write_text(str(self.trigger_id))


# Event configuration: events/<prefix>_<type>_<dir>_<info> (Documentation/ABI/testing/
# sysfs-bus-iio, "Event attributes"; the names industrialio-event.c builds)

#: iio_ev_type_text[] of drivers/iio/industrialio-event.c (6.12).
EVENT_TYPE_TEXT: Final[dict[IIOEventType, str]] = {
    IIOEventType.IIO_EV_TYPE_THRESH: "thresh",
    IIOEventType.IIO_EV_TYPE_MAG: "mag",
    IIOEventType.IIO_EV_TYPE_ROC: "roc",
    IIOEventType.IIO_EV_TYPE_THRESH_ADAPTIVE: "thresh_adaptive",
    IIOEventType.IIO_EV_TYPE_MAG_ADAPTIVE: "mag_adaptive",
    IIOEventType.IIO_EV_TYPE_CHANGE: "change",
    IIOEventType.IIO_EV_TYPE_MAG_REFERENCED: "mag_referenced",
    IIOEventType.IIO_EV_TYPE_GESTURE: "gesture",
}
#: iio_ev_dir_text[]; IIO_EV_DIR_NONE has no text: its attributes are `<prefix>_<type>_<info>`.
EVENT_DIR_TEXT: Final[dict[IIOEventDirection, str]] = {
    IIOEventDirection.IIO_EV_DIR_EITHER: "either",
    IIOEventDirection.IIO_EV_DIR_RISING: "rising",
    IIOEventDirection.IIO_EV_DIR_FALLING: "falling",
    IIOEventDirection.IIO_EV_DIR_SINGLETAP: "singletap",
    IIOEventDirection.IIO_EV_DIR_DOUBLETAP: "doubletap",
}
#: iio_ev_info_text[], in enum iio_event_info order.
EVENT_INFO_TEXT: Final = (
    "en",
    "value",
    "hysteresis",
    "period",
    "high_pass_filter_3db",
    "low_pass_filter_3db",
    "timeout",
    "reset_timeout",
    "tap2_min_delay",
    "runningperiod",
    "runningcount",
)


@dataclass(frozen=True)
class EventAttribute:
    """One attribute of a device's events/ directory, e.g. `in_proximity_thresh_either_en`.

    `prefix` is the channel's part, as the core names it (`in_voltage0`,
    `in_intensity_both`, `in_voltage0-voltage1`, `in_accel_x`, or a shared form such as
    `in_accel`); `info` one of EVENT_INFO_TEXT."""

    prefix: str
    event_type: IIOEventType
    direction: IIOEventDirection
    info: str

    def __post_init__(self) -> None:
        if self.info not in EVENT_INFO_TEXT:
            raise ValueError(f"no IIO event info {self.info!r}: one of {EVENT_INFO_TEXT}")
        if not self.prefix.startswith(("in_", "out_")):
            raise ValueError(f"an event attribute's channel starts in_ or out_: {self.prefix!r}")

    @property
    def name(self) -> str:
        parts = [self.prefix, EVENT_TYPE_TEXT[self.event_type]]
        if self.direction != IIOEventDirection.IIO_EV_DIR_NONE:
            parts.append(EVENT_DIR_TEXT[self.direction])
        parts.append(self.info)
        return "_".join(parts)

    def __str__(self) -> str:
        return self.name

    @classmethod
    def parse(cls, name: str) -> EventAttribute:
        """Split a name back into its parts, from the right (a channel's own name may
        hold underscores): the info, the direction if any, the longest type that fits."""
        for info in sorted(EVENT_INFO_TEXT, key=len, reverse=True):
            if name.endswith("_" + info):
                rest = name[: -len(info) - 1]
                break
        else:
            raise ValueError(f"not an IIO event attribute (no info suffix): {name!r}")
        direction = IIOEventDirection.IIO_EV_DIR_NONE
        for candidate, text in EVENT_DIR_TEXT.items():
            if rest.endswith("_" + text):
                direction, rest = candidate, rest[: -len(text) - 1]
                break
        for event_type, text in sorted(EVENT_TYPE_TEXT.items(), key=lambda i: -len(i[1])):
            if rest.endswith("_" + text):
                return cls(rest[: -len(text) - 1], event_type, direction, info)
        raise ValueError(f"not an IIO event attribute (no event type): {name!r}")


_THRESH: Final = IIOEventType.IIO_EV_TYPE_THRESH
_EITHER: Final = IIOEventDirection.IIO_EV_DIR_EITHER


class IIOEvents:
    """A device's event configuration, by channel prefix, type and direction:

        events = IIOEvents(iio)
        events.set_value("in_proximity", IIOEventDirection.IIO_EV_DIR_RISING, 800)
        events.set_period("in_proximity", "0.2")
        events.enable("in_proximity")             # thresh, either: the defaults
        with IIOEventMonitor(devnode(iio)) as monitor:
            ...  # make the hardware cross the threshold
            event = events.wait_for(monitor, IIOChanType.IIO_PROXIMITY)

    Each method writes or reads one attribute of `iio:deviceN/events/`; an attribute
    the driver does not offer fails with `KeyError` naming the ones it does, before
    any write reaches the guest.
    """

    def __init__(self, iio_dir: GuestPath) -> None:
        self.iio_dir = iio_dir
        self.directory = iio_dir / "events"
        self._names: set[str] | None = None

    def attributes(self) -> list[EventAttribute]:
        """Every event attribute the device offers (read once, then remembered)."""
        return [EventAttribute.parse(name) for name in sorted(self._available())]

    def _available(self) -> set[str]:
        if self._names is None:
            self._names = set(self.iio_dir.agent.listdir(str(self.directory)))
        return self._names

    def path(
        self,
        prefix: str,
        info: str,
        direction: IIOEventDirection = _EITHER,
        event_type: IIOEventType = _THRESH,
    ) -> GuestPath:
        attribute = EventAttribute(prefix, event_type, direction, info).name
        available = self._available()
        if attribute not in available:
            raise KeyError(f"no {attribute} in {self.directory}: {sorted(available)}")
        return self.directory / attribute

    def enable(
        self,
        prefix: str,
        direction: IIOEventDirection = _EITHER,
        event_type: IIOEventType = _THRESH,
        on: bool = True,
    ) -> None:
        self.path(prefix, "en", direction, event_type).write_text("1" if on else "0")

    def disable(
        self,
        prefix: str,
        direction: IIOEventDirection = _EITHER,
        event_type: IIOEventType = _THRESH,
    ) -> None:
        self.enable(prefix, direction, event_type, on=False)

    def enabled(
        self,
        prefix: str,
        direction: IIOEventDirection = _EITHER,
        event_type: IIOEventType = _THRESH,
    ) -> bool:
        text = self.path(prefix, "en", direction, event_type).read_text().strip()
        if text not in ("0", "1"):
            raise ValueError(f"{prefix} {EVENT_TYPE_TEXT[event_type]} en reads {text!r}")
        return text == "1"

    def set_value(
        self,
        prefix: str,
        direction: IIOEventDirection,
        value: int | float | str,
        event_type: IIOEventType = _THRESH,
        info: str = "value",
    ) -> None:
        """Write `value` (or `info`: hysteresis, timeout...) as the kernel parses it."""
        self.path(prefix, info, direction, event_type).write_text(_iio_text(value))

    def value(
        self,
        prefix: str,
        direction: IIOEventDirection,
        event_type: IIOEventType = _THRESH,
        info: str = "value",
    ) -> str:
        return self.path(prefix, info, direction, event_type).read_text().strip()

    def set_period(
        self,
        prefix: str,
        seconds: int | float | str,
        direction: IIOEventDirection = _EITHER,
        event_type: IIOEventType = _THRESH,
    ) -> None:
        """The event's period: how long the condition must hold (seconds, as the ABI says)."""
        self.path(prefix, "period", direction, event_type).write_text(_iio_text(seconds))

    def period(
        self,
        prefix: str,
        direction: IIOEventDirection = _EITHER,
        event_type: IIOEventType = _THRESH,
    ) -> float:
        return float(self.path(prefix, "period", direction, event_type).read_text())

    @staticmethod
    def wait_for(
        monitor: IIOEventMonitor,
        chan_type: IIOChanType,
        direction: IIOEventDirection | None = None,
        event_type: IIOEventType = _THRESH,
        channel: int | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> IIOEvent:
        """The next event of `chan_type` and `event_type` (and `direction`, `channel` when
        given) from `monitor`; others read on the way are skipped. `TimeoutError` names
        the skipped ones when none matches within `timeout` host seconds."""
        skipped: list[IIOEvent] = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                event = monitor.read(max(left, 0.0))
            except TimeoutError:
                raise TimeoutError(
                    f"no {chan_type.name} {event_type.name} event in {timeout} s; "
                    f"skipped: {[str(e) for e in skipped]}"
                ) from None
            if (
                event.chan_type == chan_type
                and event.event_type == event_type
                and (direction is None or event.direction == direction)
                and (channel is None or event.channel == channel)
            ):
                return event
            skipped.append(event)


def _iio_text(value: int | float | str) -> str:
    """A number as IIO's fixed-point parser takes it (iio_str_to_fixpoint): no exponent."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        raise TypeError("an IIO value is a number, not a bool")
    if isinstance(value, int):
        return str(value)
    text = f"{value:.9f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


# A buffered capture from start to stop (Documentation/iio/iio_devbuf.rst, "Buffer
# setup"; Documentation/ABI/testing/sysfs-bus-iio: trigger/current_trigger,
# bufferY/length, bufferY/enable)


class BufferedCapture:
    """A triggered buffer's capture as userspace runs one, in a `with` block:

        with BufferedCapture(iio, ["in_accel_x", "in_timestamp"], trigger="bmi160-dev0") as cap:
            ...                        # make the hardware (or a SysfsTrigger) fire
            (scan,) = cap.read()       # {element: value}, one dict per scan

    Entering enables exactly the scan elements `elements` (the others off), selects the
    trigger by name in trigger/current_trigger when `trigger` is given (a `KeyError`
    naming the registered ones when no trigger has that name), opens the buffer's fd
    (IIO_BUFFER_GET_FD_IOCTL), writes bufferY/length and then 1 to bufferY/enable. Leaving
    writes 0 to enable, closes the fd and puts back the trigger that was current before
    (an empty write detaches). A step that fails on the way in undoes the ones before it.
    `layout` is the scans' layout as the kernel reports it; `read(n)` reads `n` scans,
    each within `timeout` host seconds (`TimeoutError` otherwise).
    """

    def __init__(
        self,
        iio_dir: GuestPath,
        elements: Iterable[str],
        trigger: str | None = None,
        *,
        buffer: int = 0,
        length: int = 16,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if length < 1:
            raise ValueError(f"buffer length {length} < 1")
        self.iio_dir = iio_dir
        self.elements = list(elements)
        self.trigger = trigger
        self.buffer = buffer
        self.length = length
        self.timeout = timeout
        self._layout: ScanLayout | None = None
        self._fd: IIOBuffer | None = None
        self._previous_trigger: str | None = None
        self._enabled = False

    @property
    def layout(self) -> ScanLayout:
        if self._layout is None:
            raise RuntimeError("BufferedCapture is not entered")
        return self._layout

    @property
    def _current_trigger(self) -> GuestPath:
        return self.iio_dir / "trigger" / "current_trigger"

    def __enter__(self) -> BufferedCapture:
        directory = buffer_dir(self.iio_dir, self.buffer)
        try:
            self._layout = enable_scan_elements(self.iio_dir, self.elements, self.buffer)
            if self.trigger is not None:
                known = triggers(self.iio_dir.agent)
                if self.trigger not in known:
                    raise KeyError(f"no IIO trigger {self.trigger!r}: {sorted(known)}")
                previous = self._current_trigger.read_text().rstrip("\n")
                self._current_trigger.write_text(self.trigger)
                self._previous_trigger = previous
            self._fd = IIOBuffer(devnode(self.iio_dir), self.buffer).__enter__()
            (directory / "length").write_text(str(self.length))
            (directory / "enable").write_text("1")
            self._enabled = True
        except BaseException:
            self.close()
            raise
        return self

    def read(self, n: int = 1) -> list[dict[str, int | tuple[int, ...]]]:
        """The next `n` scans, decoded by `layout`."""
        if self._fd is None or not self._enabled:
            raise RuntimeError("BufferedCapture is not running")
        return [self._fd.read_scan(self.layout, self.timeout) for _ in range(n)]

    def close(self) -> None:
        """Stop: disable the buffer, close its fd, put the previous trigger back."""
        try:
            if self._enabled:
                self._enabled = False
                (buffer_dir(self.iio_dir, self.buffer) / "enable").write_text("0")
        finally:
            try:
                if self._fd is not None:
                    fd, self._fd = self._fd, None
                    fd.close()
            finally:
                if self._previous_trigger is not None:
                    previous, self._previous_trigger = self._previous_trigger, None
                    self._current_trigger.write_text(previous)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
