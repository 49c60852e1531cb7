"""TI TPS6286x step-down converters (TPS62864/6/8/9): 8-bit registers over I2C.

Register map from the TPS6286x datasheet: VOUT1 and VOUT2 select the output
voltage (0.4 V + n * 5 mV; the VSEL pin picks which one is used, and the
driver only uses VOUT1), CONTROL holds the enable, mode and ramp settings.
The CONTROL reset value 0x6B (converter enabled, output discharge on, FPWM
during voltage changes, fastest ramp) is TI's answer for the family on E2E;
the RFC's model used 0x00 and flagged it as not matching reality.
"""

from __future__ import annotations

from typing import Final

from roadtest.models.base import ModelError, SMBusModel

REG_VOUT1: Final = 0x01
REG_VOUT2: Final = 0x02
REG_CONTROL: Final = 0x03
REG_STATUS: Final = 0x05

CONTROL_RESET: Final = 1 << 7  # write 1: every register back to its reset value; reads 0
CONTROL_FPWM_DURING_CHANGE: Final = 1 << 6
CONTROL_SWEN: Final = 1 << 5  # software enable
CONTROL_FPWM: Final = 1 << 4  # forced PWM; 0 is power-save (auto PFM/PWM)
CONTROL_DISCHARGE: Final = 1 << 3
CONTROL_HICCUP: Final = 1 << 2
CONTROL_RAMP_MASK: Final = 0b11

CONTROL_RESET_VALUE: Final = 0x6B
VOUT_RESET_VALUE: Final = 0x64  # 0.9 V; the real part's depends on its variant

MIN_UV: Final = 400_000
STEP_UV: Final = 5_000


def vout_microvolts(selector: int) -> int:
    return MIN_UV + selector * STEP_UV


class TPS6286x(SMBusModel):
    """The converter's register file; `status` is what the STATUS register reports."""

    def __init__(self, control: int = CONTROL_RESET_VALUE, vout: int = VOUT_RESET_VALUE) -> None:
        super().__init__(regbytes=1)
        self.power_on_control = control
        self.power_on_vout = vout
        self.status = 0x00
        self.regs: dict[int, int] = {}
        self.reset()

    def reset(self) -> None:
        self.regs = {
            REG_VOUT1: self.power_on_vout,
            REG_VOUT2: self.power_on_vout,
            REG_CONTROL: self.power_on_control,
        }

    @property
    def enabled(self) -> bool:
        return bool(self.regs[REG_CONTROL] & CONTROL_SWEN)

    @property
    def forced_pwm(self) -> bool:
        return bool(self.regs[REG_CONTROL] & CONTROL_FPWM)

    @property
    def microvolts(self) -> int:
        """The output voltage VOUT1 selects (the VSEL pin is taken as low)."""
        return vout_microvolts(self.regs[REG_VOUT1])

    def reg_read(self, addr: int) -> int:
        if addr == REG_STATUS:
            return self.status
        try:
            return self.regs[addr]
        except KeyError:
            raise ModelError(f"TPS6286x: read of reserved register {addr:#04x}") from None

    def reg_write(self, addr: int, val: int) -> None:
        if addr not in self.regs:
            raise ModelError(f"TPS6286x: write of {val:#04x} to register {addr:#04x}")
        if addr == REG_CONTROL and val & CONTROL_RESET:
            self.reset()
            return
        self.regs[addr] = val
