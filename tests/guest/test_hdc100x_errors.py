"""HDC1080 (drivers/iio/humidity/hdc100x.c) meeting transfers the chip does not
acknowledge: its datasheet (TI SNAS672A) NACKs a read before the conversion is done.

Here, not beside tests/drivers/iio/humidity/test_hdc100x.py: a script of failed transfers
is not a golden trace's I/O.

The probe makes three transfers (the configuration written three times); a measurement
two: the pointer write that triggers it, then the two-byte read.
"""

from __future__ import annotations

import errno

import pytest

from roadtest.fuzz.events import Pass, TransferFails
from roadtest.models.hdc100x import HDC100x, temperature_code
from roadtest.testing import (
    BindError,
    BufferedCapture,
    I2CDevice,
    RoadtestSession,
    SysfsTrigger,
    read_float,
    read_int,
)

SENSOR = I2CDevice(
    compatible="ti,hdc1080",
    model=HDC100x,
    dts="""
        humidity-sensor@$addr$ {
            compatible = "ti,hdc1080";
            reg = <0x$addr$>;
        };
    """,
)
PROBE_TRANSFERS = 3


def test_a_nacked_trigger_is_eio(guest: RoadtestSession) -> None:
    with guest.device_events([Pass(PROBE_TRANSFERS), TransferFails(at_message=0)]):
        with guest.bound(SENSOR) as dev:
            dev.model.humidity = 50
            raw = dev.path.only("iio:device*") / "in_humidityrelative_raw"
            with pytest.raises(OSError) as raised:
                read_int(raw)
            assert raised.value.errno == errno.EIO
            # The next measurement goes through: 50 % is half of 2^16.
            assert read_int(raw) == 0x8000


def test_a_nacked_result_read_is_an_error(guest: RoadtestSession) -> None:
    """The measurement's read not acknowledged (the HDC1080 NACKs a read before its
    conversion is done, SNAS672A): i2c_master_recv() returns 0 bytes read, and the reading
    is an error, not the two bytes never read (kernel-patches/iio/0031); the next reading
    goes through."""
    with guest.device_events([Pass(PROBE_TRANSFERS + 1), TransferFails(at_message=0)]):
        with guest.bound(SENSOR) as dev:
            dev.model.humidity = 50
            raw = dev.path.only("iio:device*") / "in_humidityrelative_raw"
            with pytest.raises(OSError) as raised:
                read_int(raw)
            assert raised.value.errno == errno.EIO
            assert read_int(raw) == 0x8000


def test_a_nacked_buffered_read_pushes_no_scan(guest: RoadtestSession) -> None:
    """The triggered buffer's read of both results not acknowledged: no scan is pushed
    for that trigger, not the scan buffer's old contents (kernel-patches/iio/0031); the
    next trigger's scan is the measurement. The transfers before it: the probe's three,
    the buffer's enable (MODE 1, both results), the trigger's pointer write."""
    with guest.device_events([Pass(PROBE_TRANSFERS + 2), TransferFails(at_message=0)]):
        with guest.bound(SENSOR) as dev, SysfsTrigger(guest.agent) as trigger:
            dev.model.temperature, dev.model.humidity = 25.0, 50.0
            channel = dev.path.only("iio:device*")
            elements = ["in_temp", "in_humidityrelative"]
            with BufferedCapture(channel, elements, trigger=trigger.name) as capture:
                trigger.fire()  # its read NACKed
                guest.sleep(0.05)  # past its handler's 14.85 ms wait, and the read
                trigger.fire()
                (scan,) = capture.read()
            assert scan["in_temp"] == temperature_code(25.0)
            assert scan["in_humidityrelative"] == 0x8000


@pytest.mark.parametrize("nacked", range(PROBE_TRANSFERS))
def test_a_nacked_probe_configuration_fails_the_probe(guest: RoadtestSession, nacked: int) -> None:
    """Any of the probe's three configuration writes not acknowledged: the probe fails
    (kernel-patches/iio/0032), not binds a chip in a state nobody knows with integration
    times of 0 (none of those available) and 1 ms waits for a conversion of 6.35 ms
    (temperature) or 6.50 ms (humidity) at 14 bits (SNAS672A). The next probe binds it
    with those times."""
    with guest.device_events([Pass(nacked), TransferFails(at_message=0)]):
        with pytest.raises(BindError), guest.bound(SENSOR):
            pass
    with guest.bound(SENSOR) as dev:
        channel = dev.path.only("iio:device*")
        assert read_float(channel / "in_temp_integration_time") == 0.00635
        assert read_float(channel / "in_humidityrelative_integration_time") == 0.0065
