"""The RTC character device's userspace ABI (include/uapi/linux/rtc.h), used inside the guest.

Every open, ioctl, poll and read runs in the guest through the agent, the way
hwclock or rtcwake would make it; this module only packs and unpacks the
structures (x86_64 layout: 4-byte int, 8-byte long, as the UML guest has).

Besides the character device: the RTC class's parameters (RTC_PARAM_GET and
RTC_PARAM_SET: the feature bits and the correction) and its sysfs `offset` attribute
(Documentation/ABI/testing/sysfs-class-rtc: parts per billion).
"""

from __future__ import annotations

import datetime
import struct
from dataclasses import dataclass
from typing import Final

from roadtest.testing.devnode import DeviceNode
from roadtest.testing.guestpath import GuestPath
from roadtest.testing.uapi import IO, IOR, IOW, wait_readable

# struct rtc_time: nine ints; struct rtc_wkalrm: two unsigned chars, then the
# rtc_time at its 4-byte alignment.
RTC_TIME: Final = struct.Struct("<9i")
RTC_WKALRM: Final = struct.Struct("<BBxx9i")
# struct rtc_param: __u64 param, a union of __u64 uvalue / __s64 svalue / __u64 ptr,
# __u32 index, __u32 __pad.
RTC_PARAM: Final = struct.Struct("<QQII")
_UINT: Final = struct.Struct("<I")
_ULONG: Final = struct.Struct("<Q")

RTC_AIE_ON: Final = IO("p", 0x01)
RTC_AIE_OFF: Final = IO("p", 0x02)
RTC_UIE_ON: Final = IO("p", 0x03)
RTC_UIE_OFF: Final = IO("p", 0x04)
RTC_PIE_ON: Final = IO("p", 0x05)
RTC_PIE_OFF: Final = IO("p", 0x06)
RTC_ALM_SET: Final = IOW("p", 0x07, RTC_TIME.size)
RTC_ALM_READ: Final = IOR("p", 0x08, RTC_TIME.size)
RTC_RD_TIME: Final = IOR("p", 0x09, RTC_TIME.size)
RTC_SET_TIME: Final = IOW("p", 0x0A, RTC_TIME.size)
RTC_WKALM_SET: Final = IOW("p", 0x0F, RTC_WKALRM.size)
RTC_WKALM_RD: Final = IOR("p", 0x10, RTC_WKALRM.size)
RTC_VL_READ: Final = IOR("p", 0x13, _UINT.size)
RTC_VL_CLR: Final = IO("p", 0x14)
# _IOW for both, though RTC_PARAM_GET's argument comes back filled in (drivers/rtc/dev.c).
RTC_PARAM_GET: Final = IOW("p", 0x13, RTC_PARAM.size)
RTC_PARAM_SET: Final = IOW("p", 0x14, RTC_PARAM.size)

# RTC_PARAM_GET/SET's `param`.
RTC_PARAM_FEATURES: Final = 0
RTC_PARAM_CORRECTION: Final = 1
RTC_PARAM_BACKUP_SWITCH_MODE: Final = 2

# Bits of RTC_PARAM_FEATURES's value (the RTC core's rtc->features[0]).
RTC_FEATURE_ALARM: Final = 0
RTC_FEATURE_ALARM_RES_MINUTE: Final = 1
RTC_FEATURE_NEED_WEEK_DAY: Final = 2
RTC_FEATURE_ALARM_RES_2S: Final = 3
RTC_FEATURE_UPDATE_INTERRUPT: Final = 4
RTC_FEATURE_CORRECTION: Final = 5
RTC_FEATURE_BACKUP_SWITCH_MODE: Final = 6
RTC_FEATURE_ALARM_WAKEUP_ONLY: Final = 7

RTC_VL_DATA_INVALID: Final = 1 << 0  # voltage too low, RTC data is invalid
RTC_VL_BACKUP_LOW: Final = 1 << 1
RTC_VL_BACKUP_EMPTY: Final = 1 << 2
RTC_VL_ACCURACY_LOW: Final = 1 << 3
RTC_VL_BACKUP_SWITCH: Final = 1 << 4

# Interrupt flags, the low byte of what read() returns (the count is above it).
RTC_IRQF: Final = 0x80
RTC_PF: Final = 0x40
RTC_AF: Final = 0x20
RTC_UF: Final = 0x10


