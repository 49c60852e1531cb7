"""PCA9633/PCA9634/PCA9635 LED controllers (drivers/leds/leds-pca963x.c), against NXP's
data sheets (PCA9633 Rev. 05 and the family's tables: roadtest/models/pca963x.py).

The LED class ABI (Documentation/ABI/testing/sysfs-class-led, Documentation/leds/
leds-class.rst, include/linux/leds.h): `brightness` 0..`max_brightness` (255 by
default), the timer trigger's `delay_on`/`delay_off` in ms, and a hardware blink's
contract ("the call should adjust the timings ... if it can't match the values specified
exactly"). The binding (Documentation/devicetree/bindings/leds/nxp,pca963x.yaml): `led@N`
children, `nxp,hw-blink`, `nxp,totem-pole` (push-pull instead of open-drain),
`nxp,inverted-out`.

What the chip does, from the data sheet: LEDOUT's LDRx 00 off, 01 fully on, 10 PWMx /
256, 11 PWMx with the group's dimming or blinking; in blink mode (MODE2.DMBLNK) the
period is (GRPFREQ + 1) / 24 s and the duty cycle GRPPWM / 256. The LED core sets
brightness from a work item (brightness_set_blocking), which the `brightness` store
flushes on 6.12 but a trigger's deactivation need not: a test waits for the outputs the
driver must reach. The timer trigger's delay writes are synchronous.
"""

from __future__ import annotations

import errno
from collections.abc import Callable

import pytest

from roadtest.fuzz.events import Pass, TransferFails
from roadtest.models.pca963x import PCA9633, PCA9634, PCA9635, PCA963x
from roadtest.testing import (
    LED,
    BindError,
    BoundDevice,
    I2CDevice,
    LEDName,
    RoadtestSession,
    device_led,
    device_leds,
    wait_until,
)


def controller(compatible: str, leds: list[int], properties: str = "nxp,hw-blink;") -> str:
    nodes = "".join(f"led@{n:x} {{ reg = <{n}>; }};\n" for n in leds)
    return f"""
        led-controller@$addr$ {{
            compatible = "{compatible}";
            reg = <0x$addr$>;
            #address-cells = <1>;
            #size-cells = <0>;
            {properties}
            {nodes}
        }};
    """


# Each chip with its first two outputs and its last: the last LEDOUT register's top bits.
PCA9633_LEDS: I2CDevice[PCA963x] = I2CDevice(
    compatible="nxp,pca9633", model=PCA9633, dts=controller("nxp,pca9633", [0, 1, 3])
)
PCA9634_LEDS: I2CDevice[PCA963x] = I2CDevice(
    compatible="nxp,pca9634", model=PCA9634, dts=controller("nxp,pca9634", [0, 1, 7])
)
PCA9635_LEDS: I2CDevice[PCA963x] = I2CDevice(
    compatible="nxp,pca9635", model=PCA9635, dts=controller("nxp,pca9635", [0, 1, 15])
)
# Push-pull and inverted outputs.
PCA9634_PUSH_PULL: I2CDevice[PCA963x] = I2CDevice(
    compatible="nxp,pca9634",
    model=PCA9634,
    dts=controller("nxp,pca9634", [2], "nxp,totem-pole; nxp,inverted-out;"),
)
# Blinks twice as slow as asked (the binding: "a scaling ratio (fixed point, decimal
# divided by 1000)").
PCA9634_SCALED: I2CDevice[PCA963x] = I2CDevice(
    compatible="nxp,pca9634",
    model=PCA9634,
    dts=controller("nxp,pca9634", [0], "nxp,hw-blink; nxp,period-scale = <2000>;"),
)
# An led@4 on a 4-output chip: the binding allows reg 0..3 for the PCA9633.
PCA9633_BAD_REG: I2CDevice[PCA963x] = I2CDevice(
    compatible="nxp,pca9633", model=PCA9633, dts=controller("nxp,pca9633", [0, 4])
)

CHIPS = [
    pytest.param(PCA9633_LEDS, id="pca9633"),
    pytest.param(PCA9634_LEDS, id="pca9634"),
    pytest.param(PCA9635_LEDS, id="pca9635"),
]
DECLARED = {PCA9633_LEDS: [0, 1, 3], PCA9634_LEDS: [0, 1, 7], PCA9635_LEDS: [0, 1, 15]}

Device = I2CDevice[PCA963x]
Dev = BoundDevice[PCA963x]


def led(dev: Dev, output: int) -> LED:
    """The LED of an output, by the name the driver gives an unlabelled node: devicename
    "pca963x" and "<adapter>:<address, 2 hex digits>:<reg>" (its legacy default label)."""
    adapter = dev.name.split("-")[0]
    return device_led(dev.path, f"pca963x:{adapter}:{dev.addr:02x}:{output}")


