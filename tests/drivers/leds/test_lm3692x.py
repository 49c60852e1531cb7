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

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import BoundDevice, I2CDevice, RoadtestSession, read_int, write_int
from roadtest.testing.guestpath import GuestPath

REG_ENABLE = 0x10
DEVICE_EN = 1 << 0
REG_BRIGHTNESS_MSB = 0x19


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


def led(dev: BoundDevice[RegisterFile]) -> GuestPath:
    return (dev.path / "leds").only("*")


def test_brightness_reaches_the_chip(guest: RoadtestSession) -> None:
    with guest.bound(BACKLIGHT) as dev:
        top = read_int(led(dev) / "max_brightness")
        write_int(led(dev) / "brightness", top)
        assert read_int(led(dev) / "brightness") == top
        assert dev.model.written[REG_ENABLE] & DEVICE_EN
        assert dev.model.written[REG_BRIGHTNESS_MSB] == top
        write_int(led(dev) / "brightness", 0)
        assert read_int(led(dev) / "brightness") == 0
        assert not dev.model.written[REG_ENABLE] & DEVICE_EN


def test_unbind_with_the_led_on_turns_the_chip_off(guest: RoadtestSession) -> None:
    """Unbinding while lit: the kernel lives on (no lock debugging WARN from the LED's
    last brightness_set) and the chip is left disabled; it binds again."""
    with guest.bound(BACKLIGHT) as dev:
        write_int(led(dev) / "brightness", read_int(led(dev) / "max_brightness"))
        model = dev.model
    assert not model.written[REG_ENABLE] & DEVICE_EN
    with guest.bound(BACKLIGHT) as dev:
        assert read_int(led(dev) / "brightness") == 0