@dataclass(frozen=True)
class RtcTime:
    """struct rtc_time, field for field (tm_mon 0-11, tm_year since 1900, tm_wday 0 = Sunday)."""

    tm_sec: int = 0
    tm_min: int = 0
    tm_hour: int = 0
    tm_mday: int = 0
    tm_mon: int = 0
    tm_year: int = 0
    tm_wday: int = 0
    tm_yday: int = 0
    tm_isdst: int = 0

    @classmethod
    def from_datetime(cls, when: datetime.datetime) -> RtcTime:
        """The fields userspace fills in for `when` (whole seconds; wday and yday computed)."""
        return cls(
            tm_sec=when.second,
            tm_min=when.minute,
            tm_hour=when.hour,
            tm_mday=when.day,
            tm_mon=when.month - 1,
            tm_year=when.year - 1900,
            tm_wday=when.isoweekday() % 7,
            tm_yday=when.timetuple().tm_yday - 1,
            tm_isdst=0,
        )

    def to_datetime(self) -> datetime.datetime:
        """The date and time (ValueError if the fields are not one); wday/yday/isdst are ignored."""
        return datetime.datetime(
            self.tm_year + 1900,
            self.tm_mon + 1,
            self.tm_mday,
            self.tm_hour,
            self.tm_min,
            self.tm_sec,
        )

    def pack(self) -> bytes:
        return RTC_TIME.pack(*self._fields())

    @classmethod
    def unpack(cls, data: bytes) -> RtcTime:
        return cls(*RTC_TIME.unpack(data))

    def _fields(self) -> tuple[int, ...]:
        return (
            self.tm_sec,
            self.tm_min,
            self.tm_hour,
            self.tm_mday,
            self.tm_mon,
            self.tm_year,
            self.tm_wday,
            self.tm_yday,
            self.tm_isdst,
        )


@dataclass(frozen=True)
class WakeAlarm:
    """struct rtc_wkalrm: whether the alarm is enabled and pending, and its time."""

    enabled: bool
    pending: bool
    time: RtcTime

    def pack(self) -> bytes:
        return RTC_WKALRM.pack(int(self.enabled), int(self.pending), *self.time._fields())

    @classmethod
    def unpack(cls, data: bytes) -> WakeAlarm:
        enabled, pending, *fields = RTC_WKALRM.unpack(data)
        return cls(bool(enabled), bool(pending), RtcTime(*fields))


@dataclass(frozen=True)
class RtcParam:
    """struct rtc_param: which parameter, its value (the union read as a signed or
    unsigned 64-bit integer: `value` is stored unsigned), and the index."""

    param: int
    value: int = 0
    index: int = 0

    def pack(self) -> bytes:
        return RTC_PARAM.pack(self.param, self.value & (1 << 64) - 1, self.index, 0)

    @classmethod
    def unpack(cls, data: bytes) -> RtcParam:
        param, value, index, _ = RTC_PARAM.unpack(data)
        return cls(param, value, index)

    @property
    def svalue(self) -> int:
        """The union's __s64 svalue."""
        return self.value - (1 << 64) if self.value >= 1 << 63 else self.value


class RtcIrqTimeout(TimeoutError):
    """No RTC interrupt became readable in time."""


