"""TI ADS1100 16-bit ADC on I2C (drivers/iio/adc/ti-ads1100.c), against a model written from
its datasheet (roadtest/models/ads1100.py), through the IIO sysfs ABI
(Documentation/ABI/testing/sysfs-bus-iio) and the driver core's bind and unbind.

VDD is the chip's supply and its reference: a fixed 3.3 V regulator here (vdd-supply). The
driver enables it at probe, and with runtime PM disables it while the chip is idle (2 s
after the last read) and enables it again for the next. Its devm action disabled VDD
once more at unbind, after runtime PM's own devm action had suspended the device and
disabled it: one disable more than enables on every unbind, which the regulator core
warns about ("unbalanced disables"; kernel-patches/iio/0024 disables it only where
runtime PM has not).

The datasheet's transfer function at 8 SPS, the driver's rate: code = 32768 * gain * VIN /
VDD; `scale` (shared by all channels)
is VDD in mV over 2^15 at gain 1.

No golden traces: the I/O follows runtime PM's autosuspend timer (whether VDD went off
between two reads, or before the unbind), which moves with the guest's clock; the
replays diverged on x86_64's real clock and on a kernel that boots to another time.
"""

from __future__ import annotations

import pytest

from roadtest.models.ads1100 import ADS1100
from roadtest.testing import (
    BoundDevice,
    I2CDevice,
    RoadtestSession,
    fixed_regulator,
    read_float,
    read_int,
    read_str,
)
from roadtest.testing.guestpath import GuestPath

VDD_MV = 3300
AUTOSUSPEND_S = 2  # the driver's delay: the test waits past it

VDD = fixed_regulator("ads1100_vdd", VDD_MV * 1000)

ADC = I2CDevice(
    compatible="ti,ads1100",
    model=ADS1100,
    dts="""
        adc@$addr$ {
            compatible = "ti,ads1100";
            reg = <0x$addr$>;
            vdd-supply = <&ads1100_vdd>;
            #io-channel-cells = <0>;
        };
    """,
)


def iio(dev: BoundDevice[ADS1100]) -> GuestPath:
    return dev.path.only("iio:device*")


def test_unbind_right_after_bind(guest: RoadtestSession) -> None:
    """Bound and unbound at once, the device still active: no regulator warning."""
    with guest.bound(VDD), guest.bound(ADC):
        pass


@pytest.mark.parametrize("vin", [0.0, 1.0, -0.5, 3.3])
def test_a_reading_is_the_datasheets_code(guest: RoadtestSession, vin: float) -> None:
    with guest.bound(VDD), guest.bound(ADC) as dev:
        dev.model.vin = vin
        dev.model.vdd = VDD_MV / 1000
        assert read_int(iio(dev) / "in_voltage_raw") == dev.model.code()
        assert read_float(iio(dev) / "scale") == pytest.approx(VDD_MV / 2**15, rel=1e-6)


def test_unbind_after_runtime_suspend(guest: RoadtestSession) -> None:
    """A reading, then past the autosuspend delay (VDD off), then unbind: no regulator
    warning either."""
    with guest.bound(VDD), guest.bound(ADC) as dev:
        dev.model.vin = 1.0
        assert read_int(iio(dev) / "in_voltage_raw") == dev.model.code()
        guest.sleep(AUTOSUSPEND_S + 1)
        assert read_str(dev.path / "power" / "runtime_status") == "suspended"
