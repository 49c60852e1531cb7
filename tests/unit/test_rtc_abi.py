"""The RTC ABI helpers: ioctl numbers, struct layouts, the poll-before-read timeout."""

from __future__ import annotations

import datetime
import os
import select
from typing import Any, cast

import pytest

from roadtest.guest.client import AgentClient
from roadtest.testing import rtc
from roadtest.testing.guestpath import GuestPath


def test_ioctl_numbers() -> None:
    # The values <linux/rtc.h> gives on x86_64 (as strace prints them).
    assert rtc.RTC_AIE_ON == 0x7001
    assert rtc.RTC_AIE_OFF == 0x7002
    assert rtc.RTC_UIE_ON == 0x7003
    assert rtc.RTC_ALM_SET == 0x40247007
    assert rtc.RTC_ALM_READ == 0x80247008
    assert rtc.RTC_RD_TIME == 0x80247009
    assert rtc.RTC_SET_TIME == 0x4024700A
    assert rtc.RTC_WKALM_SET == 0x4028700F
    assert rtc.RTC_WKALM_RD == 0x80287010
    assert rtc.RTC_VL_READ == 0x80047013
    assert rtc.RTC_VL_CLR == 0x7014


def test_struct_sizes() -> None:
    assert rtc.RTC_TIME.size == 36
    assert rtc.RTC_WKALRM.size == 40


def test_rtc_time_from_datetime() -> None:
    tm = rtc.RtcTime.from_datetime(datetime.datetime(2021, 12, 25, 11, 10, 37))
    assert tm == rtc.RtcTime(37, 10, 11, 25, 11, 121, 6, 358, 0)
    assert tm.to_datetime() == datetime.datetime(2021, 12, 25, 11, 10, 37)
    assert rtc.RtcTime.unpack(tm.pack()) == tm
    assert tm.pack()[:8] == (37).to_bytes(4, "little") + (10).to_bytes(4, "little")


def test_wake_alarm_layout() -> None:
    alarm = rtc.WakeAlarm(True, False, rtc.RtcTime.from_datetime(datetime.datetime(2021, 1, 1)))
    data = alarm.pack()
    assert data[:4] == b"\x01\x00\x00\x00"  # enabled, pending, padding to the int alignment
    assert data[4:] == alarm.time.pack()
    assert rtc.WakeAlarm.unpack(data) == alarm


def test_invalid_fields_are_not_a_datetime() -> None:
    with pytest.raises(ValueError):
        rtc.RtcTime(tm_mday=0, tm_year=121).to_datetime()


class FakeAgent:
    """Stands in for the guest: one RTC device directory, no interrupt ever readable."""

    broken = False

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def listdir(self, path: str) -> list[str]:
        assert path == "/sys/bus/i2c/devices/0-0051/rtc"
        return ["rtc3"]

    def open(self, path: str, flags: int) -> int:
        self.calls.append(("open", (path, flags)))
        return 7

    def close(self, fd: int) -> None:
        self.calls.append(("close", fd))

    def poll(self, fds: list[tuple[int, int]], timeout_ms: int) -> list[tuple[int, int]]:
        self.calls.append(("poll", (fds, timeout_ms)))
        return []

    def read(self, fd: int, size: int) -> bytes:
        raise AssertionError("read() would block the agent")


def test_node_from_sysfs_and_irq_timeout() -> None:
    agent = FakeAgent()
    dev = GuestPath(cast(AgentClient, agent), "/sys/bus/i2c/devices/0-0051")
    with rtc.RTC(dev) as clock:
        assert str(clock.node) == "/dev/rtc3"
        with pytest.raises(rtc.RtcIrqTimeout, match="/dev/rtc3"):
            clock.read_irq(timeout=0.05)
    assert agent.calls[0] == ("open", ("/dev/rtc3", os.O_RDONLY))
    polls = [args for op, args in agent.calls if op == "poll"]
    assert polls and all(fds == [(7, select.POLLIN)] for fds, _ in polls)
    assert agent.calls[-1] == ("close", 7)


def test_param_ioctl_numbers_and_layout() -> None:
    # struct rtc_param is 24 bytes (two __u64, two __u32): _IOW('p', 0x13/0x14, ...).
    assert rtc.RTC_PARAM.size == 24
    assert rtc.RTC_PARAM_GET == 0x40187013
    assert rtc.RTC_PARAM_SET == 0x40187014
    param = rtc.RtcParam(rtc.RTC_PARAM_CORRECTION, -4340, 0)
    data = param.pack()
    assert data[:8] == (1).to_bytes(8, "little")
    assert data[8:16] == (-4340).to_bytes(8, "little", signed=True)  # the union's svalue
    assert data[16:] == bytes(8)  # index 0, __pad
    back = rtc.RtcParam.unpack(data)
    assert back.svalue == -4340 and back.value == (1 << 64) - 4340
    assert rtc.RtcParam(rtc.RTC_PARAM_FEATURES, 0x21).svalue == 0x21


