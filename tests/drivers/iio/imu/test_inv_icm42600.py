"""TDK InvenSense ICM-42688-P (drivers/iio/imu/inv_icm42600/, the inv-icm42600 core with
its I2C and SPI drivers), a probe that fails: the chip answers another WHO_AM_I, or never
reports its reset done (roadtest/models/icm42688.py).

The chip has two supplies, VDD and a separate VDDIO (DS-000347); the driver takes them as
vdd-supply and vddio-supply (Documentation/devicetree/bindings/iio/imu/
invensense,icm42600.yaml), enables both at probe, then checks the chip's identity and has
it reset. A probe that fails must leave the supplies as it found them: a regulator's
`num_users` (Documentation/ABI/testing/sysfs-class-regulator) counts the consumers that
enabled it.

A probe that failed before runtime PM was set up left vddio enabled: the devm action that
disables it returned early because the device's runtime PM status was still the default,
suspended. The regulator was put still enabled (a WARN in _regulator_put()) and stayed
counted as used (kernel-patches/iio/0029).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from roadtest.models.icm42688 import ICM42688
from roadtest.testing import (
    BindError,
    BoundPlatformDevice,
    I2CDevice,
    PlatformDevice,
    RoadtestSession,
    SPIDevice,
    fixed_regulator,
    read_int,
)
from roadtest.testing.guestpath import GuestPath

SUPPLY_UV = 1_800_000
OTHER_WHO_AM_I = 0x00  # no ICM-426xx answers 00h: a chip that is not there, or not this one


def supply(name: str) -> PlatformDevice:
    return fixed_regulator(f"icm42688_{name}", SUPPLY_UV)


VDD = supply("vdd")
VDDIO = supply("vddio")


def other_chip() -> ICM42688:
    return ICM42688(whoami=OTHER_WHO_AM_I)


def reset_never_done() -> ICM42688:
    return ICM42688(reset_done=False)


PROPERTIES = """
            interrupt-parent = <&gpio>;
            interrupts = <$int1$ IRQ_TYPE_EDGE_FALLING>;
            vdd-supply = <&icm42688_vdd>;
            vddio-supply = <&icm42688_vddio>;
"""


def on_i2c(model: Callable[[], ICM42688]) -> I2CDevice[ICM42688]:
    return I2CDevice(
        compatible="invensense,icm42688",
        model=model,
        gpios=("int1",),
        dts=f"""
        imu@$addr$ {{
            compatible = "invensense,icm42688";
            reg = <0x$addr$>;{PROPERTIES}        }};
    """,
    )


def on_spi(model: Callable[[], ICM42688]) -> SPIDevice[ICM42688]:
    return SPIDevice(
        compatible="invensense,icm42688",
        model=model,
        gpios=("int1",),
        dts=f"""
        imu@$addr$ {{
            compatible = "invensense,icm42688";
            reg = <$addr$>;
            spi-max-frequency = <1000000>;{PROPERTIES}        }};
    """,
    )


I2C_OTHER_CHIP = on_i2c(other_chip)
I2C_RESET_NEVER_DONE = on_i2c(reset_never_done)
SPI_OTHER_CHIP = on_spi(other_chip)
SPI_RESET_NEVER_DONE = on_spi(reset_never_done)


def users(regulator: BoundPlatformDevice) -> GuestPath:
    return (regulator.path / "regulator").only("regulator.*") / "num_users"


@pytest.mark.parametrize(
    "device",
    [
        pytest.param(I2C_OTHER_CHIP, id="i2c-other-chip"),
        pytest.param(I2C_RESET_NEVER_DONE, id="i2c-reset-never-done"),
        pytest.param(SPI_OTHER_CHIP, id="spi-other-chip"),
        pytest.param(SPI_RESET_NEVER_DONE, id="spi-reset-never-done"),
    ],
)
def test_a_failed_probe_leaves_the_supplies_as_it_found_them(
    guest: RoadtestSession, device: I2CDevice[ICM42688] | SPIDevice[ICM42688]
) -> None:
    """other-chip: WHO_AM_I is not the ICM-42688-P's 47h; reset-never-done: INT_STATUS
    never reports RESET_DONE_INT after the soft reset. Either fails the probe, and each
    supply has the users it had before."""
    with guest.bound(VDD) as vdd, guest.bound(VDDIO) as vddio:
        before = read_int(users(vdd)), read_int(users(vddio))
        with pytest.raises(BindError):
            with guest.bound(device):
                pass
        assert (read_int(users(vdd)), read_int(users(vddio))) == before
