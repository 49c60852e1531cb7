"""Bosch BMP280 barometric pressure and temperature sensor, on I2C or SPI (datasheet
BST-BMP280-DS001, revision 1.23).

One model for both buses (`SPIRegisters`): an `I2CDevice` attaches it on I2C (at 0x76 or
0x77, by the SDO pin), an `SPIDevice` on SPI. The framing, from the datasheet's section 5:

- I2C (5.2): a write is the register address and its data, "pairs of register addresses
  and register data" for several registers; a read sends the address, then reads "from
  auto-incremented register addresses".
- SPI (5.3): modes '00' and '11', CSB active low; "only 7 bits of the register addresses
  are used; the MSB of register address is not used and replaced by a read/write bit (RW =
  '0' for write and RW = '1' for read). Example: address 0xF7 is accessed by using SPI
  register address 0x77. For write access, the byte 0x77 is transferred, for read access,
  the byte 0xF7 is transferred." A write is pairs of control byte and data; a read is one
  control byte, then data with the address auto-incremented.

The memory map (4.2, Table 18): calibration data calib00..calib25 at 0x88..0xA1 (read
only; the trimming parameters dig_T1..dig_P9 are the 16-bit little-endian words at
0x88..0x9F, Table 17), id 0xD0 (0x58), reset 0xE0 (0xB6 resets the device, "the readout
value is always 0x00"), status 0xF3 (measuring, im_update), ctrl_meas 0xF4 (osrs_t 7:5,
osrs_p 4:2, mode 1:0), config 0xF5 (t_sb 7:5, filter 4:2, spi3w_en 0), press 0xF7..0xF9
and temp 0xFA..0xFC (the 20-bit raw values ut/up in msb[7:0], lsb[7:0], xlsb[7:4]).

Measurements: the test sets the raw values the ADC produces, `adc_t` and `adc_p` (their
power-on values are the datasheet's example, Table 16: adc_T = 519888, adc_P = 415148),
and the part's trimming parameters are `calibration` (by default the same example's,
dig_T1 = 27504 ...). A measurement is made in normal mode at each read of the data
registers and in forced mode when ctrl_meas starts one (the chip then goes back to sleep,
mode 00); in sleep mode the registers keep the last one. A measurement skipped (osrs 000)
reads 0x80000; otherwise its resolution is 16 + (osrs - 1) bits (Tables 4 and 5: x1 16
bit ... x16 20 bit), the bits below it 0. The registers hold 0x80000 from reset until the
first measurement (the reset values of Table 18).

Simplified: measurements complete at once (no measuring/im_update in status), the IIR
filter and the standby time are stored, not applied; 3-wire SPI (spi3w_en) is not
modelled (a ModelError).
"""

from __future__ import annotations

from dataclasses import astuple, dataclass
from typing import Final

from roadtest.models.base import Input, ModelError
from roadtest.models.regmap import RO, Field, MappedSMBusModel, Register, RegisterMap
from roadtest.models.spi_registers import SPIFraming, SPIRegisters

CHIP_ID: Final = 0x58
RESET_COMMAND: Final = 0xB6
SKIPPED: Final = 0x80000

REG_CALIB_FIRST: Final = 0x88
REG_CALIB_LAST: Final = 0xA1
REG_ID: Final = 0xD0
REG_RESET: Final = 0xE0
REG_STATUS: Final = 0xF3
REG_CTRL_MEAS: Final = 0xF4
REG_CONFIG: Final = 0xF5
REG_PRESS_MSB: Final = 0xF7
REG_PRESS_LSB: Final = 0xF8
REG_PRESS_XLSB: Final = 0xF9
REG_TEMP_MSB: Final = 0xFA
REG_TEMP_LSB: Final = 0xFB
REG_TEMP_XLSB: Final = 0xFC

OSRS_T: Final = Field("osrs_t", 7, 5)
OSRS_P: Final = Field("osrs_p", 4, 2)
MODE: Final = Field("mode", 1, 0, values={"SLEEP": 0, "FORCED": 1, "NORMAL": 3})
T_SB: Final = Field("t_sb", 7, 5)
FILTER: Final = Field("filter", 4, 2)
SPI3W_EN: Final = Field("spi3w_en", 0)

MODE_SLEEP: Final = 0
MODE_NORMAL: Final = 3


@dataclass(frozen=True)
class Calibration:
    """The trimming parameters (Table 17), in register order."""

    dig_T1: int = 27504  # unsigned short
    dig_T2: int = 26435
    dig_T3: int = -1000
    dig_P1: int = 36477  # unsigned short
    dig_P2: int = -10685
    dig_P3: int = 3024
    dig_P4: int = 2855
    dig_P5: int = 140
    dig_P6: int = -7
    dig_P7: int = 15500
    dig_P8: int = -14600
    dig_P9: int = 6000

    def registers(self) -> dict[int, int]:
        """{address: byte} of calib00..calib23 (0x88..0x9F): each word little-endian."""
        words = astuple(self)
        data = b"".join(
            w.to_bytes(2, "little", signed=i not in (0, 3)) for i, w in enumerate(words)
        )
        return {REG_CALIB_FIRST + i: b for i, b in enumerate(data)}


