"""ST LIS3LV02DL 3-axis accelerometer: 8-bit registers over I2C.

From the LIS3LV02DL datasheet (ST, Rev 2, January 2008), "Register mapping" and
"Register description" (from memory of it: the document itself was not at hand when this
was written; check the facts below against it):

- WHO_AM_I (0x0F, read-only) reads 0x3A.
- CTRL_REG1 (0x20, reset 0x07): PD1..PD0 (bits 7..6, 00 power-down, 11 on), DF1..DF0
  (bits 5..4, the decimation: 40, 160, 640 or 2560 Hz), ST (bit 3, self-test), Zen, Yen,
  Xen (bits 2..0, the axes enabled).
- CTRL_REG2 (0x21, reset 0x00): FS (bit 7, full scale: 0 is +-2 g, 1 is +-6 g), BDU,
  BLE (bit 5, big-endian), BOOT (bit 4, reloads the trimming and clears itself), IEN,
  DRDY, SIM, DAS (bit 0: 0 is 12-bit right-justified, 1 16-bit left-justified data).
- CTRL_REG3 (0x22, reset 0x08).
- OUTX_L..OUTZ_H (0x28..0x2D, read-only): each axis as a two's complement word, low byte
  first. Sensitivity in 12-bit mode: 1024 LSB/g at +-2 g, 340 LSB/g at +-6 g.
- The free-fall/wake-up (0x30..0x36) and direction-detection (0x38..0x3F) registers.

Only what the tests need: `x`, `y`, `z` (in g) are what the sensor measures, read as the
full scale and data alignment say. Not modelled: BLE (the data is always little-endian),
BDU, self-test, the interrupts, power-down (the outputs are read as if the chip were on),
the offset and gain trimming registers.
"""

from __future__ import annotations

from typing import Final

from roadtest.models.base import Input
from roadtest.models.regmap import RO, Field, MappedSMBusModel, Register, RegisterMap

WHO_AM_I_VALUE: Final = 0x3A
FS: Final = Field("FS", 7)
BOOT: Final = Field("BOOT", 4)
DAS: Final = Field("DAS", 0)
LSB_PER_G: Final = (1024, 340)  # by FS, in 12-bit mode

REGISTERS: Final = RegisterMap(
    [
        Register("WHO_AM_I", 0x0F, WHO_AM_I_VALUE, RO),
        Register(
            "CTRL_REG1",
            0x20,
            0x07,
            fields=(
                Field("PD", 7, 6),
                Field("DF", 5, 4),
                Field("ST", 3),
                Field("ZEN", 2),
                Field("YEN", 1),
                Field("XEN", 0),
            ),
        ),
        Register(
            "CTRL_REG2",
            0x21,
            0x00,
            fields=(
                FS,
                Field("BDU", 6),
                Field("BLE", 5),
                BOOT,
                Field("IEN", 3),
                Field("DRDY", 2),
                Field("SIM", 1),
                DAS,
            ),
        ),
        Register("CTRL_REG3", 0x22, 0x08),
        Register("HP_FILTER_RESET", 0x23, access=RO),
        Register("STATUS_REG", 0x27, access=RO),
        Register("OUTX_L", 0x28, access=RO),
        Register("OUTX_H", 0x29, access=RO),
        Register("OUTY_L", 0x2A, access=RO),
        Register("OUTY_H", 0x2B, access=RO),
        Register("OUTZ_L", 0x2C, access=RO),
        Register("OUTZ_H", 0x2D, access=RO),
        Register("FF_WU_CFG", 0x30),
        Register("FF_WU_SRC", 0x31, access=RO),
        Register("FF_WU_ACK", 0x32, access=RO),
        Register("FF_WU_THS_L", 0x34),
        Register("FF_WU_THS_H", 0x35),
        Register("FF_WU_DURATION", 0x36),
        Register("DD_CFG", 0x38),
        Register("DD_SRC", 0x39, access=RO),
        Register("DD_ACK", 0x3A, access=RO),
        Register("DD_THSI_L", 0x3C),
        Register("DD_THSI_H", 0x3D),
        Register("DD_THSE_L", 0x3E),
        Register("DD_THSE_H", 0x3F),
    ]
)
CTRL_REG2: Final = REGISTERS["CTRL_REG2"]
OUTPUTS: Final = {
    REGISTERS[f"OUT{axis}_{half}"]: (axis.lower(), half == "H") for axis in "XYZ" for half in "LH"
}


class LIS3LV02DL(MappedSMBusModel):
    """The sensor's registers; `x`, `y`, `z`: the acceleration on each axis, in g."""

    register_map = REGISTERS
    x = Input[float](initial=0.0)
    y = Input[float](initial=0.0)
    z = Input[float](initial=1.0)

    def code(self, g: float) -> int:
        """The output word for `g` at the full scale and alignment CTRL_REG2 selects."""
        ctrl2 = self.regs[CTRL_REG2.address]
        counts = round(g * LSB_PER_G[FS.get(ctrl2)])
        counts = max(-2048, min(2047, counts))  # 12 bits
        if DAS.get(ctrl2):
            counts <<= 4  # 16-bit left-justified
        return counts & 0xFFFF

    def reg_read(self, addr: int) -> int:
        reg = REGISTERS.get(addr)
        if reg is not None and reg in OUTPUTS:
            axis, high = OUTPUTS[reg]
            word = self.code(float(getattr(self, axis)))
            self.regs[addr] = word >> 8 if high else word & 0xFF
        return super().reg_read(addr)

    def on_write(self, reg: Register, old: int, new: int) -> None:
        if reg is CTRL_REG2 and BOOT.get(new):
            self.regs[reg.address] = BOOT.set(new, 0)  # the reload is done at once
