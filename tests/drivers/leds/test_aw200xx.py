"""AW20036 LED matrix driver (drivers/leds/leds-aw200xx.c), against the sweep's register
file: no model of the chip, the registers as a plan says (IDR, 0x00, holds the chip ID
the probe checks, 0x18; the others 0).

Each child node is an LED of the class (Documentation/ABI/testing/sysfs-class-led), its
brightness 0 to max_brightness (255).

The probe registered the LEDs holding the mutex that brightness_set takes, while the LED
core, under an LED's led_access, waits for brightness_set: lockdep reported the circular
dependency at the first brightness written (kernel-patches/leds/0008). The LEDs are
registered after the probe is done with the chip and has released the mutex now.
"""

from __future__ import annotations

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import I2CDevice, RoadtestSession, device_leds

REG_IDR = 0x00
CHIP_ID = 0x18


def aw20036() -> RegisterFile:
    return RegisterFile(RegisterPlan(registers=((REG_IDR, CHIP_ID),)))


LEDS = I2CDevice(
    compatible="awinic,aw20036",
    model=aw20036,
    dts="""
        led-controller@$addr$ {
            compatible = "awinic,aw20036";
            reg = <0x$addr$>;
            #address-cells = <1>;
            #size-cells = <0>;

            led@0 {
                reg = <0>;
                label = "aw20036:red";
                led-max-microamp = <9780>;
            };
            led@1 {
                reg = <1>;
                label = "aw20036:green";
                led-max-microamp = <9780>;
            };
        };
    """,
)


def test_each_child_node_is_an_led_whose_brightness_is_set(guest: RoadtestSession) -> None:
    """One LED per child node, named by its label, dark after the probe; a brightness
    written reads back."""
    with guest.bound(LEDS) as dev:
        leds = device_leds(dev.path)
        assert set(leds) == {"aw20036:red", "aw20036:green"}
        red, green = leds["aw20036:red"], leds["aw20036:green"]
        assert red.max_brightness == 255
        assert [red.brightness, green.brightness] == [0, 0]
        red.brightness = 255
        green.brightness = 100
        assert [red.brightness, green.brightness] == [255, 100]
        red.brightness = 0
        assert [red.brightness, green.brightness] == [0, 100]
