"""Weida WDT87xx touchscreen controller (drivers/input/touchscreen/wdt87xx_i2c.c), against
the sweep's register file: no model of the controller, the registers as a plan says.

The controller answers HID-over-I2C style requests: the driver writes a request to the
command register (0x22, 0x00, ...) and reads the answer after it. In the register file a
write fills the registers from 0x22 on and the read goes on from the next one, so the
answer to the device descriptor request (6 bytes) is read from 0x27 and the answer to a
string request (7 bytes) from 0x28: a length byte, then the descriptor type (0x03, a
string), then the string itself. The parameters string gives the panel's physical width
and height (in 0.1 mm, at bytes 22 and 24); the driver scales its Y axis by height/width.

A controller whose parameters read a width below 1 mm (all zeros: a controller in reset,
erased, or a bus answering zeros) made the driver divide by zero at probe and killed the
kernel (kernel-patches/input/0002). Such a controller is refused now, with no crash.
"""

from __future__ import annotations

import pytest

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import BindError, I2CDevice, RoadtestSession

DESCRIPTOR_LENGTH = 18  # the device descriptor's length, its first byte
REG_DESCRIPTOR_ANSWER = 0x27  # where the descriptor's answer starts
REG_STRING_TYPE = 0x29  # the string answer's second byte: its descriptor type
STRING_DESCRIPTOR = 0x03


def wdt87xx(*registers: tuple[int, int]) -> RegisterFile:
    return RegisterFile(
        RegisterPlan(
            registers=(
                (REG_DESCRIPTOR_ANSWER, DESCRIPTOR_LENGTH),
                (REG_STRING_TYPE, STRING_DESCRIPTOR),
                *registers,
            )
        )
    )


TOUCHSCREEN = I2CDevice(
    compatible="weida,wdt87xx_i2c",
    model=wdt87xx,
    dts="""
        touchscreen@$addr$ {
            compatible = "weida,wdt87xx_i2c";
            reg = <0x$addr$>;
        };
    """,
)


def test_parameters_without_a_width_are_refused(guest: RoadtestSession) -> None:
    """A width and height of 0: the probe fails (and the kernel lives on)."""
    with pytest.raises(BindError):
        with guest.bound(TOUCHSCREEN, wdt87xx()):
            pass
