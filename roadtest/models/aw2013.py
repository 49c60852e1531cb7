"""Awinic AW2013 3-channel LED driver: 8-bit registers over I2C.

From the AW2013 datasheet (Awinic, V1.5, November 2017), its register list and
descriptions (from memory of it: the document itself was not at hand when this was
written; check the facts below against it):

- RSTR (0x00): reads the chip ID, 0x33; writing 0x55 resets every register.
- GCR (0x01): EN (bit 0) enables the chip (its oscillator and LED drivers).
- LCTR (0x30): LE0..LE2 (bits 0..2) enable each LED channel.
- LCFG0..LCFG2 (0x31..0x33): FO (bit 6) fade-out, FI (bit 5) fade-in, MD (bit 4: 0 the
  PWM register sets the brightness, 1 the timing registers breathe it), IMAX (bits 1..0:
  the channel's current, 0, 5, 10 or 15 mA; 0 after reset).
- PWM0..PWM2 (0x34..0x36): each channel's duty cycle, 0..255 of 255.
- LED0T0..LED2T2 (0x37..0x3F): the breathing times of each channel.

Only storage and the reset: no breathing, no interrupt (ISR, INTN).
"""

from __future__ import annotations

from typing import Final

from roadtest.models.regmap import Field, MappedSMBusModel, Register, RegisterMap

CHIP_ID: Final = 0x33
RESET_COMMAND: Final = 0x55
CHANNELS: Final = 3
EN: Final = Field("EN", 0)
MD: Final = Field("MD", 4)
IMAX: Final = Field("IMAX", 1, 0, values={"0MA": 0, "5MA": 1, "10MA": 2, "15MA": 3})
IMAX_STEP_UA: Final = 5000

REGISTERS: Final = RegisterMap(
    [
        Register("RSTR", 0x00, CHIP_ID),
        Register("GCR", 0x01, fields=(EN,)),
        Register("LCTR", 0x30, fields=tuple(Field(f"LE{n}", n) for n in range(CHANNELS))),
        *(
            Register(f"LCFG{n}", 0x31 + n, fields=(Field("FO", 6), Field("FI", 5), MD, IMAX))
            for n in range(CHANNELS)
        ),
        *(Register(f"PWM{n}", 0x34 + n) for n in range(CHANNELS)),
        *(Register(f"LED{n}T{t}", 0x37 + 3 * n + t) for n in range(CHANNELS) for t in range(3)),
    ]
)
RSTR: Final = REGISTERS["RSTR"]
GCR: Final = REGISTERS["GCR"]
LCTR: Final = REGISTERS["LCTR"]


class AW2013(MappedSMBusModel):
    """The chip's registers; what each channel drives is `current_ua(n)`."""

    register_map = REGISTERS

    def on_write(self, reg: Register, old: int, new: int) -> None:
        if reg is RSTR:
            if new == RESET_COMMAND:
                self.reset_registers()
            else:
                self.regs[RSTR.address] = CHIP_ID  # the ID is read-only

    @property
    def enabled(self) -> bool:
        return bool(EN.get(self.regs[GCR.address]))

    def current_ua(self, channel: int) -> int:
        """The mean current channel `channel` drives (uA): IMAX times the PWM duty cycle,
        when the chip and the channel are enabled and the channel is in PWM mode."""
        if not self.enabled or not self.regs[LCTR.address] >> channel & 1:
            return 0
        lcfg = self.regs[REGISTERS[f"LCFG{channel}"].address]
        if MD.get(lcfg):
            raise NotImplementedError("breathing mode is not modelled")
        duty = self.regs[REGISTERS[f"PWM{channel}"].address]
        return IMAX.get(lcfg) * IMAX_STEP_UA * duty // 255