class ParamAgent:
    """The guest's RTC core answering RTC_PARAM_GET for features and the correction."""

    broken = False

    def __init__(self, features: int, correction: int) -> None:
        self.answers = {rtc.RTC_PARAM_FEATURES: features, rtc.RTC_PARAM_CORRECTION: correction}
        self.set: list[tuple[int, int]] = []
        self.files: dict[str, bytes] = {"/sys/bus/i2c/devices/0-0051/rtc/rtc1/offset": b"-8680\n"}

    def listdir(self, path: str) -> list[str]:
        return ["rtc1"]

    def open(self, path: str, flags: int) -> int:
        return 3

    def close(self, fd: int) -> None:
        pass

    def ioctl(self, fd: int, request: int, arg: bytes) -> tuple[int, bytes]:
        param = rtc.RtcParam.unpack(arg)
        if request == rtc.RTC_PARAM_GET:
            value = self.answers[param.param] & (1 << 64) - 1
            return 0, rtc.RtcParam(param.param, value, param.index).pack()
        assert request == rtc.RTC_PARAM_SET
        self.set.append((param.param, param.svalue))
        return 0, arg

    def read_file(self, path: str) -> bytes:
        return self.files[path]

    def write_file(self, path: str, data: bytes) -> None:
        self.files[path] = data


def test_features_correction_and_offset() -> None:
    agent = ParamAgent(features=1 << rtc.RTC_FEATURE_ALARM | 1 << rtc.RTC_FEATURE_CORRECTION,
                       correction=-277760)  # fmt: skip
    dev = GuestPath(cast(AgentClient, agent), "/sys/bus/i2c/devices/0-0051")
    with rtc.RTC(dev) as clock:
        assert clock.features() == {rtc.RTC_FEATURE_ALARM, rtc.RTC_FEATURE_CORRECTION}
        assert clock.correction() == -277760
        clock.set_correction(4069)
        assert agent.set == [(rtc.RTC_PARAM_CORRECTION, 4069)]
    # The sysfs attribute needs no open node.
    clock = rtc.RTC(dev)
    assert str(clock.sysfs) == "/sys/bus/i2c/devices/0-0051/rtc/rtc1"
    assert clock.read_offset() == -8680
    clock.write_offset(4340)
    assert agent.files["/sys/bus/i2c/devices/0-0051/rtc/rtc1/offset"] == b"4340"


class AlarmAgent(FakeAgent):
    """Answers RTC_ALM_READ with 12:34:56 and records RTC_ALM_SET."""

    def ioctl(self, fd: int, request: int, arg: int | bytes = 0) -> tuple[int, bytes | None]:
        self.calls.append(("ioctl", (fd, request, arg)))
        if request == rtc.RTC_ALM_READ:
            return 0, rtc.RtcTime(56, 34, 12, -1, -1, -1, -1, -1, -1).pack()
        if request == rtc.RTC_PARAM_GET:
            assert isinstance(arg, bytes)
            param = rtc.RtcParam.unpack(arg)
            return 0, rtc.RtcParam(param.param, 1 << rtc.RTC_FEATURE_ALARM).pack()
        assert isinstance(arg, bytes)
        return 0, arg


def test_alarm_time_and_a_feature_bit() -> None:
    # RTC_ALM_READ/SET: _IOR/_IOW('p', 0x08/0x07, struct rtc_time), a time of day only.
    assert (rtc.RTC_ALM_READ, rtc.RTC_ALM_SET) == (0x80247008, 0x40247007)
    agent = AlarmAgent()
    dev = GuestPath(cast(AgentClient, agent), "/sys/bus/i2c/devices/0-0051")
    with rtc.RTC(dev) as clock:
        assert clock.has_feature(rtc.RTC_FEATURE_ALARM)
        assert not clock.has_feature(rtc.RTC_FEATURE_UPDATE_INTERRUPT)
        assert clock.read_alarm().tm_hour == 12
        clock.set_alarm(datetime.time(6, 30, 5))
    sets = [args for op, args in agent.calls if op == "ioctl" and args[1] == rtc.RTC_ALM_SET]
    assert sets == [(7, rtc.RTC_ALM_SET, rtc.RtcTime(5, 30, 6).pack())]
