"""TI OPT3001 ambient light sensor (datasheet SBOS681B): 16-bit big-endian registers."""

from __future__ import annotations

from typing import Final

from roadtest.models.base import Input, ModelError, SMBusModel

REG_RESULT: Final = 0x00
REG_CONFIGURATION: Final = 0x01
REG_LOW_LIMIT: Final = 0x02
REG_HIGH_LIMIT: Final = 0x03
REG_MANUFACTURER_ID: Final = 0x7E
REG_DEVICE_ID: Final = 0x7F

CONFIG_M_MASK: Final = 0b11 << 9
CONFIG_M_SHUTDOWN: Final = 0b00 << 9
CONFIG_M_SINGLE: Final = 0b01 << 9
CONFIG_OVF: Final = 1 << 8
CONFIG_CRF: Final = 1 << 7
CONFIG_FH: Final = 1 << 6
CONFIG_FL: Final = 1 << 5
# OVF, CRF, FH and FL are status bits: the host cannot write them.
CONFIG_READ_ONLY: Final = CONFIG_OVF | CONFIG_CRF | CONFIG_FH | CONFIG_FL

RESET: Final = {
    REG_RESULT: 0x0000,
    REG_CONFIGURATION: 0xC810,
    REG_LOW_LIMIT: 0xC000,
    REG_HIGH_LIMIT: 0xBFFF,
    REG_MANUFACTURER_ID: 0x5449,  # "TI"
    REG_DEVICE_ID: 0x3001,
}


class OPT3001(SMBusModel):
    """Conversions complete at once (the guest's clock jumps anyway); `result` is what they measure.

    Simplified: no interrupt pin, no limit comparisons (FH/FL stay 0), no overflow.
    """

    result = Input[int](bits=16)  # the RESULT register

    def __init__(self) -> None:
        super().__init__(regbytes=2, byteorder="big")
        self.regs = dict(RESET)
        self.result = 0x0000

    def reg_read(self, addr: int) -> int:
        try:
            value = self.regs[addr]
        except KeyError:  # not checked first: a read is the hot path, and try costs nothing
            raise ModelError(f"OPT3001: read of undefined register {addr:#04x}") from None
        if addr == REG_CONFIGURATION:
            # Reading the configuration register clears the conversion-ready flag.
            self.regs[addr] &= ~CONFIG_CRF
        return value

    def reg_write(self, addr: int, val: int) -> None:
        if addr not in (REG_CONFIGURATION, REG_LOW_LIMIT, REG_HIGH_LIMIT):
            what = "read-only" if addr in self.regs else "undefined"
            raise ModelError(f"OPT3001: write of {val:#06x} to {what} register {addr:#04x}")
        if addr != REG_CONFIGURATION:
            self.regs[addr] = val
            return
        # Writing the configuration register also clears CRF.
        config = (val & ~CONFIG_READ_ONLY) | (self.regs[addr] & CONFIG_READ_ONLY & ~CONFIG_CRF)
        if config & CONFIG_M_MASK != CONFIG_M_SHUTDOWN:
            # A conversion starts and, in this model, is done immediately.
            self.regs[REG_RESULT] = self.result
            config |= CONFIG_CRF
            if config & CONFIG_M_MASK == CONFIG_M_SINGLE:
                # After a single-shot conversion the device returns to shutdown.
                config = (config & ~CONFIG_M_MASK) | CONFIG_M_SHUTDOWN
        self.regs[addr] = config