def guest_ran(dev: Dev, check: Callable[[], bool]) -> Callable[[], bool]:
    """`check`, after 1 ms of guest time: under simulated time the guest's clock stands
    still while the test polls, and work the LED core queued (a trigger's deactivation)
    is not done until guest time passes."""

    def condition() -> bool:
        dev.session.sleep(0.001)
        return check()

    return condition


def wait_output(dev: Dev, output: int, state: str) -> None:
    wait_until(
        guest_ran(dev, lambda: dev.model.output(output).state == state),
        lambda: f"output {output} is {dev.model.output(output)}, not {state}",
    )


def wait_pwm(dev: Dev, output: int, brightness: int) -> None:
    """The output in PWM (LDRx = 10) at a duty within one PWMx step of brightness / 255."""

    def reached() -> bool:
        out = dev.model.output(output)
        return out.state == "pwm" and abs(out.pwm - brightness / 255) <= 1 / 256

    wait_until(
        guest_ran(dev, reached),
        lambda: f"output {output} is {dev.model.output(output)} for {brightness}",
    )


def wait_sleeping(dev: Dev, sleeping: bool) -> None:
    wait_until(
        guest_ran(dev, lambda: dev.model.sleeping == sleeping),
        f"MODE1.SLEEP never became {int(sleeping)}",
    )


@pytest.mark.parametrize("device", CHIPS)
def test_probe(guest: RoadtestSession, device: Device) -> None:
    with guest.bound(device) as dev:
        leds = device_leds(dev.path)
        assert sorted(leds) == sorted(led(dev, n).name for n in DECLARED[device])
        for one in leds.values():
            assert LEDName.parse(one.name).devicename == "pca963x"
            assert one.max_brightness == 255  # sysfs-class-led: the default, LED_FULL
            assert one.brightness == 0
            assert one.trigger == "none"
        # Every output off, the chip in its low-power mode while none is lit.
        assert all(o.state == "off" for o in dev.model.outputs())
        assert dev.model.sleeping
        # No nxp,totem-pole or nxp,inverted-out: open-drain, not inverted.
        assert not dev.model.totem_pole and not dev.model.inverted


@pytest.mark.parametrize("device", CHIPS)
def test_brightness_reaches_pwm_and_ledout(guest: RoadtestSession, device: Device) -> None:
    with guest.bound(device) as dev:
        first, second, last = DECLARED[device]
        model = dev.model
        for output in (first, last):
            for value in (255, 128, 1, 254):
                led(dev, output).brightness = value
                assert led(dev, output).brightness == value
                if value == 255:
                    # max_brightness: LDRx = 01, fully on (7.3.6).
                    wait_output(dev, output, "on")
                else:
                    # LDRx = 10: duty PWMx / 256 (7.3.3), within a step of value / 255.
                    wait_pwm(dev, output, value)
                wait_sleeping(dev, False)
                guest.sleep(0.001)  # the oscillator's 500 us start-up
                assert model.output(output).lit
            led(dev, output).brightness = 0
            wait_output(dev, output, "off")
        # The outputs never set stayed off.
        assert model.output(second).state == "off"
        wait_sleeping(dev, True)


@pytest.mark.parametrize("device", CHIPS)
def test_sleeps_only_when_all_leds_are_off(guest: RoadtestSession, device: Device) -> None:
    with guest.bound(device) as dev:
        first, second, _ = DECLARED[device]
        led(dev, first).brightness = 255
        led(dev, second).brightness = 100
        wait_output(dev, second, "pwm")
        wait_sleeping(dev, False)
        led(dev, first).brightness = 0
        wait_output(dev, first, "off")
        # The PWM output still needs the oscillator: SLEEP stays 0.
        assert not dev.model.sleeping
        led(dev, second).brightness = 0
        wait_sleeping(dev, True)


def blink_registers(dev: Dev, output: int) -> tuple[float, float]:
    """The blink the chip makes on an output, (period, time on) in ms, from the registers:
    (GRPFREQ + 1) / 24 s and GRPPWM / 256 of it (7.3.4, 7.3.5)."""
    out = dev.model.output(output)
    assert out.state == "group" and dev.model.blinking, out
    assert out.blink_period_s is not None and out.blink_on is not None
    period = out.blink_period_s * 1000
    return period, period * out.blink_on


