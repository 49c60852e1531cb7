"""TI ADS1100 16-bit delta-sigma ADC on I2C (datasheet SBAS239, "Output Register",
"Configuration Register" and "Reading from the ADS1100"/"Writing to the ADS1100").

- A write of one byte is the configuration register: ST/BSY (bit 7), bits 6-5 reserved
  (0), SC (bit 4: 0 continuous conversions, 1 single conversions), DR (bits 3-2: 128, 32,
  16, 8 SPS for 00, 01, 10, 11), PGA (bits 1-0: gain 1, 2, 4, 8). Its reset value is 8Ch:
  continuous, 8 SPS, gain 1.
- A read gives the output register, 16 bits two's complement, most significant byte
  first, then the configuration register.
- At 8 SPS the result has 16 bits: code = 32768 * gain * VIN / VDD, clamped to
  -32768..32767.

Simplified: conversions take no time (a read gives the code of `vin` now, at any data
rate as at 8 SPS, and ST/BSY reads 0), and a read past the configuration byte is a model
error (the model does not say what the chip gives there).
"""

from __future__ import annotations

from typing import Final

from roadtest.models.base import I2CModel, Input, ModelError

CONFIG_RESET: Final = 0x8C
CONFIG_WRITABLE: Final = 0x1F  # SC, DR, PGA
ST_BSY: Final = 1 << 7
SC: Final = 1 << 4


class ADS1100(I2CModel):
    """`vin` and `vdd` (volts) are the input and the supply, the reference."""

    vin = Input[float](initial=0.0)
    vdd = Input[float](initial=3.3)

    def __init__(self) -> None:
        self.vin = 0.0
        self.vdd = 3.3
        self.config = CONFIG_RESET
        self.config_writes: list[int] = []

    @property
    def gain(self) -> int:
        return 1 << (self.config & 0b11)

    def code(self) -> int:
        if self.vdd <= 0:
            raise ModelError(f"ads1100: VDD {self.vdd} V is not above 0")
        return max(-32768, min(32767, int(32768 * self.gain * self.vin / self.vdd)))

    # I2CModel

    def write(self, data: bytes) -> None:
        if len(data) != 1:
            raise ModelError(f"ads1100: a write of {len(data)} bytes; the chip takes one")
        self.config_writes.append(data[0])
        self.config = self.config & ~CONFIG_WRITABLE | data[0] & CONFIG_WRITABLE

    def read(self, length: int) -> bytes:
        if length > 3:
            raise ModelError(f"ads1100: a read of {length} bytes; the model gives 3")
        out = (self.code() & 0xFFFF).to_bytes(2, "big") + bytes([self.config & ~ST_BSY])
        return out[:length]
