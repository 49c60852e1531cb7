"""TI TMP102 temperature sensor (datasheet SBOS397): 16-bit big-endian registers."""

from __future__ import annotations

from typing import Final

from roadtest.models.base import Input, ModelError, SMBusModel

# Pointer register: only P1 and P0 select a register ("Pointer Register").
REG_TEMPERATURE: Final = 0b00
REG_CONFIG: Final = 0b01
REG_T_LOW: Final = 0b10
REG_T_HIGH: Final = 0b11

# Configuration register bits ("Configuration Register"): byte 1 is the high byte.
CONFIG_R1_R0: Final = 0b11 << 13  # converter resolution, read-only, always 12 bits
CONFIG_AL: Final = 1 << 5  # alert, read-only
CONFIG_EM: Final = 1 << 4  # extended mode: 13-bit temperatures, up to 150 degC
CONFIG_READ_ONLY: Final = CONFIG_R1_R0 | CONFIG_AL

# Power-up values ("Configuration Register", "High- and Low-Limit Registers").
RESET: Final = {
    REG_TEMPERATURE: 0x0000,
    REG_CONFIG: 0x60A0,
    REG_T_LOW: 0x4B00,  # 75 degC
    REG_T_HIGH: 0x5000,  # 80 degC
}

DEGC_PER_LSB: Final = 0.0625


class TMP102(SMBusModel):
    """`temperature` (degC) is what the sensor measures; reads give its last conversion.

    Conversions complete at once (the guest's clock jumps anyway). Simplified: no
    alert output, no limit comparison, no one-shot or shutdown mode.
    """

    temperature = Input[float]()

    def __init__(self) -> None:
        super().__init__(regbytes=2, byteorder="big")
        self.regs = dict(RESET)
        self.temperature = 25.0

    def temperature_register(self) -> int:
        """The temperature register for `temperature`, in the mode the driver chose.

        Normal mode: a 12-bit two's-complement count of 0.0625 degC in D15..D4.
        Extended mode: 13 bits in D15..D3, and D0 set ("Temperature Register").
        """
        extended = bool(self.regs[REG_CONFIG] & CONFIG_EM)
        bits = 13 if extended else 12
        count = round(self.temperature / DEGC_PER_LSB)
        if not -(1 << (bits - 1)) <= count < (1 << (bits - 1)):
            raise ModelError(f"TMP102: {self.temperature} degC does not fit {bits} bits")
        code = count & ((1 << bits) - 1)
        return (code << (16 - bits)) | int(extended)

    def reg_read(self, addr: int) -> int:
        if addr == REG_TEMPERATURE:
            return self.temperature_register()
        try:
            return self.regs[addr]
        except KeyError:
            raise ModelError(f"TMP102: read of undefined register {addr:#04x}") from None

    def reg_write(self, addr: int, val: int) -> None:
        if addr == REG_CONFIG:
            self.regs[addr] = (val & ~CONFIG_READ_ONLY) | (self.regs[addr] & CONFIG_READ_ONLY)
        elif addr in (REG_T_LOW, REG_T_HIGH):
            self.regs[addr] = val
        else:
            what = "read-only" if addr == REG_TEMPERATURE else "undefined"
            raise ModelError(f"TMP102: write of {val:#06x} to {what} register {addr:#04x}")