def assert_blinks_as_read_back(dev: Dev, output: int, delays: tuple[int, int]) -> None:
    """What delay_on/delay_off read back is what the registers make, to the ms the ABI
    counts in: the chip's period and time on, each rounded either way."""
    period, on = blink_registers(dev, output)
    delay_on, delay_off = delays
    assert abs(delay_on + delay_off - period) < 1, f"{delays} read back, period {period:.1f} ms"
    assert abs(delay_on - on) < 1, f"{delays} read back, on {on:.1f} ms of {period:.1f}"


@pytest.mark.parametrize("device", CHIPS)
def test_timer_trigger_blinks_in_hardware(guest: RoadtestSession, device: Device) -> None:
    with guest.bound(device) as dev:
        _, second, last = DECLARED[device]
        # No delays yet: blink_set chooses ("a sensible default") and reports its choice.
        delays = led(dev, last).blink()
        assert delays[0] > 0 and delays[1] > 0
        assert_blinks_as_read_back(dev, last, delays)
        assert led(dev, last).brightness == 255
        guest.sleep(0.001)  # the oscillator's 500 us start-up
        out = dev.model.output(last)
        assert out.pwm == 255 / 256 and out.lit
        # 250 ms on in a second: GRPFREQ 23 ((23 + 1) / 24 s), GRPPWM 64 (64 / 256).
        delays = led(dev, last).blink(250, 750)
        assert delays == (250, 750)
        assert blink_registers(dev, last) == (1000.0, 250.0)
        # Another LED blinks in the same group.
        led(dev, second).blink()
        assert dev.model.output(second).state == "group"
        wait_sleeping(dev, False)


@pytest.mark.parametrize("device", CHIPS)
def test_too_long_a_blink_is_replaced_and_reported(guest: RoadtestSession, device: Device) -> None:
    """500 + 20000 ms is longer than the chip's longest period (256 / 24 s, GRPFREQ FFh):
    the driver blinks otherwise, and says how through delay_on/delay_off."""
    with guest.bound(device) as dev:
        output = DECLARED[device][0]
        led(dev, output).blink(500, 500)
        delays = led(dev, output).blink(delay_off=20000)
        assert delays != (500, 20000)
        assert_blinks_as_read_back(dev, output, delays)


@pytest.mark.xfail(
    strict=True,
    reason="pca963x_blink_set() truncates the period to a GRPFREQ step and the time on to "
    "a GRPPWM step but hands back the delays it was given: 100 + 100 ms reads back so while "
    "the chip blinks (3 + 1) / 24 s = 166.7 ms, 83.3 ms on (PCA9633 7.3.4-7.3.5; leds.h: "
    "blink_set 'should adjust the timings ... if it can't match the values specified')",
)
def test_delays_read_back_what_the_chip_blinks(guest: RoadtestSession) -> None:
    with guest.bound(PCA9634_LEDS) as dev:
        delays = led(dev, 0).blink(100, 100)
        assert_blinks_as_read_back(dev, 0, delays)


def test_delay_off_zero_keeps_the_led_on(guest: RoadtestSession) -> None:
    """delay_off 0 is never off (ledtrig-timer, led_set_software_blink). GDC = time_on *
    256 / period is 256 then, which GRPPWM cannot hold: before kernel-patches/leds/0005 it
    wrapped to 0, a 0 % duty cycle (PCA9633 7.3.4), and the LED never lit."""
    with guest.bound(PCA9633_LEDS) as dev:
        led(dev, 0).blink(500, 500)
        led(dev, 0).delay_off = 0
        assert dev.model.output(0).lit


@pytest.mark.parametrize("device", CHIPS)
def test_brightness_while_blinking(guest: RoadtestSession, device: Device) -> None:
    """sysfs-class-led: 'writing non-zero to this file while trigger is active changes the
    top brightness trigger is going to use': the group blink goes on with PWMx = 100."""
    with guest.bound(device) as dev:
        output = DECLARED[device][1]
        led(dev, output).blink(250, 750)
        led(dev, output).brightness = 100
        wait_until(
            guest_ran(dev, lambda: dev.model.output(output).pwm == 100 / 256),
            lambda: f"output {output} is {dev.model.output(output)}",
        )
        assert led(dev, output).trigger == "timer"
        assert blink_registers(dev, output) == (1000.0, 250.0)


@pytest.mark.parametrize("device", CHIPS)
def test_stopping_the_timer_turns_the_led_off(guest: RoadtestSession, device: Device) -> None:
    with guest.bound(device) as dev:
        output = DECLARED[device][0]
        led(dev, output).blink(500, 500)
        led(dev, output).trigger = "none"
        wait_output(dev, output, "off")
        assert led(dev, output).brightness == 0
        wait_sleeping(dev, True)


