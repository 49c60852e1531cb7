"""The SPI framing of register models (roadtest.models.spi_registers), against the byte
sequences of datasheets' SPI sections: NXP PCF2123 Rev. 6 (Table 43, the command byte;
Fig 25 and 26, a write and a read example), Bosch BMP280 BST-BMP280-DS001 rev. 1.23 (5.3:
"address 0xF7 is accessed by using SPI register address 0x77. For write access, the byte
0x77 is transferred, for read access, the byte 0xF7 is transferred"; 5.3.1 pairs of control
byte and data; 5.3.2 a read auto-increments), and the models that use it (the PCF2123 and
BMP280 models, checked against the same datasheets' register tables)."""

from __future__ import annotations

import datetime

import pytest

from roadtest.models.base import (
    VIRTIO_SPI_CPHA,
    VIRTIO_SPI_CPOL,
    VIRTIO_SPI_CS_HIGH,
    VIRTIO_SPI_MODE_LSB_FIRST,
    I2CModel,
    ModelError,
    SimpleSMBusModel,
    SPIModel,
)
from roadtest.models.bmp280 import BMP280, Calibration
from roadtest.models.pcf2123 import PCF2123, offset_ppm
from roadtest.models.spi_registers import SPIFraming, SPIRegisters

PCF2123_LIKE = SPIFraming(
    address_mask=0x0F, fixed_mask=0x70, fixed_bits=0x10, cs_high=True, modes=frozenset({0})
)
BMP280_LIKE = SPIFraming(address_mask=0x7F, address_base=0x80, write_pairs=True)
CS_HIGH = VIRTIO_SPI_CS_HIGH


class Chip(SPIRegisters, SimpleSMBusModel):
    """A register file (a dict) on SPI."""


def chip(framing: SPIFraming, regs: dict[int, int], regbytes: int = 1) -> Chip:
    """A register file framed on SPI by `framing`."""

    class Framed(Chip):
        spi_framing = framing

    return Framed(regs, regbytes=regbytes, byteorder="big")


def message(model: SPIModel, *transfers: bytes | int, mode: int = 0) -> list[bytes]:
    """One chip-select assertion: each transfer's TX bytes (an int: that many bytes of RX
    with no TX), what came back of each."""
    model.select()
    try:
        return [
            model.transfer(None, t, mode, 8)
            if isinstance(t, int)
            else model.transfer(t, len(t), mode, 8)
            for t in transfers
        ]
    finally:
        model.deselect()


# NXP PCF2123


def test_pcf2123_write_example() -> None:
    # Fig 25: R/W = 0, SA = 001, RA = 2 (0001 0010), then 45 and 10 in BCD.
    model = chip(PCF2123_LIKE, {r: 0 for r in range(16)})
    rx = message(model, bytes([0b0001_0010, 0x45, 0x10]), mode=CS_HIGH)
    assert model.all_reg_writes() == [(0x02, 0x45), (0x03, 0x10)]
    assert rx == [b"\xff\xff\xff"]  # SDO high impedance while the host writes
    assert model.reg_addr == 0x04  # the address counter after the two registers


def test_pcf2123_read_example() -> None:
    # Fig 26: R/W = 1, SA = 001, RA = 7 (1001 0111); Months (11) and Years (06) shift out.
    regs = {r: 0 for r in range(16)} | {0x07: 0x11, 0x08: 0x06}
    model = chip(PCF2123_LIKE, regs)
    # As spi_write_then_read sends it: the command, then a transfer that only reads.
    rx = message(model, bytes([0b1001_0111]), 2, mode=CS_HIGH)
    assert rx == [b"\xff", b"\x11\x06"]
    assert model.reg_addr == 0x09
    assert model.all_reg_writes() == []


def test_pcf2123_read_in_one_full_duplex_transfer() -> None:
    model = chip(PCF2123_LIKE, {r: r for r in range(16)})
    # What the host sends after the command is not heard during a read.
    assert message(model, bytes([0x97, 0xAA, 0x55]), mode=CS_HIGH) == [b"\xff\x07\x08"]


def test_pcf2123_other_subaddress_is_ignored() -> None:
    # "other codes will cause the device to ignore data transfer"
    regs = {r: 0x33 for r in range(16)}
    model = chip(PCF2123_LIKE, regs)
    assert message(model, bytes([0b1000_0111, 0, 0]), mode=CS_HIGH) == [b"\xff\xff\xff"]
    message(model, bytes([0b0010_0010, 0x45]), mode=CS_HIGH)
    assert model.all_reg_writes() == []
    assert model.regs[0x02] == 0x33


def test_pcf2123_address_wraps_from_0f_to_00() -> None:
    model = chip(PCF2123_LIKE, {r: r + 0x40 for r in range(16)})
    assert message(model, bytes([0x9F]), 3, mode=CS_HIGH) == [b"\xff", b"\x4f\x40\x41"]


def test_pcf2123_chip_enable_is_active_high() -> None:
    model = chip(PCF2123_LIKE, {r: 0 for r in range(16)})
    with pytest.raises(ModelError, match="active-low chip select"):
        message(model, bytes([0x92]), 1, mode=0)


