"""MPR121 capacitive touch sensor (drivers/input/keyboard/mpr121_touchkey.c), against the
sweep's register file: no model of the chip, the registers as a plan says (all 0).

The driver sets the chip's auto-configuration limits from its supply voltage (AN3889:
USL = (Vdd - 0.7 V) / Vdd x 256), which it asks of its vdd-supply regulator. Without a
regulator that knows its voltage (no vdd-supply: the dummy regulator, whose voltage is
an error) it took the error for the voltage, divided by zero and killed the kernel
(kernel-patches/input/0001). It refuses to bind now.
"""

from __future__ import annotations

import pytest

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import BindError, I2CDevice, RoadtestSession

KEY_A, KEY_B = 30, 48  # linux,keycodes from include/uapi/linux/input-event-codes.h


def mpr121() -> RegisterFile:
    return RegisterFile(RegisterPlan())


TOUCHKEY = I2CDevice(
    compatible="fsl,mpr121-touchkey",
    model=mpr121,
    dts=f"""
        touchkey@$addr$ {{
            compatible = "fsl,mpr121-touchkey";
            reg = <0x$addr$>;
            poll-interval = <20>;
            linux,keycodes = <{KEY_A} {KEY_B}>;
        }};
    """,
)


def test_a_supply_of_unknown_voltage_is_refused(guest: RoadtestSession) -> None:
    """No vdd-supply: the probe fails (and the kernel lives on)."""
    with pytest.raises(BindError):
        with guest.bound(TOUCHKEY):
            pass
