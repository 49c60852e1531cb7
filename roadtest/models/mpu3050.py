"""InvenSense MPU-3050 three-axis gyroscope on I2C (MPU-3000/MPU-3050 Product Specification
PS-MPU-3000A and Register Map RM-MPU-3000A; its facts here are from memory of them, not
checked against a copy): 8-bit registers behind an 8-bit pointer that increments over a
multi-byte read or write.

- WHO_AM_I (00h): the I2C address' bits 6-1, 110100b: reads 68h.
- PRODUCT_ID (01h): the part and its version, read-only (the model reads 00h: the value
  of a given part is not among its facts).
- X/Y/Z_OFFS_USR (0Ch-11h), FIFO_EN (12h), AUX_VDDIO (13h), AUX_SLV_ADDR (14h),
  SMPLRT_DIV (15h), DLPF_FS_SYNC (16h), INT_CFG (17h), AUX_BURST_ADDR (18h), DMP_CFG
  (35h, 36h), USER_CTRL (3Dh): read-write, 00h at reset.
- INT_STATUS (1Ah): raw data ready in bit 0, read-only.
- TEMP_OUT (1Bh-1Ch), GYRO_X/Y/ZOUT (1Dh-22h): big-endian 16-bit, read-only.
- BANK_SEL (37h), MEM_START_ADDR (38h), MEM_R_W (39h): the memory banks, the OTP bank
  among them. Each byte read from or written to MEM_R_W is the memory's at
  MEM_START_ADDR, which then increments; the register pointer stays at 39h.
- PWR_MGM (3Eh): H_RESET in bit 7 (writing 1 resets the registers; it reads back 0),
  SLEEP in bit 6, the standby bits 5-3, CLK_SEL in bits 2-0; 00h at reset.

Simplified: no conversions (the data registers read 0), no FIFO, no DMP, no auxiliary
bus, no interrupt output; memory reads 00h and keeps no writes.
"""

from __future__ import annotations

from typing import Final

from roadtest.models.base import ModelError, SMBusModel

WHO_AM_I: Final = 0x00
WHO_AM_I_VALUE: Final = 0x68
PRODUCT_ID: Final = 0x01
INT_STATUS: Final = 0x1A
DATA_FIRST: Final = 0x1B
DATA_LAST: Final = 0x22
MEM_START_ADDR: Final = 0x38
MEM_R_W: Final = 0x39
PWR_MGM: Final = 0x3E
PWR_MGM_H_RESET: Final = 1 << 7
PWR_MGM_SLEEP: Final = 1 << 6
WRITABLE: Final = frozenset(
    {*range(0x0C, 0x19), 0x35, 0x36, 0x37, MEM_START_ADDR, MEM_R_W, 0x3D, PWR_MGM}
)
READ_ONLY: Final = frozenset({WHO_AM_I, PRODUCT_ID, INT_STATUS, *range(DATA_FIRST, DATA_LAST + 1)})


class MPU3050(SMBusModel):
    def __init__(self) -> None:
        super().__init__(regbytes=1)
        self.regs: dict[int, int] = {}
        self._reset()

    def _reset(self) -> None:
        self.regs = dict.fromkeys(WRITABLE | READ_ONLY, 0)
        self.regs[WHO_AM_I] = WHO_AM_I_VALUE

    @property
    def asleep(self) -> bool:
        return bool(self.regs[PWR_MGM] & PWR_MGM_SLEEP)

    # SMBusModel

    def read(self, length: int) -> bytes:
        if self.reg_addr == MEM_R_W:  # memory bytes, the pointer staying at MEM_R_W
            return bytes(self.reg_read(MEM_R_W) for _ in range(length))
        return super().read(length)

    def reg_read(self, addr: int) -> int:
        if addr not in self.regs:
            raise ModelError(f"mpu3050: read of undefined register {addr:#04x}")
        if addr == MEM_R_W:
            self.regs[MEM_START_ADDR] = (self.regs[MEM_START_ADDR] + 1) & 0xFF
            return 0
        return self.regs[addr]

    def reg_write(self, addr: int, val: int) -> None:
        if addr not in WRITABLE:
            raise ModelError(f"mpu3050: write of {val:#04x} to read-only register {addr:#04x}")
        if addr == MEM_R_W:
            self.regs[MEM_START_ADDR] = (self.regs[MEM_START_ADDR] + 1) & 0xFF
            return
        if addr == PWR_MGM and val & PWR_MGM_H_RESET:
            self._reset()
            return
        self.regs[addr] = val
