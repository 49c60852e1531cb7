"""Maxim MAX5522 dual DAC on SPI (drivers/iio/dac/max5522.c), bound with its reference, a
fixed regulator as vrefin-supply, and unbound, through the driver core and the IIO sysfs
ABI (Documentation/ABI/testing/sysfs-bus-iio): out_voltageY_scale is VREFIN in mV over
2^10, the DAC's resolution.

The probe enabled vrefin with regulator_enable() and nothing disabled it: at unbind (and
after a probe failing past that point) devres put a regulator still enabled, and the
regulator core warned in _regulator_put() (kernel-patches/iio/0025 adds a devm action that
disables it).
"""

from __future__ import annotations

import pytest

from roadtest.models.max5522 import MAX5522
from roadtest.testing import BoundDevice, RoadtestSession, SPIDevice, fixed_regulator, read_float
from roadtest.testing.guestpath import GuestPath

VREF_MV = 2500

VREF = fixed_regulator("max5522_vref", VREF_MV * 1000)

DAC = SPIDevice(
    compatible="maxim,max5522",
    model=MAX5522,
    dts="""
        dac@$addr$ {
            compatible = "maxim,max5522";
            reg = <$addr$>;
            spi-max-frequency = <1000000>;
            vrefin-supply = <&max5522_vref>;
        };
    """,
)


def iio(dev: BoundDevice[MAX5522]) -> GuestPath:
    return dev.path.only("iio:device*")


def test_bind_and_unbind(guest: RoadtestSession) -> None:
    """Bound and unbound: vrefin is disabled again before it is put (no regulator
    warning), and the probe sent the chip nothing."""
    with guest.bound(VREF), guest.bound(DAC) as dev:
        assert dev.model.words == []


@pytest.mark.parametrize("channel", [0, 1])
def test_scale_is_vrefin_over_2_to_the_10(guest: RoadtestSession, channel: int) -> None:
    with guest.bound(VREF), guest.bound(DAC) as dev:
        scale = read_float(iio(dev) / f"out_voltage{channel}_scale")
        assert scale == pytest.approx(VREF_MV / 2**10, rel=1e-6)
