"""Vishay VCNL4000 proximity and ambient light sensor (datasheet 83798): 8-bit registers.

The register map is the datasheet's "Register Functions" (registers #0-#10 at
0x80-0x8A), with their reset values.

Simplified: on-demand measurements complete at once (the guest's clock jumps
anyway) and report what the test set in `als_result` / `prox_result`;
periodic modes and the IR LED current have no effect.
"""

from __future__ import annotations

from typing import Final

from roadtest.models.base import Input
from roadtest.models.regmap import RO, Field, MappedSMBusModel, Register, RegisterMap

CONFIG_LOCK: Final = Field("CONFIG_LOCK", 7, access=RO)  # always 1
ALS_DATA_RDY: Final = Field("ALS_DATA_RDY", 6, access=RO)  # cleared by reading the result
PROX_DATA_RDY: Final = Field("PROX_DATA_RDY", 5, access=RO)
ALS_OD: Final = Field("ALS_OD", 4)  # write 1: start an ALS measurement
PROX_OD: Final = Field("PROX_OD", 3)

REGISTERS: Final = RegisterMap(
    [
        Register(
            "COMMAND",
            0x80,
            0x80,
            fields=(
                CONFIG_LOCK,
                ALS_DATA_RDY,
                PROX_DATA_RDY,
                ALS_OD,
                PROX_OD,
                Field("NA", 2, 0, reserved=True),
            ),
        ),
        Register(
            "PRODUCT_ID_REVISION",
            0x81,
            0x11,  # product 1, revision 1
            RO,
            (Field("PRODUCT_ID", 7, 4), Field("REVISION_ID", 3, 0)),
        ),
        Register("RESERVED_82", 0x82, 0x00),  # "without function in current version"
        Register(
            "IR_LED_CURRENT",
            0x83,
            0x02,  # 20 mA
            fields=(Field("FUSE_PROG_ID", 7, 6, access=RO), Field("IR_LED_CURRENT_VALUE", 5, 0)),
        ),
        Register("ALS_PARAM", 0x84, 0x0D),
        Register("ALS_RESULT_HIGH", 0x85, 0x00, RO),
        Register("ALS_RESULT_LOW", 0x86, 0x00, RO),
        Register("PROX_RESULT_HIGH", 0x87, 0x00, RO),
        Register("PROX_RESULT_LOW", 0x88, 0x00, RO),
        Register("PROX_SIGNAL_FREQ", 0x89, 0x00),
        Register("PROX_MOD_TIMING", 0x8A, 0x01),
    ]
)
COMMAND: Final = REGISTERS["COMMAND"]
ALS_RESULT = (REGISTERS["ALS_RESULT_HIGH"], REGISTERS["ALS_RESULT_LOW"])
PROX_RESULT = (REGISTERS["PROX_RESULT_HIGH"], REGISTERS["PROX_RESULT_LOW"])


class VCNL4000(MappedSMBusModel):
    register_map = REGISTERS
    als_result = Input[int](bits=16, initial=0x0000)  # the ALS result registers, high and low byte
    prox_result = Input[int](bits=16, initial=0x0000)  # the proximity result registers
    # False: a broken or covered sensor, whose measurements never finish.
    measurements_complete = Input[bool](initial=True)

    def on_read(self, reg: Register) -> None:
        if reg in ALS_RESULT:
            self.regs[COMMAND.address] &= ~ALS_DATA_RDY.mask
        elif reg in PROX_RESULT:
            self.regs[COMMAND.address] &= ~PROX_DATA_RDY.mask

    def on_write(self, reg: Register, old: int, new: int) -> None:
        if reg is not COMMAND:
            return
        # The od bits read back as 0 once the (instant) measurement is over.
        command = new & ~(ALS_OD.mask | PROX_OD.mask)
        if ALS_OD.get(new) and self.measurements_complete:
            self._measured(ALS_RESULT, self.als_result)
            command |= ALS_DATA_RDY.mask
        if PROX_OD.get(new) and self.measurements_complete:
            self._measured(PROX_RESULT, self.prox_result)
            command |= PROX_DATA_RDY.mask
        self.regs[COMMAND.address] = command

    def _measured(self, result: tuple[Register, Register], value: int) -> None:
        high, low = result
        self.regs[high.address] = value >> 8
        self.regs[low.address] = value & 0xFF
