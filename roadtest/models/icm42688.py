"""TDK InvenSense ICM-42688-P 6-axis IMU, on I2C or SPI: only what a probe reads first.

Written from the ICM-42688-P datasheet, document DS-000347, revision 1.7. The document's
number, revision and its statement that the chip has "a separate digital IO supply, VDDIO"
beside VDD are from the text at hand; the register facts below are from memory of its
register map (section 13, "Register Map", and 14, "User Bank 0 Register Map -
Descriptions"), marked "(memory)".

- Registers are 8-bit, in banks; REG_BANK_SEL (76h, at the same address in every bank)
  selects the bank in bits 2:0 (memory). This model has bank 0 only: selecting another
  bank is a model error.
- WHO_AM_I (bank 0, 75h, read-only) reads 47h (memory).
- DEVICE_CONFIG (bank 0, 11h): bit 0 SOFT_RESET_CONFIG, 1 = software reset; the chip
  takes 1 ms to reset, after which it reads 0 again and the registers are back at their
  reset values (memory).
- INT_STATUS (bank 0, 2Dh, read-only, cleared on read): bit 4 RESET_DONE_INT, set when a
  reset (power-on or software) is done (memory).
- SPI (section 9, memory): mode 0 or 3; the first byte's bit 7 is R/W (1 = read), bits
  6:0 the register address; the address counts on in a burst. That is regmap-spi's
  default framing.

Simplified: the reset is done at once (the driver waits the 1 ms anyway); no other
register of the chip is modelled, so this model can only be probed as far as the reset.
A model made with `whoami` answers another WHO_AM_I, as a chip other than the ICM-42688-P
(or none) would; `reset_done=False` never reports the reset done.
"""

from __future__ import annotations

from typing import Final

from roadtest.models.base import ModelError
from roadtest.models.regmap import RO, Field, MappedSMBusModel, Register, RegisterMap
from roadtest.models.spi_registers import SPIFraming, SPIRegisters

WHO_AM_I_VALUE: Final = 0x47

BANK_SEL: Final = Field("BANK_SEL", 2, 0)
SOFT_RESET_CONFIG: Final = Field("SOFT_RESET_CONFIG", 0)
RESET_DONE_INT: Final = Field("RESET_DONE_INT", 4)

REG_DEVICE_CONFIG: Final = 0x11
REG_INT_STATUS: Final = 0x2D
REG_WHO_AM_I: Final = 0x75
REG_BANK_SEL: Final = 0x76

REGISTERS: Final = RegisterMap(
    [
        Register("DEVICE_CONFIG", REG_DEVICE_CONFIG, 0x00, fields=[SOFT_RESET_CONFIG]),
        Register("INT_STATUS", REG_INT_STATUS, 0x00, RO, fields=[RESET_DONE_INT]),
        Register("WHO_AM_I", REG_WHO_AM_I, WHO_AM_I_VALUE, RO),
        Register("REG_BANK_SEL", REG_BANK_SEL, 0x00, fields=[BANK_SEL]),
    ],
    width=8,
)

SPI_FRAMING: Final = SPIFraming(modes=frozenset({0, 3}))


class ICM42688(SPIRegisters, MappedSMBusModel):
    """An ICM-42688-P just powered on: its power-on reset done (RESET_DONE_INT set)."""

    register_map = REGISTERS
    spi_framing = SPI_FRAMING

    def __init__(self, whoami: int = WHO_AM_I_VALUE, reset_done: bool = True) -> None:
        self.whoami = whoami
        self.reset_done = reset_done
        super().__init__()

    def reset_registers(self) -> None:
        super().reset_registers()
        self._chip_reset()

    def _chip_reset(self) -> None:
        regs = dict(self.regs)
        regs[REG_WHO_AM_I] = self.whoami
        regs[REG_INT_STATUS] = RESET_DONE_INT.mask if self.reset_done else 0
        self.regs = regs

    def on_read(self, reg: Register) -> None:
        if reg.address == REG_INT_STATUS:
            self.regs[REG_INT_STATUS] = 0  # cleared on read

    def on_write(self, reg: Register, old: int, new: int) -> None:
        if reg.address == REG_BANK_SEL and BANK_SEL.get(new) != 0:
            raise ModelError(f"ICM-42688-P: bank {BANK_SEL.get(new)} is not modelled")
        if reg.address == REG_DEVICE_CONFIG and SOFT_RESET_CONFIG.get(new):
            super().reset_registers()
            self._chip_reset()
