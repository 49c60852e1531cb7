"""MAX8649 step-down regulator (drivers/regulator/max8649.c), against the sweep's register
file: no model of the chip, which the test never reaches.

The driver has no devicetree binding: its configuration (the mode register that sets the
voltage, the external clock, the ramp, the regulator's constraints) comes only as board
platform data (include/linux/regulator/max8649.h). A device declared without it, by a
devicetree node (the I2C core names it after its compatible, "max8649", which the driver's
i2c_device_id table matches) or through an adapter's new_device, has none: the probe
dereferenced the missing platform data and killed the kernel (kernel-patches/regulator/0002).
Such a device is refused now.
"""

from __future__ import annotations

import pytest

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import BindError, I2CDevice, RoadtestSession


def max8649() -> RegisterFile:
    return RegisterFile(RegisterPlan())


REGULATOR = I2CDevice(
    compatible="maxim,max8649",
    model=max8649,
    dts="""
        regulator@$addr$ {
            compatible = "maxim,max8649";
            reg = <0x$addr$>;
        };
    """,
)


def test_a_device_without_platform_data_is_refused(guest: RoadtestSession) -> None:
    """No platform data: the probe fails (and the kernel lives on)."""
    with pytest.raises(BindError):
        with guest.bound(REGULATOR):
            pass
