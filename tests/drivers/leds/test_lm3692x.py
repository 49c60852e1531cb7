"""LM36922 backlight LED driver (drivers/leds/leds-lm3692x.c), against the sweep's register
file: no model of the chip, its registers as a plan says (all 0: no fault flagged).

The LED is registered with devm, so the LED core unregisters it after the driver's
remove(), and turns it off as it does (led_classdev_unregister() sets LED_OFF, through
the driver's brightness_set_blocking). On 6.12 remove() had already destroyed the mutex
that brightness_set takes: every unbind was a lock debugging WARN, a panic with
panic_on_warn (kernel-patches/leds/0001).

From the LM36922 datasheet (SNVSA29): register 0x10 is the Enable register, bit 0 Device
Enable; 0x18 holds brightness bits 2:0 and 0x19 bits 10:3 (an 11-bit brightness code).
From the LED class ABI (Documentation/ABI/testing/sysfs-class-led): `brightness` reads
what was written, between 0 and `max_brightness`.
"""

from __future__ import annotations

import pytest

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import LED, BoundDevice, I2CDevice, RoadtestSession, device_led
from roadtest.testing.session import BindError

REG_ENABLE = 0x10
DEVICE_EN = 1 << 0
REG_BRIGHTNESS_MSB = 0x19
REG_FAULT_FLAGS = 0x1F


def lm36922() -> RegisterFile:
    return RegisterFile(RegisterPlan())


BACKLIGHT = I2CDevice(
    compatible="ti,lm36922",
    model=lm36922,
    dts="""
        led-controller@$addr$ {
            compatible = "ti,lm36922";
            reg = <0x$addr$>;
            #address-cells = <1>;
            #size-cells = <0>;

            led@0 {
                reg = <0>;
            };
        };
    """,
)


def led(dev: BoundDevice[RegisterFile]) -> LED:
    return device_led(dev.path)


def test_brightness_reaches_the_chip(guest: RoadtestSession) -> None:
    with guest.bound(BACKLIGHT) as dev:
        top = led(dev).max_brightness
        led(dev).brightness = top
        assert led(dev).brightness == top
        assert dev.model.written[REG_ENABLE] & DEVICE_EN
        assert dev.model.written[REG_BRIGHTNESS_MSB] == top
        led(dev).brightness = 0
        assert led(dev).brightness == 0
        assert not dev.model.written[REG_ENABLE] & DEVICE_EN


def test_unbind_with_the_led_on_turns_the_chip_off(guest: RoadtestSession) -> None:
    """Unbinding while lit: the kernel lives on (no lock debugging WARN from the LED's
    last brightness_set) and the chip is left disabled; it binds again."""
    with guest.bound(BACKLIGHT) as dev:
        led(dev).brightness = led(dev).max_brightness
        model = dev.model
    assert not model.written[REG_ENABLE] & DEVICE_EN
    with guest.bound(BACKLIGHT) as dev:
        assert led(dev).brightness == 0


def fault_flagged() -> RegisterFile:
    # The Fault Flags register (0x1F) flags an over-current (bit 2, OCP: SNVSA29) on every
    # read: a chip whose fault does not clear.
    return RegisterFile(RegisterPlan(registers=((REG_FAULT_FLAGS, 1 << 2),)))


FAULTY = I2CDevice(
    compatible="ti,lm36922",
    model=fault_flagged,
    dts=BACKLIGHT.dts,
)


def test_a_fault_that_does_not_clear_fails_the_probe(guest: RoadtestSession) -> None:
    """The driver checks the fault flags when it enables the chip, at probe: a fault still
    flagged is an error, and the probe fails with it as an errno (on 6.12 it returned the
    flags themselves, a positive value: drivers_probe's write failed with EINVAL and the
    driver core said "failed with error 4"; kernel-patches/leds/0003)."""
    with pytest.raises(BindError), guest.bound(FAULTY):
        pass
