"""A PCF85063A (drivers/rtc/rtc-pcf85063.c) whose transfers are not acknowledged: at the
probe's first access, at its software reset, and at a reading of the time.

Here, not beside tests/drivers/rtc/test_pcf85063.py: a script of failed transfers is not
a golden trace's I/O, and tests/drivers is replayed against its traces.

The probe's transfers with a valid clock: Seconds (the OS flag), Control_1 (the 12_24
bit: kernel-patches/rtc/0004 leaves 12-hour mode), Control_1 again (CAP_SEL, no write
when it is already right), and the RTC core's read of the time at registration; with OS
set, the software reset command (58h to Control_1) comes second.
"""

from __future__ import annotations

import datetime
import errno

import pytest

from roadtest.fuzz.events import DeviceEvent, Pass, TransferFails
from roadtest.models.pcf85063 import PCF85063A
from roadtest.testing import BindError, I2CDevice, RoadtestSession
from roadtest.testing.rtc import RTC, RTC_VL_DATA_INVALID

CLOCK = I2CDevice(
    compatible="nxp,pcf85063a",
    model=PCF85063A,
    dts="""
        rtc@$addr$ {
            compatible = "nxp,pcf85063a";
            reg = <0x$addr$>;
        };
    """,
)
CHRISTMAS = datetime.datetime(2021, 12, 25, 11, 10, 37)
PROBE_TRANSFERS = 4


def valid_clock() -> PCF85063A:
    model = PCF85063A()
    model.set_time(CHRISTMAS)
    return model


def test_probe_fails_when_the_chip_does_not_answer(guest: RoadtestSession) -> None:
    """The probe's first access (Seconds) NACKed: "RTC chip is not present", no RTC; the
    next probe works."""
    with guest.device_events([TransferFails(at_message=0)]):
        with pytest.raises(BindError), guest.bound(CLOCK, valid_clock()):
            pass
    with guest.bound(CLOCK, valid_clock()) as dev, RTC(dev.path) as rtc:
        assert rtc.read_time() == CHRISTMAS


def test_failed_software_reset_is_survived(guest: RoadtestSession) -> None:
    """The software reset's write NACKed: the driver says so and goes on."""
    with guest.device_events([Pass(1), TransferFails(at_message=0)]):
        with guest.bound(CLOCK) as dev, RTC(dev.path) as rtc:
            guest.assert_kernel_log(r"SW reset failed, trying to continue")
            assert dev.model.software_resets == 0
            assert rtc.vl_read() == RTC_VL_DATA_INVALID


@pytest.mark.parametrize("at_message", [0, 1], ids=["address", "data"])
def test_failed_time_read_is_an_error(guest: RoadtestSession, at_message: int) -> None:
    """The time's read NACKed (its register address, or the read of the registers): the
    error reaches RTC_RD_TIME, and the next read works."""
    script: list[DeviceEvent] = [Pass(PROBE_TRANSFERS), TransferFails(at_message=at_message)]
    with guest.device_events(script), guest.bound(CLOCK, valid_clock()) as dev:
        with RTC(dev.path) as rtc:
            with pytest.raises(OSError) as info:
                rtc.read_time()
            assert info.value.errno == errno.EIO
            assert rtc.read_time() == CHRISTMAS
