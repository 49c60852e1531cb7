"""A device-events script on a live driver (RoadtestSession.device_events): what the driver
does when the device fails a transfer on its own, as the kernel reports it."""

from __future__ import annotations

import pytest
from scaffold import opt3001_sensor

from roadtest.fuzz.events import TransferFails
from roadtest.testing import BindError, RoadtestSession, read_float

SENSOR = opt3001_sensor()


def test_an_address_nack_at_probe_fails_the_probe(guest: RoadtestSession) -> None:
    with guest.device_events([TransferFails(0)]):
        dev = guest.attach(SENSOR)
        try:
            # opt3001_read_id() reads MANUFACTURER_ID (0x7e) first; a NACK there is
            # i2c_transfer() returning 0 messages, which the SMBus emulation makes -EIO.
            with pytest.raises(BindError):
                dev.bind()
        finally:
            guest.detach(dev)
    guest.assert_kernel_log(r"opt3001 .*: failed to read register 7e")
    with guest.bound(SENSOR) as dev:  # the script was the block's alone
        dev.model.result = 0x3456  # E=3, R=0x456: 0.01 * 2^3 * 0x456 lux
        assert read_float(dev.path.only("iio:device*") / "in_illuminance_input") == 88.80
