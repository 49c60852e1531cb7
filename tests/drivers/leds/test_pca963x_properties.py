"""PCA963x data sheet properties (drivers/leds/leds-pca963x.c), from NXP's PCA9633 Rev. 05
and the family's tables (roadtest/models/pca963x.py):

- whatever brightnesses are written, each output shows its LED's `brightness` as LEDOUT
  says (7.3.6: LDRx 00 off for 0, 01 fully on for max_brightness, 10 PWMx / 256 between,
  7.3.3), and the chip is in SLEEP exactly while every LED is off;
- any timer-trigger blink the chip can make (a period of 1/24 to 256/24 s) is made to
  the nearest step below: the period (GRPFREQ + 1) / 24 s (7.3.5) within one step of
  delay_on + delay_off, the duty GRPPWM / 256 (7.3.4) within one step of
  delay_on / (delay_on + delay_off).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from roadtest.models.pca963x import PCA9633, PCA9634, PCA9635, PCA963x
from roadtest.testing import (
    LED,
    BoundDevice,
    I2CDevice,
    RoadtestSession,
    device_led,
    wait_until,
)


def controller(compatible: str, leds: list[int]) -> str:
    nodes = "".join(f"led@{n:x} {{ reg = <{n}>; }};\n" for n in leds)
    return f"""
        led-controller@$addr$ {{
            compatible = "{compatible}";
            reg = <0x$addr$>;
            #address-cells = <1>;
            #size-cells = <0>;
            nxp,hw-blink;
            {nodes}
        }};
    """


OUTPUTS = [0, 2, 3]
PCA9633_LEDS: I2CDevice[PCA963x] = I2CDevice(
    compatible="nxp,pca9633", model=PCA9633, dts=controller("nxp,pca9633", OUTPUTS)
)
PCA9635_LEDS: I2CDevice[PCA963x] = I2CDevice(
    compatible="nxp,pca9635", model=PCA9635, dts=controller("nxp,pca9635", OUTPUTS)
)
PCA9634_BLINK: I2CDevice[PCA963x] = I2CDevice(
    compatible="nxp,pca9634", model=PCA9634, dts=controller("nxp,pca9634", [5])
)

BLINK_STEP_MS = 1000 / 24  # one GRPFREQ step
SHORTEST_MS = 42  # just above 1/24 s, GRPFREQ 0
LONGEST_MS = 10_666  # just below 256/24 s, GRPFREQ FFh


def led(dev: BoundDevice[PCA963x], output: int) -> LED:
    adapter = dev.name.split("-")[0]
    return device_led(dev.path, f"pca963x:{adapter}:{dev.addr:02x}:{output}")


def expected(brightness: int) -> tuple[str, float]:
    if brightness == 0:
        return "off", 0.0
    if brightness == 255:
        return "on", 1.0
    return "pwm", brightness / 256


@given(
    chip=st.sampled_from([PCA9633_LEDS, PCA9635_LEDS]),
    writes=st.lists(st.tuples(st.sampled_from(OUTPUTS), st.integers(0, 255)), max_size=4),
)
def test_outputs_follow_brightness(
    guest: RoadtestSession, chip: I2CDevice[PCA963x], writes: list[tuple[int, int]]
) -> None:
    dev = guest.bound_for_examples(chip)
    for output, value in writes:
        led(dev, output).brightness = value
    # What sysfs says each LED is, and what the chip's registers make of each output.
    levels = {output: led(dev, output).brightness for output in OUTPUTS}
    for output, value in writes[-1:]:
        assert levels[output] == value

    def shown() -> bool:
        model = dev.model
        for output, level in levels.items():
            out = model.output(output)
            if (out.state, out.pwm) != expected(level):
                return False
        return model.sleeping == all(v == 0 for v in levels.values())

    wait_until(
        shown,
        lambda: (
            f"brightness {levels}, outputs {dev.model.outputs()}, sleeping {dev.model.sleeping}"
        ),
    )
    untouched = set(range(dev.model.chip.channels)) - set(OUTPUTS)
    assert all(dev.model.output(n).state == "off" for n in untouched)


@given(
    period=st.integers(SHORTEST_MS, LONGEST_MS),
    on_share=st.floats(0, 1, exclude_max=True),
)
def test_blink_is_the_nearest_the_chip_makes(
    guest: RoadtestSession, period: int, on_share: float
) -> None:
    dev = guest.bound_for_examples(PCA9634_BLINK)
    delay_on = min(int(period * on_share), period - 1)
    delay_off = period - delay_on
    one = led(dev, 5)
    # Each delay write blinks at once with the other delay as it stands (a period the
    # chip cannot make is replaced by 500 + 500): from 500 + 500, the smaller delay first
    # keeps the step between within range.
    one.blink(500, 500)
    if delay_on <= delay_off:
        one.blink(delay_on, delay_off)
    else:
        one.delay_off = delay_off
        one.delay_on = delay_on
    assert (one.delay_on, one.delay_off) != (500, 500) or (delay_on, delay_off) == (500, 500)
    model = dev.model
    out = model.output(5)
    assert out.state == "group" and model.blinking
    assert out.blink_period_s is not None and out.blink_on is not None
    chip_period = out.blink_period_s * 1000
    assert -1e-9 <= period - chip_period < BLINK_STEP_MS
    assert -1e-9 <= delay_on / period - out.blink_on < 1 / 256