def test_pcf2123_commands() -> None:
    assert PCF2123_LIKE.command(0x02, read=False) == bytes([0b0001_0010])
    assert PCF2123_LIKE.command(0x07, read=True) == bytes([0b1001_0111])
    assert PCF2123_LIKE.decode(bytes([0b1001_0111])) == (True, 0x07)
    assert PCF2123_LIKE.decode(bytes([0b1000_0111])) is None


# Bosch BMP280


def test_bmp280_read_and_write_commands() -> None:
    # "For write access, the byte 0x77 is transferred, for read access, the byte 0xF7."
    assert BMP280_LIKE.command(0xF7, read=False) == b"\x77"
    assert BMP280_LIKE.command(0xF7, read=True) == b"\xf7"
    assert BMP280_LIKE.decode(b"\x77") == (False, 0xF7)
    assert BMP280_LIKE.decode(b"\xf7") == (True, 0xF7)


def test_bmp280_write_is_pairs_of_control_byte_and_data() -> None:
    # 5.3.1: "Several pairs can be written without raising CSB."
    model = chip(BMP280_LIKE, {0xF4: 0, 0xF5: 0, 0xF6: 0})
    message(model, bytes([0x74, 0x27, 0x75, 0xA0]))
    assert model.all_reg_writes() == [(0xF4, 0x27), (0xF5, 0xA0)]
    assert model.regs[0xF6] == 0


def test_bmp280_read_auto_increments() -> None:
    # 5.3.2: one control byte, then data "the register address is automatically incremented"
    model = chip(BMP280_LIKE, {0xF7 + i: 0x10 + i for i in range(6)})
    assert message(model, b"\xf7", 6) == [b"\xff", bytes(range(0x10, 0x16))]


def test_bmp280_modes_00_and_11_only() -> None:
    # 5.3: "compatible with SPI mode '00' (CPOL = CPHA = '0') and mode '11'"
    model = chip(BMP280_LIKE, {0xD0: 0x58})
    assert message(model, b"\xd0", 1, mode=VIRTIO_SPI_CPOL | VIRTIO_SPI_CPHA)[1] == b"\x58"
    for mode in (VIRTIO_SPI_CPHA, VIRTIO_SPI_CPOL, VIRTIO_SPI_MODE_LSB_FIRST):
        with pytest.raises(ModelError, match="cannot take"):
            message(model, b"\xd0", 1, mode=mode)


def test_a_read_stops_where_the_host_stops_clocking() -> None:
    reads: list[int] = []

    class Counting(Chip):
        spi_framing = BMP280_LIKE

        def reg_read(self, addr: int) -> int:
            reads.append(addr)
            return super().reg_read(addr)

    model = Counting({0xF7: 1, 0xF8: 2})
    message(model, b"\xf7", 1)
    assert reads == [0xF7]  # the next register was not read (no side effects)


# Other conventions: a 16-bit command, dummy bytes, no auto-increment, wide registers


def test_sixteen_bit_command_with_dummy_byte() -> None:
    framing = SPIFraming(command_bits=16, read_bit=15, address_mask=0x7FFF, dummy_bytes=1)
    model = chip(framing, {0x1234: 0xAB, 0x1235: 0xCD})
    assert message(model, b"\x92\x34\x00", 2) == [b"\xff\xff\xff", b"\xab\xcd"]
    message(model, b"\x12\x35\x99")
    assert model.all_reg_writes() == [(0x1235, 0x99)]


def test_write_polarity_and_no_auto_increment() -> None:
    # R/W = 1 for a write (read_level 0): bit 7 set writes, clear reads.
    framing = SPIFraming(read_level=0, auto_increment=False)
    model = chip(framing, {0x05: 0x11, 0x06: 0x22}, regbytes=2)
    message(model, b"\x85\x12\x34\x56\x78")
    assert model.all_reg_writes() == [(0x05, 0x1234), (0x05, 0x5678)]
    assert message(model, b"\x05", 4) == [b"\xff", b"\x56\x78\x56\x78"]


