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
from roadtest.models.hdc100x import HDC100x
from roadtest.testing import I2CDevice, RoadtestSession, read_float, read_int

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


@pytest.mark.xfail(
    strict=True,
    reason="hdc100x_get_measurement() checks only i2c_master_recv() < 0: a read whose one "
    "message was not transferred (i2c_transfer() returns 0, as virtio-i2c does for a "
    "NACK) is taken as success and the uninitialized __be16 on its stack is returned as "
    "the measurement",
)
def test_a_nacked_result_read_is_an_error(guest: RoadtestSession) -> None:
    with guest.device_events([Pass(PROBE_TRANSFERS + 1), TransferFails(at_message=0)]):
        with guest.bound(SENSOR) as dev:
            dev.model.humidity = 50
            raw = dev.path.only("iio:device*") / "in_humidityrelative_raw"
            with pytest.raises(OSError):
                read_int(raw)


@pytest.mark.xfail(
    strict=True,
    reason="hdc100x_probe() ignores hdc100x_set_it_time()'s errors: after a NACKed "
    "configuration write adc_int_us stays 0, the integration time reads 0 (not one of "
    "the available times) and measurements wait 1 ms, less than the datasheet's "
    "6.35/6.50 ms conversion",
)
def test_a_nacked_probe_configuration_keeps_the_integration_times(
    guest: RoadtestSession,
) -> None:
    events = [TransferFails(at_message=0) for _ in range(PROBE_TRANSFERS)]
    with guest.device_events(events):
        with guest.bound(SENSOR) as dev:
            assert dev.model.reg_writes(0x02) == []  # none of them reached the chip
            channel = dev.path.only("iio:device*")
            assert read_float(channel / "in_temp_integration_time") == 0.00635
            assert read_float(channel / "in_humidityrelative_integration_time") == 0.0065