class RTC(DeviceNode):
    """One /dev/rtcN, opened in the guest for the `with` block.

    Give it the bound device's sysfs directory: the RTC core names the
    device after the order of registration (and alarmtimer keeps a reference
    to the first wake-capable one across unbinds), so the node is found under
    `<device>/rtc/rtc*` rather than assumed to be rtc0.
    """

    def __init__(self, device_dir: GuestPath) -> None:
        # O_RDONLY is enough for every ioctl here; the RTC allows one opener at a time.
        self.sysfs = (device_dir / "rtc").only("rtc*")
        self.name = self.sysfs.name
        super().__init__(GuestPath(device_dir.agent, f"/dev/{self.name}"))

    def _ioctl(self, request: int, arg: bytes) -> bytes:
        return self.ioctl(request, arg)[1]

    # Time

    def read_rtc_time(self) -> RtcTime:
        """RTC_RD_TIME, every field as the kernel returned it."""
        return RtcTime.unpack(self._ioctl(RTC_RD_TIME, bytes(RTC_TIME.size)))

    def read_time(self) -> datetime.datetime:
        return self.read_rtc_time().to_datetime()

    def set_time(self, when: datetime.datetime | RtcTime) -> None:
        """RTC_SET_TIME; a datetime is sent with the weekday and day of year userspace computes."""
        tm = when if isinstance(when, RtcTime) else RtcTime.from_datetime(when)
        self._ioctl(RTC_SET_TIME, tm.pack())

    # Alarm

    def read_wake_alarm(self) -> WakeAlarm:
        return WakeAlarm.unpack(self._ioctl(RTC_WKALM_RD, bytes(RTC_WKALRM.size)))

    def set_wake_alarm(self, when: datetime.datetime, enabled: bool = True) -> None:
        """RTC_WKALM_SET, the one-call way to set (and enable) the alarm."""
        alarm = WakeAlarm(enabled=enabled, pending=False, time=RtcTime.from_datetime(when))
        self._ioctl(RTC_WKALM_SET, alarm.pack())

    def read_alarm(self) -> RtcTime:
        """RTC_ALM_READ: the alarm's time (the RTC core fills what the driver leaves)."""
        return RtcTime.unpack(self._ioctl(RTC_ALM_READ, bytes(RTC_TIME.size)))

    def set_alarm(self, when: datetime.time | RtcTime) -> None:
        """RTC_ALM_SET: the alarm at the next `when` (hour, minute, second), not enabled;
        the RTC core makes the date itself."""
        if isinstance(when, RtcTime):
            tm = when
        else:
            tm = RtcTime(tm_sec=when.second, tm_min=when.minute, tm_hour=when.hour)
        self._ioctl(RTC_ALM_SET, tm.pack())

    def alarm_irq(self, enabled: bool) -> None:
        """RTC_AIE_ON / RTC_AIE_OFF."""
        self.ioctl_none(RTC_AIE_ON if enabled else RTC_AIE_OFF)

    # Parameters (RTC_PARAM_GET / RTC_PARAM_SET)

    def param_get(self, param: int, index: int = 0) -> RtcParam:
        """RTC_PARAM_GET: the parameter as the kernel filled it in."""
        return RtcParam.unpack(self._ioctl(RTC_PARAM_GET, RtcParam(param, 0, index).pack()))

    def param_set(self, param: int, value: int, index: int = 0) -> None:
        """RTC_PARAM_SET (a negative `value` is sent as the union's svalue)."""
        self._ioctl(RTC_PARAM_SET, RtcParam(param, value, index).pack())

    def features(self) -> frozenset[int]:
        """The RTC_FEATURE_* bits the RTC core reports set (RTC_PARAM_FEATURES)."""
        bits = self.param_get(RTC_PARAM_FEATURES).value
        return frozenset(bit for bit in range(64) if bits >> bit & 1)

    def has_feature(self, feature: int) -> bool:
        """Whether RTC_PARAM_FEATURES reports the RTC_FEATURE_* bit `feature`."""
        return feature in self.features()

    def correction(self) -> int:
        """RTC_PARAM_CORRECTION: the clock's offset in parts per billion (signed)."""
        return self.param_get(RTC_PARAM_CORRECTION).svalue

    def set_correction(self, ppb: int) -> None:
        self.param_set(RTC_PARAM_CORRECTION, ppb)

    # The sysfs offset attribute (needs no open device node)

    def read_offset(self) -> int:
        """`offset` in the RTC's sysfs directory: parts per billion, positive for a day
        that passes more slowly (Documentation/ABI/testing/sysfs-class-rtc)."""
        return int(self.sysfs_offset.read_text())

    def write_offset(self, ppb: int) -> None:
        self.sysfs_offset.write_text(str(ppb))

    @property
    def sysfs_offset(self) -> GuestPath:
        return self.sysfs / "offset"

    # Voltage-low information

    def vl_read(self) -> int:
        """RTC_VL_READ: RTC_VL_* bits."""
        (flags,) = _UINT.unpack(self._ioctl(RTC_VL_READ, bytes(_UINT.size)))
        return int(flags)

    def vl_clear(self) -> None:
        self.ioctl_none(RTC_VL_CLR)

    # Interrupts

    def read_irq(self, timeout: float = 10.0) -> int:
        """read(): the interrupt data, RTC_IRQF | RTC_AF ... in the low byte, the count above.

        read() blocks in the guest until an interrupt arrives, and a blocked
        agent answers nothing else; so first poll, in short slices until
        `timeout` seconds of host time have passed (the guest's clock jumps,
        so its own poll timeout says little), and fail with RtcIrqTimeout.
        """
        try:
            wait_readable(self.agent, self.fd, timeout, "interrupt")
        except TimeoutError:
            raise RtcIrqTimeout(
                f"{self.node}: no interrupt to read within {timeout:g} s; "
                "see the kernel log for the driver's interrupt handling"
            ) from None
        (data,) = _ULONG.unpack(self.agent.read(self.fd, _ULONG.size))
        return int(data)