DATASHEET_EXAMPLE: Final = Calibration()

REGISTERS: Final = RegisterMap(
    [
        *(
            Register(f"calib{i:02d}", REG_CALIB_FIRST + i, 0, RO)
            for i in range(REG_CALIB_LAST - REG_CALIB_FIRST + 1)
        ),
        Register("id", REG_ID, CHIP_ID, RO),
        Register("reset", REG_RESET, 0x00),
        Register("status", REG_STATUS, 0x00, RO),
        Register("ctrl_meas", REG_CTRL_MEAS, 0x00, fields=(OSRS_T, OSRS_P, MODE)),
        Register(
            "config",
            REG_CONFIG,
            0x00,
            fields=(T_SB, FILTER, Field("reserved", 1, reserved=True), SPI3W_EN),
        ),
        Register("press_msb", REG_PRESS_MSB, 0x80, RO),
        Register("press_lsb", REG_PRESS_LSB, 0x00, RO),
        Register("press_xlsb", REG_PRESS_XLSB, 0x00, RO),
        Register("temp_msb", REG_TEMP_MSB, 0x80, RO),
        Register("temp_lsb", REG_TEMP_LSB, 0x00, RO),
        Register("temp_xlsb", REG_TEMP_XLSB, 0x00, RO),
    ],
    width=8,
)

SPI_FRAMING: Final = SPIFraming(
    read_bit=7,
    read_level=1,
    address_mask=0x7F,
    address_base=0x80,
    auto_increment=True,
    write_pairs=True,
    modes=frozenset({0, 3}),
)


def resolution(raw: int, osrs: int) -> int:
    """A 20-bit raw value as a measurement with oversampling setting `osrs` reports it."""
    if osrs == 0:
        return SKIPPED
    bits = 15 + min(osrs, 5)  # x1: 16 bits ... x16 (101 and above): 20 bits
    return raw & ~((1 << (20 - bits)) - 1) & 0xFFFFF


class BMP280(SPIRegisters, MappedSMBusModel):
    """A BMP280 after power-on, in sleep mode, with `calibration` in its NVM."""

    register_map = REGISTERS
    spi_framing = SPI_FRAMING
    adc_t = Input[int](bits=20, initial=519888)
    adc_p = Input[int](bits=20, initial=415148)

    def __init__(
        self, calibration: Calibration = DATASHEET_EXAMPLE, chip_id: int = CHIP_ID
    ) -> None:
        self.calibration = calibration
        self.chip_id = chip_id
        super().__init__()

    def reset_registers(self) -> None:
        super().reset_registers()
        regs = dict(self.regs)
        regs.update(self.calibration.registers())
        regs[REG_ID] = self.chip_id
        self.regs = regs

    # Measurements

    def _measure(self) -> None:
        ctrl = self.regs[REG_CTRL_MEAS]
        up = resolution(self.adc_p, OSRS_P.get(ctrl))
        ut = resolution(self.adc_t, OSRS_T.get(ctrl))
        for first, raw in ((REG_PRESS_MSB, up), (REG_TEMP_MSB, ut)):
            self.regs[first] = raw >> 12
            self.regs[first + 1] = raw >> 4 & 0xFF
            self.regs[first + 2] = (raw & 0xF) << 4

    def reg_read(self, addr: int) -> int:
        if REG_PRESS_MSB <= addr <= REG_TEMP_XLSB and MODE.get(self.regs[REG_CTRL_MEAS]) == 3:
            self._measure()
        return super().reg_read(addr)

    def on_write(self, reg: Register, old: int, new: int) -> None:
        if reg.address == REG_RESET:
            self.regs[REG_RESET] = 0x00  # "the readout value is always 0x00"
            if new == RESET_COMMAND:
                self.reset_registers()
        elif reg.address == REG_CONFIG and SPI3W_EN.get(new):
            raise ModelError("BMP280: 3-wire SPI (spi3w_en) is not modelled")
        elif reg.address == REG_CTRL_MEAS and MODE.get(new) in (1, 2):
            # Forced mode: one measurement, then back to sleep.
            self._measure()
            self.regs[REG_CTRL_MEAS] = MODE.set(new, MODE_SLEEP)

    # I2C: a write is pairs of register address and data (5.2.1).

    def write(self, data: bytes) -> None:
        if len(data) <= 2:
            super().write(data)
            return
        if len(data) % 2:
            raise ModelError(
                f"BMP280: an I2C write of {len(data)} bytes is not pairs of register address "
                "and data"
            )
        for i in range(0, len(data), 2):
            super().write(data[i : i + 2])
