"""An SHT3x-DIS (drivers/hwmon/sht3x.c) whose transfers are not acknowledged, at each
point of the probe and at a reading.

Here, not beside tests/drivers/hwmon/test_sht3x.py: a script of failed transfers is not
a golden trace's I/O, and tests/drivers is replayed against its traces.

The probe's transfers: Clear Status (0x3041), then each of the four alert limits read
(a command write, then a 3-byte read: transfers 1 to 8), then the serial number (9, 10).
"""

from __future__ import annotations

import errno

import pytest

from roadtest.fuzz.events import Pass, TransferFails
from roadtest.models.sht3x import SHT3x
from roadtest.testing import I2CDevice, RoadtestSession, read_int
from roadtest.testing.session import BindError

SENSOR = I2CDevice(
    compatible="sensirion,sht3x",
    model=SHT3x,
    dts="""
        humidity-sensor@$addr$ {
            compatible = "sensirion,sht3x";
            reg = <0x$addr$>;
        };
    """,
)
PROBE_TRANSFERS = 11


@pytest.mark.parametrize("failing", range(9))
def test_probe_fails_without_status_or_limits(guest: RoadtestSession, failing: int) -> None:
    with guest.device_events([Pass(failing), TransferFails(at_message=0)]):
        with pytest.raises(BindError):
            with guest.bound(SENSOR):
                pass
    with guest.bound(SENSOR) as dev:  # and the next probe works
        assert read_int((dev.path / "hwmon").only("hwmon*") / "temp1_input")


@pytest.mark.parametrize("failing", [9, 10])
def test_probe_goes_on_without_the_serial_number(guest: RoadtestSession, failing: int) -> None:
    with guest.device_events([Pass(failing), TransferFails(at_message=0)]):
        with guest.bound(SENSOR) as dev:
            assert (dev.path / "hwmon").only("hwmon*").exists()


@pytest.mark.parametrize("failing", [0, 1])  # the command, or the result's read
def test_a_failed_reading_is_eio(guest: RoadtestSession, failing: int) -> None:
    with guest.device_events([Pass(PROBE_TRANSFERS + failing), TransferFails(at_message=0)]):
        with guest.bound(SENSOR) as dev:
            hwmon = (dev.path / "hwmon").only("hwmon*")
            with pytest.raises(OSError) as info:
                read_int(hwmon / "temp1_input")
            assert info.value.errno == errno.EIO
            read_int(hwmon / "temp1_input")  # the next one works
