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

from roadtest.models.regmap import RO, Field, MappedSMBusModel, Register, RegisterMap

RESET: Final = Field("RESET", 7)  # write 1: every register back to its reset value; reads 0
SWEN: Final = Field("SWEN", 5)  # software enable
FPWM: Final = Field("FPWM", 4)  # forced PWM; 0 is power-save (auto PFM/PWM)

VOUT_RESET_VALUE: Final = 0x64  # 0.9 V; the real part's depends on its variant

REGISTERS: Final = RegisterMap(
    [
        Register("VOUT1", 0x01, VOUT_RESET_VALUE),
        Register("VOUT2", 0x02, VOUT_RESET_VALUE),
        Register(
            "CONTROL",
            0x03,
            0x6B,
            fields=(
                RESET,
                Field("FPWM_DURING_CHANGE", 6),
                SWEN,
                FPWM,
                Field("DISCHARGE", 3),
                Field("HICCUP", 2),
                Field("RAMP", 1, 0),
            ),
        ),
        Register("STATUS", 0x05, 0x00, RO),
    ]
)
VOUT1: Final = REGISTERS["VOUT1"]
CONTROL: Final = REGISTERS["CONTROL"]
STATUS: Final = REGISTERS["STATUS"]

# The names the tests use.
REG_VOUT1: Final = VOUT1.address
REG_CONTROL: Final = CONTROL.address
REG_STATUS: Final = STATUS.address
CONTROL_RESET: Final = RESET.mask
CONTROL_SWEN: Final = SWEN.mask
CONTROL_FPWM: Final = FPWM.mask
CONTROL_RESET_VALUE: Final = CONTROL.reset

MIN_UV: Final = 400_000
STEP_UV: Final = 5_000


def vout_microvolts(selector: int) -> int:
    return MIN_UV + selector * STEP_UV


class TPS6286x(MappedSMBusModel):
    """The converter's register file; `status` is what the STATUS register reports."""

    register_map = REGISTERS

    def __init__(self, control: int = CONTROL.reset, vout: int = VOUT_RESET_VALUE) -> None:
        """`control`, `vout`: the power-on CONTROL and VOUT1/VOUT2 values."""
        super().__init__({"CONTROL": control, "VOUT1": vout, "VOUT2": vout})

    @property
    def status(self) -> int:
        return self.regs[STATUS.address]

    @status.setter
    def status(self, value: int) -> None:
        self.regs[STATUS.address] = value

    @property
    def enabled(self) -> bool:
        return bool(SWEN.get(self.regs[CONTROL.address]))

    @property
    def forced_pwm(self) -> bool:
        return bool(FPWM.get(self.regs[CONTROL.address]))

    @property
    def microvolts(self) -> int:
        """The output voltage VOUT1 selects (the VSEL pin is taken as low)."""
        return vout_microvolts(self.regs[VOUT1.address])

    def on_write(self, reg: Register, old: int, new: int) -> None:
        if reg is CONTROL and RESET.get(new):
            # The registers the host writes go back to reset; STATUS reports what it sees.
            status = self.status
            self.reset_registers()
            self.status = status
