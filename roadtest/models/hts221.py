"""ST HTS221 humidity and temperature sensor on I2C (datasheet DocID026425, "Register mapping",
"Register description" and "Humidity and temperature data conversion"): 8-bit registers.

- The I2C sub-address's bit 7 asks the chip to increment the address after each byte of a
  multi-byte access; bits 6..0 are the register address.
- WHO_AM_I (0Fh) reads BCh.
- HUMIDITY_OUT (28h-29h) and TEMP_OUT (2Ah-2Bh): the last conversion, 16-bit two's
  complement, low byte first.
- Calibration, programmed by ST (30h-3Fh, read-only): H0_rH_x2 and H1_rH_x2 (30h, 31h)
  are two humidities in 0.5 %RH; T0_degC_x8 and T1_degC_x8 two temperatures in 1/8 degC,
  10 bits each: their low bytes at 32h and 33h, bits 9-8 in T1/T0 msb (35h: T0's in bits
  1-0, T1's in bits 3-2). H0_T0_OUT (36h-37h), H1_T0_OUT (3Ah-3Bh), T0_OUT (3Ch-3Dh) and
  T1_OUT (3Eh-3Fh) are the outputs the chip gave at those points, 16-bit two's complement,
  low byte first. A reading is converted by linear interpolation between the two points:
  RH = H0 + (H_OUT - H0_T0_OUT) * (H1 - H0) / (H1_T0_OUT - H0_T0_OUT), and the same for
  the temperature.

Simplified: no conversions (the outputs hold what the test sets, `outputs`), no data-ready
status or interrupt, and the sub-address auto-increments whether or not bit 7 asks it (a
driver that reads one byte at a time cannot tell).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from roadtest.models.regmap import RO, MappedSMBusModel, Register, RegisterMap

AUTO_INCREMENT: Final = 0x80
WHO_AM_I_VALUE: Final = 0xBC

REGISTERS: Final = RegisterMap(
    [
        Register("WHO_AM_I", 0x0F, WHO_AM_I_VALUE, RO),
        Register("AV_CONF", 0x10, 0x1B),
        Register("CTRL_REG1", 0x20, 0x00),
        Register("CTRL_REG2", 0x21, 0x00),
        Register("CTRL_REG3", 0x22, 0x00),
        Register("STATUS_REG", 0x27, 0x00, RO),
        Register("HUMIDITY_OUT_L", 0x28, 0x00, RO),
        Register("HUMIDITY_OUT_H", 0x29, 0x00, RO),
        Register("TEMP_OUT_L", 0x2A, 0x00, RO),
        Register("TEMP_OUT_H", 0x2B, 0x00, RO),
        Register("H0_rH_x2", 0x30, 0x00, RO),
        Register("H1_rH_x2", 0x31, 0x00, RO),
        Register("T0_degC_x8", 0x32, 0x00, RO),
        Register("T1_degC_x8", 0x33, 0x00, RO),
        Register("T1_T0_msb", 0x35, 0x00, RO),
        Register("H0_T0_OUT_L", 0x36, 0x00, RO),
        Register("H0_T0_OUT_H", 0x37, 0x00, RO),
        Register("H1_T0_OUT_L", 0x3A, 0x00, RO),
        Register("H1_T0_OUT_H", 0x3B, 0x00, RO),
        Register("T0_OUT_L", 0x3C, 0x00, RO),
        Register("T0_OUT_H", 0x3D, 0x00, RO),
        Register("T1_OUT_L", 0x3E, 0x00, RO),
        Register("T1_OUT_H", 0x3F, 0x00, RO),
    ],
    width=8,
)


def _s16(name: str, value: int) -> dict[str, int]:
    if not -(1 << 15) <= value < 1 << 15:
        raise ValueError(f"{name}: {value} is not a 16-bit two's complement value")
    raw = value & 0xFFFF
    return {f"{name}_L": raw & 0xFF, f"{name}_H": raw >> 8}


@dataclass(frozen=True)
class Calibration:
    """The two calibration points, in the registers' units: humidities in 0.5 %RH,
    temperatures in 1/8 degC (10 bits), outputs as the chip's 16-bit codes."""

    h0_rh_x2: int
    h1_rh_x2: int
    h0_t0_out: int
    h1_t0_out: int
    t0_degc_x8: int
    t1_degc_x8: int
    t0_out: int
    t1_out: int

    def registers(self) -> dict[str, int]:
        for name in ("h0_rh_x2", "h1_rh_x2"):
            if not 0 <= getattr(self, name) <= 0xFF:
                raise ValueError(f"{name} does not fit 8 bits")
        for name in ("t0_degc_x8", "t1_degc_x8"):
            if not 0 <= getattr(self, name) <= 0x3FF:
                raise ValueError(f"{name} does not fit 10 bits")
        return {
            "H0_rH_x2": self.h0_rh_x2,
            "H1_rH_x2": self.h1_rh_x2,
            "T0_degC_x8": self.t0_degc_x8 & 0xFF,
            "T1_degC_x8": self.t1_degc_x8 & 0xFF,
            "T1_T0_msb": (self.t1_degc_x8 >> 8) << 2 | self.t0_degc_x8 >> 8,
            **_s16("H0_T0_OUT", self.h0_t0_out),
            **_s16("H1_T0_OUT", self.h1_t0_out),
            **_s16("T0_OUT", self.t0_out),
            **_s16("T1_OUT", self.t1_out),
        }

    def humidity(self, h_out: int) -> float:
        """The datasheet's interpolation, in %RH."""
        h0, h1 = self.h0_rh_x2 / 2, self.h1_rh_x2 / 2
        return h0 + (h_out - self.h0_t0_out) * (h1 - h0) / (self.h1_t0_out - self.h0_t0_out)


class HTS221(MappedSMBusModel):
    """One HTS221 whose calibration area holds `calibration`."""

    register_map = REGISTERS

    def __init__(self, calibration: Calibration) -> None:
        self.calibration = calibration
        super().__init__(power_on=calibration.registers())

    def outputs(self, h_out: int, t_out: int) -> None:
        """The last conversion's HUMIDITY_OUT and TEMP_OUT codes."""
        for name, value in (*_s16("HUMIDITY_OUT", h_out).items(), *_s16("TEMP_OUT", t_out).items()):
            self.regs[REGISTERS[name].address] = value

    # The sub-address's bit 7 is the auto-increment flag, not part of the address.

    def reg_read(self, addr: int) -> int:
        return super().reg_read(addr & ~AUTO_INCREMENT & 0xFF)

    def reg_write(self, addr: int, val: int) -> None:
        super().reg_write(addr & ~AUTO_INCREMENT & 0xFF, val)