def test_chip_select_rising_inside_a_register_is_refused() -> None:
    model = chip(SPIFraming(), {0x05: 0}, regbytes=2)
    with pytest.raises(ModelError, match="chip select rose after 1 of register"):
        message(model, b"\x05\x12")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"command_bits": 12},
        {"read_bit": 8},
        {"address_mask": 0xFF},  # overlaps the read bit
        {"address_mask": 0x55},  # not one run of bits
        {"fixed_mask": 0x30, "fixed_bits": 0x40},
        {"modes": frozenset({4})},
    ],
)
def test_framing_declaration_mistakes(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        SPIFraming(**kwargs)  # type: ignore[arg-type]


# One model, both buses


def test_one_model_is_both_kinds() -> None:
    assert issubclass(BMP280, I2CModel) and issubclass(BMP280, SPIModel)


def test_bmp280_chip_id_on_both_buses() -> None:
    model = BMP280()
    model.write(bytes([0xD0]))
    assert model.read(1) == b"\x58"  # I2C: the address, then a read (4.3.1: id 0x58)
    assert message(model, b"\xd0", 1) == [b"\xff", b"\x58"]  # SPI


def test_bmp280_calibration_is_little_endian_words_from_0x88() -> None:
    # Table 17: dig_T1 at 0x88/0x89 (LSB, MSB), ... dig_P9 at 0x9E/0x9F.
    model = BMP280()
    data = message(model, b"\x88", 24)[1]
    assert data[:2] == (27504).to_bytes(2, "little")
    assert data[4:6] == (-1000).to_bytes(2, "little", signed=True)
    assert data[22:24] == (6000).to_bytes(2, "little", signed=True)


def test_bmp280_measurements() -> None:
    model = BMP280()
    # Reset values (Table 18): press and temp 0x80000 until a measurement.
    assert message(model, b"\xf7", 6)[1] == bytes([0x80, 0, 0, 0x80, 0, 0])
    # Normal mode, osrs_t x2, osrs_p x16: pairs on SPI.
    message(model, bytes([0x74, 0b010_101_11]))
    model.adc_p, model.adc_t = 0x6559C, 0x7EED7
    press = message(model, b"\xf7", 6)[1]
    assert int.from_bytes(press[:3], "big") >> 4 == 0x6559C
    # ut at 17 bits (x2, Table 4's resolution): its 3 lowest bits read 0.
    assert int.from_bytes(press[3:], "big") >> 4 == 0x7EED0
    # osrs_p skipped: 0x80000.
    model.write(bytes([0xF4, 0b001_000_11]))
    assert message(model, b"\xf7", 3)[1] == bytes([0x80, 0, 0])


def test_bmp280_forced_mode_measures_once_and_sleeps() -> None:
    model = BMP280()
    model.write(bytes([0xF4, 0b001_001_01]))  # forced, x1, x1
    model.write(bytes([0xF4]))
    assert model.read(1) == bytes([0b001_001_00])  # back to sleep
    model.adc_t = 0x12345
    # x1: 16 bits; the measurement was the one forced before adc_t changed.
    assert message(model, b"\xfa", 3)[1] == bytes([0x7E, 0xED, 0x00])


def test_bmp280_soft_reset() -> None:
    model = BMP280(calibration=Calibration(dig_T1=1))
    message(model, bytes([0x74, 0x27, 0x60, 0xB6]))  # ctrl_meas, then reset <- 0xB6
    assert model.regs[0xF4] == 0x00
    assert message(model, b"\xe0\x00") == [b"\xff\x00"]  # reset reads 0x00
    assert model.regs[0x88] == 1  # the NVM's calibration is kept


def test_bmp280_i2c_write_pairs() -> None:
    model = BMP280()
    model.write(bytes([0xF4, 0x27, 0xF5, 0xA0]))
    assert model.all_reg_writes() == [(0xF4, 0x27), (0xF5, 0xA0)]


# NXP PCF2123


def test_pcf2123_software_reset_and_os() -> None:
    model = PCF2123()
    assert model.oscillator_stopped  # power-on: OS set
    model.set_time(datetime.datetime(2021, 12, 25, 11, 10, 37))
    assert not model.oscillator_stopped
    message(model, bytes([0x10, 0x58]), mode=CS_HIGH)  # Control_1 <- 58h
    assert model.oscillator_stopped
    assert message(model, bytes([0x90]), 1, mode=CS_HIGH)[1] == b"\x00"


def test_pcf2123_flags_clear_by_writing_zero() -> None:
    model = PCF2123()
    model.regs[0x01] = 0x0A  # AF, AIE
    message(model, bytes([0x11, 0x0A]), mode=CS_HIGH)  # writing 1 leaves AF
    assert model.alarm_flag
    message(model, bytes([0x11, 0x02]), mode=CS_HIGH)
    assert not model.alarm_flag


def test_pcf2123_alarm_sets_af_at_the_minute() -> None:
    model = PCF2123()
    model.set_time(datetime.datetime(2021, 1, 1, 1, 1, 10))
    # Minute 02, hour 01, day 01 enabled; weekday disabled; AIE.
    message(model, bytes([0x19, 0x02, 0x01, 0x01, 0x80]), mode=CS_HIGH)
    message(model, bytes([0x11, 0x02]), mode=CS_HIGH)
    model.advance(49)
    assert not model.alarm_flag and not model.int_asserted
    model.advance(1)
    assert model.alarm_flag and model.int_asserted
    assert model.time == datetime.datetime(2021, 1, 1, 1, 2, 0)


@pytest.mark.parametrize(
    ("register", "ppm"),
    # Table 36: normal mode +63 = +136.71, +1 = +2.17, -1 = -2.17, -64 = -138.88; course
    # mode +63 = +273.42, -64 = -277.76.
    [(0x3F, 136.71), (0x01, 2.17), (0x7F, -2.17), (0x40, -138.88), (0xBF, 273.42), (0xC0, -277.76)],
)
def test_pcf2123_offset_table(register: int, ppm: float) -> None:
    assert offset_ppm(register) == ppm
