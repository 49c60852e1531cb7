"""Epson RX-8025 SA/NB real-time clock (drivers/rtc/rtc-rx8025.c): the time through
/dev/rtcN, the digital offset through sysfs.

The driver's own attribute, clock_adjust_ppb, is the clock adjustment in ppb, "the
negative value of the deviation" (as the driver documented it until it moved to the RTC
offset interface, b476266f063e, v5.16): the deviation is what the RX-8025's digital
offset register corrects, and the RTC class's `offset` attribute (sysfs-class-rtc:
ppb, positive when a day passes more slowly) reports it with its sign. So
clock_adjust_ppb = -offset = -(the datasheet's correction).

Without kernel-patches/rtc/0002 the clock_adjust_ppb tests panic the guest: the
attribute's callbacks take the RTC class device for the I2C client's.
"""

from __future__ import annotations

import datetime
import errno

import pytest

from roadtest.models.rx8025 import (
    OFFSET_STEP_PPB,
    REG_CONTROL_2,
    REG_DAY,
    REG_DIGITAL_OFFSET,
    REG_HOURS,
    REG_MINUTES,
    REG_MONTH,
    REG_SECONDS,
    REG_WEEKDAY,
    REG_YEAR,
    RX8025,
    hours_register,
)
from roadtest.testing import (
    BoundDevice,
    I2CDevice,
    RoadtestSession,
    read_int,
    wait_until,
    write_int,
)
from roadtest.testing.guestpath import GuestPath
from roadtest.testing.rtc import RTC

RTC_DEVICE = I2CDevice(
    compatible="epson,rx8025",
    model=RX8025,
    dts="""
        rtc@$addr$ {
            compatible = "epson,rx8025";
            reg = <0x$addr$>;
        };
    """,
)

CHRISTMAS_EVENING = datetime.datetime(2021, 12, 25, 23, 10, 37)  # a Saturday
SATURDAY = 6


def rtc_dir(dev: BoundDevice[RX8025]) -> GuestPath:
    """The RTC class device's sysfs directory, /sys/class/rtc/rtcN."""
    return (dev.path / "rtc").only("rtc*")


def test_time_invalid_at_power_on(guest: RoadtestSession) -> None:
    with guest.bound(RTC_DEVICE) as dev, RTC(dev.path) as rtc:
        assert dev.model.power_on_reset
        with pytest.raises(OSError) as info:
            rtc.read_time()
        assert info.value.errno == errno.EINVAL
        # Probing leaves the time registers alone.
        model = dev.model
        assert [model.reg_writes(reg) for reg in range(REG_SECONDS, REG_YEAR + 1)] == [[]] * 7


@pytest.mark.parametrize("hour24", [False, True], ids=["12-hour", "24-hour"])
def test_read_time(guest: RoadtestSession, hour24: bool) -> None:
    model = RX8025()
    model.hour24 = hour24
    model.set_time(CHRISTMAS_EVENING)
    assert model.register(REG_HOURS) == (0x23 if hour24 else 0x31)  # 11 PM: PM | 11
    with guest.bound(RTC_DEVICE, model) as dev, RTC(dev.path) as rtc:
        assert rtc.read_time() == CHRISTMAS_EVENING


@pytest.mark.parametrize("hour24", [False, True], ids=["12-hour", "24-hour"])
def test_set_time(guest: RoadtestSession, hour24: bool) -> None:
    model = RX8025()
    model.hour24 = hour24
    with guest.bound(RTC_DEVICE, model) as dev, RTC(dev.path) as rtc:
        reads = model.reads
        rtc.set_time(CHRISTMAS_EVENING)
        # Setting reads control 2 once (to clear PON); the RTC core then reads the time on
        # a workqueue. Wait for that read's first transfer (control 2 again): from then on
        # it holds the RTC's ops_lock until it has read the time registers, so the test's
        # next read comes after it and the I/O (and a golden trace) is the same every run.
        # (Its next transfer may need guest time, which under simulated time does not
        # pass while the test polls.)
        wait_until(lambda: model.reads >= reads + 2, "the RTC core's read after setting")
        model.assert_reg_write_once(REG_SECONDS, 0x37)
        model.assert_reg_write_once(REG_MINUTES, 0x10)
        model.assert_reg_write_once(REG_HOURS, hours_register(23, hour24))
        model.assert_reg_write_once(REG_WEEKDAY, SATURDAY)
        model.assert_reg_write_once(REG_DAY, 0x25)
        model.assert_reg_write_once(REG_MONTH, 0x12)
        model.assert_reg_write_once(REG_YEAR, 0x21)
        # The time is valid again: power-on reset and oscillation stop cleared.
        assert not model.power_on_reset and not model.oscillator_stopped
        assert model.reg_writes(REG_CONTROL_2)
        assert model.time == CHRISTMAS_EVENING
        assert rtc.read_time() == CHRISTMAS_EVENING


# Digital offset codes and the correction the datasheet gives each, in steps of 3.05 ppm.
CODES = [
    (0x00, 0),
    (0x01, 0),
    (0x02, 1),
    (0x05, 4),
    (0x3F, 62),
    (0x7F, -1),
    (0x7B, -5),
    (0x42, -62),
]


def test_clock_adjust_ppb_reads_the_digital_offset(guest: RoadtestSession) -> None:
    model = RX8025()
    model.set_time(CHRISTMAS_EVENING)
    with guest.bound(RTC_DEVICE, model) as dev:
        rtc = rtc_dir(dev)
        for code, steps in CODES:
            model.digital_offset = code
            correction = steps * OFFSET_STEP_PPB
            assert model.correction_ppb == correction
            assert read_int(rtc / "offset") == correction, f"code {code:#04x}"
            assert read_int(rtc / "clock_adjust_ppb") == -correction, f"code {code:#04x}"


@pytest.mark.parametrize("steps", [1, 4, 62, -1, -5, -62, 0])
def test_clock_adjust_ppb_sets_the_digital_offset(guest: RoadtestSession, steps: int) -> None:
    model = RX8025()
    model.set_time(CHRISTMAS_EVENING)
    model.digital_offset = 0x10  # 15 steps: something else than what the test writes
    correction = steps * OFFSET_STEP_PPB
    with guest.bound(RTC_DEVICE, model) as dev:
        rtc = rtc_dir(dev)
        write_int(rtc / "clock_adjust_ppb", -correction)
        assert model.reg_writes(REG_DIGITAL_OFFSET), "the digital offset was not written"
        assert model.correction_ppb == correction
        assert read_int(rtc / "offset") == correction
        assert read_int(rtc / "clock_adjust_ppb") == -correction

        # And the other way: `offset` written, clock_adjust_ppb reads its negative.
        write_int(rtc / "offset", -correction)
        assert model.correction_ppb == -correction
        assert read_int(rtc / "clock_adjust_ppb") == correction