def test_drive_properties_reach_mode2(guest: RoadtestSession) -> None:
    """nxp,totem-pole and nxp,inverted-out reach MODE2's OUTDRV and INVRT; OUTNE keeps
    its power-up 01 and DMBLNK its 0."""
    with guest.bound(PCA9634_PUSH_PULL) as dev:
        assert dev.model.totem_pole and dev.model.inverted
        assert dev.model.regs[0x01] == 0x15  # INVRT | OUTDRV | OUTNE = 01
        one = led(dev, 2)
        one.brightness = 255
        wait_output(dev, 2, "on")
        one.brightness = 0
        wait_output(dev, 2, "off")


def test_period_scale_stretches_the_blink(guest: RoadtestSession) -> None:
    """nxp,period-scale = <2000>: 500 + 500 ms asked, a 2 s period made (GRPFREQ 47),
    half of it on; delay_on/delay_off stay in the caller's milliseconds."""
    with guest.bound(PCA9634_SCALED) as dev:
        assert led(dev, 0).blink(500, 500) == (500, 500)
        assert blink_registers(dev, 0) == (2000.0, 1000.0)


def test_period_scale_of_one_chip_leaves_another_alone(guest: RoadtestSession) -> None:
    """nxp,period-scale is one chip's: before kernel-patches/leds/0006 it went into the
    chip type's shared table, and a second PCA9634 with period-scale 2000 made the first
    blink at twice the period asked for (GRPFREQ 47, 2 s, for 500 + 500 ms: PCA9633
    7.3.5)."""
    guest.require(PCA9634_LEDS, PCA9634_SCALED)
    with guest.bound(PCA9634_LEDS) as dev, guest.bound(PCA9634_SCALED):
        led(dev, 0).blink(500, 500)
        assert blink_registers(dev, 0) == (1000.0, 500.0)


def test_a_reg_beyond_the_chips_outputs_fails_the_probe(guest: RoadtestSession) -> None:
    with pytest.raises(BindError), guest.bound(PCA9633_BAD_REG):
        pass
    guest.assert_kernel_log(r"Invalid 'reg' property")


@pytest.mark.parametrize("device", CHIPS)
def test_a_failed_mode2_read_fails_the_probe(guest: RoadtestSession, device: Device) -> None:
    """Probe writes each LEDOUT and MODE1 (unchecked), then reads MODE2 and gives up with
    its error: an address NACK on that read fails the bind."""
    ledouts = {PCA9633_LEDS: 1, PCA9634_LEDS: 2, PCA9635_LEDS: 4}[device]
    with guest.device_events([Pass(ledouts + 1), TransferFails(0)]):
        with pytest.raises(BindError), guest.bound(device):
            pass
    guest.assert_kernel_log(r"leds-pca963x failed with error -\d+")


def test_a_failed_ledout_read_leaves_the_other_outputs_alone(guest: RoadtestSession) -> None:
    """A brightness write whose LEDOUT read fails changes nothing. Before
    kernel-patches/leds/0004 pca963x_brightness() took the -EIO for the register (0xfb)
    and wrote it back with LED 0's bits changed: LDR 10/11 (PCA9633 7.3.6, PWM) for the
    other outputs, lighting LEDs nobody turned on."""
    # Probe: LEDOUT, MODE1, MODE2 read, MODE2 write; then the brightness write's LEDOUT
    # read fails.
    with guest.device_events([Pass(4), TransferFails(0)]), guest.bound(PCA9633_LEDS) as dev:
        led(dev, 0).brightness = 128
        model = dev.model
    # The brightness is set by a work that unregistering the LED flushes (its last
    # value is 0): every LEDOUT value the chip got, from probe to unbind, is known now.
    others = 0xFC  # LDR1-LDR3
    assert [hex(value) for value in model.reg_writes(0x08) if value & others] == []


@pytest.mark.parametrize("device", CHIPS)
def test_unbind_turns_everything_off(guest: RoadtestSession, device: Device) -> None:
    with guest.bound(device) as dev:
        first, second, last = DECLARED[device]
        led(dev, first).brightness = 255
        led(dev, second).brightness = 30
        led(dev, last).blink(500, 500)
        wait_output(dev, second, "pwm")
        model = dev.model
    # The LED core turns each LED off as it unregisters them (flushing its work).
    assert all(o.state == "off" for o in model.outputs())
    assert model.sleeping


def test_invalid_delays_are_refused(guest: RoadtestSession) -> None:
    with guest.bound(PCA9633_LEDS) as dev:
        one = led(dev, 0)
        one.blink()
        with pytest.raises(OSError) as raised:
            (one.path / "delay_on").write_text("soon")
        assert raised.value.errno == errno.EINVAL
