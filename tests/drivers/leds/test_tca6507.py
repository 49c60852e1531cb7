"""TCA6507 LED driver (drivers/leds/leds-tca6507.c), against the sweep's register file: no
model of the chip, its registers as a plan says (all 0).

The driver writes the chip's registers from a work item that brightness_set schedules.
Its LEDs are registered with devm, so the LED core unregisters them after the driver's
remove(), and turns each off as it does, which schedules the work again: on 6.12 remove()
had cancelled the work before that, and devres freed the driver's data with the work
still pending (an ODEBUG "free active object" WARN, a panic with panic_on_warn; a
use-after-free if the work runs) at every unbind (kernel-patches/leds/0002).

From the TCA6507 datasheet (SCPS185): three Select registers (0x00, 0x01, 0x02) hold one
bit each of a 3-bit code per output, bit n for output Pn; code 100 is "LED on" (output
low, full brightness), 000 "LED off" (high impedance).
From the LED class ABI (Documentation/ABI/testing/sysfs-class-led): `brightness` reads
what was written, between 0 and `max_brightness`.
"""

from __future__ import annotations

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import LED, BoundDevice, I2CDevice, RoadtestSession, device_led, wait_until

SELECT = (0x00, 0x01, 0x02)  # bit 0 of each: the code of output P0, low bit first
LED_ON = 0b100
LED_OFF = 0b000


def tca6507() -> RegisterFile:
    return RegisterFile(RegisterPlan())


LEDS = I2CDevice(
    compatible="ti,tca6507",
    model=tca6507,
    dts="""
        led-controller@$addr$ {
            compatible = "ti,tca6507";
            reg = <0x$addr$>;
            #address-cells = <1>;
            #size-cells = <0>;

            led@0 {
                reg = <0>;
                label = "tca6507:p0";
            };
        };
    """,
)


def led(dev: BoundDevice[RegisterFile]) -> LED:
    return device_led(dev.path)


def p0_code(model: RegisterFile) -> int:
    return sum((model.value(reg) & 1) << bit for bit, reg in enumerate(SELECT))


def lit(guest: RoadtestSession, model: RegisterFile, code: int) -> None:
    """P0's select code becomes `code`: the driver writes the registers from a work item,
    after the write to brightness returned. The guest's time passes first (under simulated
    time it stands still while the test works); then wait for the work's writes, which
    under basic time-travel or a real clock can come later on a loaded host."""
    guest.sleep(0.01)
    wait_until(lambda: p0_code(model) == code, f"P0's select code {code}")


def test_brightness_turns_output_p0_on_and_off(guest: RoadtestSession) -> None:
    with guest.bound(LEDS) as dev:
        top = led(dev).max_brightness
        led(dev).brightness = top
        assert led(dev).brightness == top
        lit(guest, dev.model, LED_ON)
        led(dev).brightness = 0
        lit(guest, dev.model, LED_OFF)


def test_unbind_with_the_led_on(guest: RoadtestSession) -> None:
    """Unbinding while lit: the kernel lives on (no ODEBUG WARN for the driver's work
    freed while pending), and the chip binds again."""
    for _ in range(3):
        with guest.bound(LEDS) as dev:
            led(dev).brightness = led(dev).max_brightness
            lit(guest, dev.model, LED_ON)
    with guest.bound(LEDS) as dev:
        assert led(dev).brightness == 0
