"""National Semiconductor LM93 hardware monitor (drivers/hwmon/lm93.c), against the sweep's
register file: no model of the chip, its registers as a plan says.

temp3_auto_pwm_min is the minimum duty cycle of temperature zones 3 and 4. On 6.12 the
driver took the duty cycle table for it from a third PWM output the chip does not have:
reading it indexed past its two PWM outputs' registers (a UBSAN report, which panicked
the guest), and both reading and writing it went by the zone 4 base temperature instead
of a PWM frequency (kernel-patches/hwmon/0003).

From the LM93 datasheet: register 0xC4 holds zones 3/4's MinPWM in bits 7:4 and their
hysteresis, FC_TH, in bits 3:0; a 4-bit duty cycle value maps to a duty cycle by the
table of the PWM frequency, and at the default 22.5 kHz (bits 2:0 of each PWM's Control
4 register, 0xCB and 0xCF, zero) step 5 is 50.00%; register 0xD3 is zone 4's base
temperature, in degrees Celsius; bit 7 of the configuration register (0xE3) reports the
chip ready. The hwmon ABI gives a duty cycle as 0-255.
"""

from __future__ import annotations

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import BoundDevice, I2CDevice, RoadtestSession, read_int, write_int
from roadtest.testing.guestpath import GuestPath

REG_ZONES_34_MIN_PWM_HYST = 0xC4
REG_PWM1_CTL4 = 0xCB
REG_PWM2_CTL4 = 0xCF
REG_ZONE4_BASE_TEMP = 0xD3
REG_CONFIG = 0xE3
CONFIG_READY = 0x80

STEP_50_PERCENT_AT_22_5_KHZ = 5
FC_TH = 2

PLAN = RegisterPlan(
    registers=(
        (REG_CONFIG, CONFIG_READY),
        (REG_PWM1_CTL4, 0x00),  # 22.5 kHz
        (REG_PWM2_CTL4, 0x00),  # 22.5 kHz
        (REG_ZONE4_BASE_TEMP, 41),  # degrees Celsius: no business of zone 3's MinPWM
        (REG_ZONES_34_MIN_PWM_HYST, STEP_50_PERCENT_AT_22_5_KHZ << 4 | FC_TH),
    )
)


def lm93() -> RegisterFile:
    return RegisterFile(PLAN)


MONITOR = I2CDevice(
    compatible="national,lm93",
    model=lm93,
    dts="""
        hardware-monitor@$addr$ {
            compatible = "national,lm93";
            reg = <0x$addr$>;
        };
    """,
)


def hwmon(dev: BoundDevice[RegisterFile]) -> GuestPath:
    return (dev.path / "hwmon").only("hwmon*")


def is_half_duty(pwm: int) -> bool:
    return abs(pwm - 255 / 2) <= 1


def test_temp3_auto_pwm_min_reads_the_22_5_khz_table(guest: RoadtestSession) -> None:
    with guest.bound(MONITOR) as dev:
        assert is_half_duty(read_int(hwmon(dev) / "temp3_auto_pwm_min"))


def test_temp3_auto_pwm_min_writes_the_22_5_khz_table(guest: RoadtestSession) -> None:
    with guest.bound(MONITOR) as dev:
        write_int(hwmon(dev) / "temp3_auto_pwm_min", 128)
        value = dev.model.value(REG_ZONES_34_MIN_PWM_HYST)
        assert value >> 4 == STEP_50_PERCENT_AT_22_5_KHZ
        assert value & 0x0F == FC_TH
