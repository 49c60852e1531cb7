"""Vishay VCNL4000 proximity and ambient light sensor (datasheet 83798): 8-bit registers.

Simplified: on-demand measurements complete at once (the guest's clock jumps
anyway) and report what the test set in `als_result` / `prox_result`;
periodic modes and the IR LED current have no effect.
"""

from __future__ import annotations

from typing import Final

from roadtest.models.base import Input, ModelError, SMBusModel

REG_COMMAND: Final = 0x80
REG_PRODUCT_ID_REVISION: Final = 0x81
REG_RESERVED_82: Final = 0x82  # "without function in current version"
REG_IR_LED_CURRENT: Final = 0x83
REG_ALS_PARAM: Final = 0x84
REG_ALS_RESULT_HIGH: Final = 0x85
REG_ALS_RESULT_LOW: Final = 0x86
REG_PROX_RESULT_HIGH: Final = 0x87
REG_PROX_RESULT_LOW: Final = 0x88
REG_PROX_SIGNAL_FREQ: Final = 0x89
REG_PROX_MOD_TIMING: Final = 0x8A

COMMAND_CONFIG_LOCK: Final = 1 << 7  # read-only, always 1
COMMAND_ALS_DATA_RDY: Final = 1 << 6  # read-only; cleared by reading the result
COMMAND_PROX_DATA_RDY: Final = 1 << 5
COMMAND_ALS_OD: Final = 1 << 4  # write 1: start an ALS measurement
COMMAND_PROX_OD: Final = 1 << 3

PRODUCT_ID_REVISION: Final = 0x11  # product 1, revision 1

RESET: Final = {
    REG_COMMAND: COMMAND_CONFIG_LOCK,
    REG_PRODUCT_ID_REVISION: PRODUCT_ID_REVISION,
    REG_RESERVED_82: 0x00,
    REG_IR_LED_CURRENT: 0x02,
    REG_ALS_PARAM: 0x0D,
    REG_ALS_RESULT_HIGH: 0x00,
    REG_ALS_RESULT_LOW: 0x00,
    REG_PROX_RESULT_HIGH: 0x00,
    REG_PROX_RESULT_LOW: 0x00,
    REG_PROX_SIGNAL_FREQ: 0x00,
    REG_PROX_MOD_TIMING: 0x01,
}
READ_ONLY: Final = {
    REG_PRODUCT_ID_REVISION,
    REG_ALS_RESULT_HIGH,
    REG_ALS_RESULT_LOW,
    REG_PROX_RESULT_HIGH,
    REG_PROX_RESULT_LOW,
}


class VCNL4000(SMBusModel):
    als_result = Input[int](bits=16)  # the ALS result registers, high and low byte
    prox_result = Input[int](bits=16)  # the proximity result registers
    measurements_complete = Input[bool]()

    def __init__(self) -> None:
        super().__init__(regbytes=1)
        self.regs = dict(RESET)
        self.als_result = 0x0000
        self.prox_result = 0x0000
        # A broken or covered sensor: measurements never finish.
        self.measurements_complete = True

    def reg_read(self, addr: int) -> int:
        if addr not in self.regs:
            raise ModelError(f"VCNL4000: read of undefined register {addr:#04x}")
        value = self.regs[addr]
        if addr in (REG_ALS_RESULT_HIGH, REG_ALS_RESULT_LOW):
            self.regs[REG_COMMAND] &= ~COMMAND_ALS_DATA_RDY
        elif addr in (REG_PROX_RESULT_HIGH, REG_PROX_RESULT_LOW):
            self.regs[REG_COMMAND] &= ~COMMAND_PROX_DATA_RDY
        return value

    def reg_write(self, addr: int, val: int) -> None:
        if addr not in self.regs or addr in READ_ONLY:
            what = "read-only" if addr in self.regs else "undefined"
            raise ModelError(f"VCNL4000: write of {val:#04x} to {what} register {addr:#04x}")
        if addr != REG_COMMAND:
            self.regs[addr] = val
            return
        command = self.regs[REG_COMMAND]
        if val & COMMAND_ALS_OD and self.measurements_complete:
            self.regs[REG_ALS_RESULT_HIGH] = self.als_result >> 8
            self.regs[REG_ALS_RESULT_LOW] = self.als_result & 0xFF
            command |= COMMAND_ALS_DATA_RDY
        if val & COMMAND_PROX_OD and self.measurements_complete:
            self.regs[REG_PROX_RESULT_HIGH] = self.prox_result >> 8
            self.regs[REG_PROX_RESULT_LOW] = self.prox_result & 0xFF
            command |= COMMAND_PROX_DATA_RDY
        # The od bits read back as 0 once the (instant) measurement is over.
        self.regs[REG_COMMAND] = command
