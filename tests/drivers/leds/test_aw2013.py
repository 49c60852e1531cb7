"""AW2013 3-channel LED driver (drivers/leds/leds-aw2013.c), against a model of the chip
(roadtest/models/aw2013.py, from its datasheet, V1.5).

Each channel is an LED of the class (Documentation/ABI/testing/sysfs-class-led): its
brightness, 0 to max_brightness (255), is the channel's PWM duty cycle, at the current
its `led-max-microamp` asks for (the datasheet's IMAX: 0, 5, 10 or 15 mA). The chip is
enabled while an LED is lit.

The probe registered the LEDs holding the mutex that brightness_set takes, while the LED
core, under an LED's led_access, waits for brightness_set: lockdep reported the circular
dependency at the first brightness written (kernel-patches/leds/0007). The LEDs are
registered after the mutex is released now.
"""

from __future__ import annotations

from roadtest.models.aw2013 import AW2013
from roadtest.testing import I2CDevice, RoadtestSession, device_led, device_leds

LEDS = I2CDevice(
    compatible="awinic,aw2013",
    model=AW2013,
    dts="""
        led-controller@$addr$ {
            compatible = "awinic,aw2013";
            reg = <0x$addr$>;
            #address-cells = <1>;
            #size-cells = <0>;

            led@0 {
                reg = <0>;
                label = "aw2013:red";
                led-max-microamp = <5000>;
            };
            led@1 {
                reg = <1>;
                label = "aw2013:green";
                led-max-microamp = <15000>;
            };
            led@2 {
                reg = <2>;
                label = "aw2013:blue";
                led-max-microamp = <10000>;
            };
        };
    """,
)


def test_brightness_is_the_duty_cycle_at_the_led_s_current(guest: RoadtestSession) -> None:
    """Full brightness drives the LED's IMAX, half of it half as much; the other channels
    stay dark, and the chip is disabled again once every LED is off."""
    with guest.bound(LEDS) as dev:
        model = dev.model
        red = device_led(dev.path, "aw2013:red")
        green = device_led(dev.path, "aw2013:green")
        assert red.max_brightness == 255
        assert not model.enabled
        red.brightness = 255
        assert red.brightness == 255
        assert [model.current_ua(n) for n in range(3)] == [5000, 0, 0]
        green.brightness = 128
        assert [model.current_ua(n) for n in range(3)] == [5000, 15000 * 128 // 255, 0]
        red.brightness = 0
        green.brightness = 0
        assert [model.current_ua(n) for n in range(3)] == [0, 0, 0]
        assert not model.enabled


def test_each_child_node_is_an_led(guest: RoadtestSession) -> None:
    """One LED per child node, named by its label, dark after the probe."""
    with guest.bound(LEDS) as dev:
        leds = device_leds(dev.path)
        assert set(leds) == {"aw2013:red", "aw2013:green", "aw2013:blue"}
        assert [led.brightness for led in leds.values()] == [0, 0, 0]
