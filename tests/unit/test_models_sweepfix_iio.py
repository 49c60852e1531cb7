"""The LTC1660/LTC1665, AFE4403, HTS221, ADS1100, MAX5522 and BMM150 models without a guest:
the framing and the register behaviour their modules' docstrings take from the datasheets."""

from __future__ import annotations

import pytest

from roadtest.models.ads1100 import ADS1100
from roadtest.models.afe4403 import AFE4403, CONTROL0, LEDCNTRL, SPI_READ, SW_RST
from roadtest.models.base import ModelError
from roadtest.models.bmm150 import BMM150, CHIP_ID, POWER, TRIM_BYTES
from roadtest.models.hts221 import HTS221, Calibration
from roadtest.models.ltc1660 import LTC1660, LTC1665, LTC166x
from roadtest.models.max5522 import MAX5522


def message(
    model: LTC166x | AFE4403 | MAX5522, *transfers: tuple[bytes | None, int]
) -> list[bytes]:
    model.select()
    try:
        return [model.transfer(tx, n, 0, 8) for tx, n in transfers]
    finally:
        model.deselect()


def test_ltc1660_loads_the_dac_of_its_control_code() -> None:
    model = LTC166x(LTC1660)
    message(model, (bytes([0x8F, 0xFC]), 2))  # DAC H, 1023
    message(model, (bytes([0x10, 0x04]), 2))  # DAC A, 1
    assert model.dac == [1, 0, 0, 0, 0, 0, 0, 1023]
    message(model, (bytes([0xF8, 0x00]), 2))  # all DACs, 512
    assert model.dac == [512] * 8


def test_ltc1665_takes_8_bits_left_aligned() -> None:
    model = LTC166x(LTC1665)
    message(model, (bytes([0x2F, 0xF0]), 2))  # DAC B, 255
    assert model.dac[1] == 255


def test_ltc1660_refuses_a_word_of_other_than_16_bits() -> None:
    with pytest.raises(ModelError):
        message(LTC166x(LTC1660), (bytes([0x10]), 1))


def test_afe4403_reads_only_with_spi_read_and_writes_only_without() -> None:
    model = AFE4403()
    message(model, (bytes([LEDCNTRL, 0x00, 0x12, 0x34]), 4))
    assert model.regs[LEDCNTRL] == 0x1234
    assert message(model, (bytes([LEDCNTRL]), 1), (None, 3))[1] == bytes(3)
    message(model, (bytes([CONTROL0, 0, 0, SPI_READ]), 4))
    assert message(model, (bytes([LEDCNTRL]), 1), (None, 3))[1] == bytes([0x00, 0x12, 0x34])
    message(model, (bytes([LEDCNTRL, 0, 0, 0x99]), 4))
    assert model.regs[LEDCNTRL] == 0x1234
    message(model, (bytes([CONTROL0, 0, 0, SW_RST]), 4))
    assert model.regs[LEDCNTRL] == 0 and not model.spi_read


GOOD = Calibration(40, 160, 1000, 13000, 160, 320, -200, 1400)


def test_hts221_calibration_registers_and_interpolation() -> None:
    model = HTS221(GOOD)
    model.write(bytes([0x80 | 0x32]))
    assert model.read(2) == bytes([160, 320 & 0xFF])  # T0_degC_x8, T1_degC_x8 low bytes
    model.write(bytes([0x35]))
    assert model.read(1) == bytes([1 << 2])  # T1's bits 9-8 in bits 3-2
    model.write(bytes([0x80 | 0x3C]))
    assert model.read(4) == (-200 & 0xFFFF).to_bytes(2, "little") + (1400).to_bytes(2, "little")
    assert GOOD.humidity(1000) == 20 and GOOD.humidity(13000) == 80
    model.write(bytes([0x80 | 0x0F]))
    assert model.read(1) == bytes([0xBC])


def test_ads1100_gives_the_code_then_the_configuration() -> None:
    model = ADS1100()
    model.vin, model.vdd = 1.65, 3.3
    assert model.read(3) == bytes([0x40, 0x00, 0x0C])
    model.write(bytes([0x1F]))  # single conversions, gain 8
    assert model.gain == 8 and model.read(3)[2] == 0x1F
    with pytest.raises(ModelError):
        model.read(4)


def test_max5522_records_16_bit_words() -> None:
    model = MAX5522()
    message(model, (bytes([0x91, 0x23]), 2))
    assert model.words == [0x9123]


def test_bmm150_answers_only_power_control_in_suspend() -> None:
    model = BMM150(bytes(range(TRIM_BYTES)))
    model.write(bytes([CHIP_ID]))
    assert model.read(1) == b"\x00"
    model.write(bytes([POWER, 0x01]))
    model.write(bytes([CHIP_ID]))
    assert model.read(1) == b"\x32"
    model.measure(x=-1, y=1, z=-2, rhall=5)
    model.write(bytes([0x42]))
    assert model.read(8) == bytes([0xF8, 0xFF, 0x08, 0x00, 0xFC, 0xFF, 0x15, 0x00])
