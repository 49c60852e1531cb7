"""TI TMP102 temperature sensor (datasheet SBOS397): 16-bit big-endian registers."""

from __future__ import annotations

from typing import Final

from roadtest.models.base import Input, ModelError
from roadtest.models.regmap import RO, Field, MappedSMBusModel, Register, RegisterMap

# Configuration register bits ("Configuration Register"): byte 1 is the high byte.
EM: Final = Field("EM", 4)  # extended mode: 13-bit temperatures, up to 150 degC

# Pointer register: only P1 and P0 select a register ("Pointer Register"); power-up
# values from "Configuration Register" and "High- and Low-Limit Registers".
REGISTERS: Final = RegisterMap(
    [
        Register("TEMPERATURE", 0b00, 0x0000, RO),
        Register(
            "CONFIG",
            0b01,
            0x60A0,
            fields=(
                Field("OS", 15),
                Field("R1_R0", 14, 13, access=RO),  # converter resolution: always 12 bits
                Field("F1_F0", 12, 11),
                Field("POL", 10),
                Field("TM", 9),
                Field("SD", 8),
                Field("CR1_CR0", 7, 6, values={"0.25HZ": 0, "1HZ": 1, "4HZ": 2, "8HZ": 3}),
                Field("AL", 5, access=RO),
                EM,
            ),
        ),
        Register("T_LOW", 0b10, 0x4B00),  # 75 degC
        Register("T_HIGH", 0b11, 0x5000),  # 80 degC
    ],
    width=16,
    byteorder="big",
)
TEMPERATURE: Final = REGISTERS["TEMPERATURE"]
CONFIG: Final = REGISTERS["CONFIG"]

DEGC_PER_LSB: Final = 0.0625


class TMP102(MappedSMBusModel):
    """`temperature` (degC) is what the sensor measures; reads give its last conversion.

    Conversions complete at once (the guest's clock jumps anyway). Simplified: no
    alert output, no limit comparison, no one-shot or shutdown mode.
    """

    register_map = REGISTERS
    temperature = Input[float](initial=25.0)

    def temperature_register(self) -> int:
        """The temperature register for `temperature`, in the mode the driver chose.

        Normal mode: a 12-bit two's-complement count of 0.0625 degC in D15..D4.
        Extended mode: 13 bits in D15..D3, and D0 set ("Temperature Register").
        """
        extended = bool(EM.get(self.regs[CONFIG.address]))
        bits = 13 if extended else 12
        count = round(self.temperature / DEGC_PER_LSB)
        if not -(1 << (bits - 1)) <= count < (1 << (bits - 1)):
            raise ModelError(f"TMP102: {self.temperature} degC does not fit {bits} bits")
        code = count & ((1 << bits) - 1)
        return (code << (16 - bits)) | int(extended)

    def reg_read(self, addr: int) -> int:
        if addr == TEMPERATURE.address:
            # Converted continuously: the register follows `temperature` and the mode.
            self.regs[addr] = self.temperature_register()
        return super().reg_read(addr)
