"""The MCP320x model against its datasheets' figures: the 8-bit-segment exchanges of each
datasheet's Figure 6-1 ("SPI Communication using 8-bit segments", mode 0,0), whose bit
positions differ from the ones the Linux driver uses, and the transfer function."""

from __future__ import annotations

import pytest

from roadtest.models.base import (
    VIRTIO_SPI_CPHA,
    VIRTIO_SPI_CPOL,
    VIRTIO_SPI_MODE_LSB_FIRST,
    ModelError,
)
from roadtest.models.mcp320x import (
    MCP3001,
    MCP3002,
    MCP3004,
    MCP3008,
    MCP3201,
    MCP3202,
    MCP3204,
    MCP3208,
    MCP320x,
    Part,
)


def exchange(model: MCP320x, *transfers: bytes | int, mode: int = 0, bpw: int = 8) -> bytes:
    """One message: each transfer a TX (bytes) or a read of that many bytes (int)."""
    model.select()
    rx = b""
    for t in transfers:
        if isinstance(t, int):
            rx += model.transfer(None, t, mode, bpw)
        else:
            rx += model.transfer(t, len(t), mode, bpw)
    model.deselect()
    return rx


def adc(part: Part, vref: float = 3.3, high_impedance: int = 1, **volts: float) -> MCP320x:
    model = MCP320x(part, high_impedance)
    model.vref = vref
    for name, value in volts.items():
        setattr(model, name, value)
    return model


def test_mcp3008_figure_6_1() -> None:
    # Byte 1: seven leading zeros and the start bit; byte 2: SGL/DIFF D2 D1 D0 and don't
    # cares; received byte 2: five unknown bits (high impedance), the null bit, B9 B8;
    # byte 3: B7..B0. CH5 at 1.000 V of 3.3 V: 1024 / 3.3 = 310 (floor of 310.3).
    model = adc(MCP3008, ch5=1.0)
    rx = exchange(model, bytes([0x01, 0b1101_0000, 0x00]))
    assert rx[1] == 0b11111_0_00 | 310 >> 8
    assert rx[2] == 310 & 0xFF
    # With a pull-down, the unknown bits read 0.
    rx = exchange(adc(MCP3008, high_impedance=0, ch5=1.0), bytes([0x01, 0xD0, 0x00]))
    assert rx[1] == 310 >> 8


def test_mcp3204_figure_6_1() -> None:
    # Byte 1: five zeros, start, SGL/DIFF, D2 (don't care on the MCP3204); byte 2: D1 D0
    # and don't cares; received byte 2: three unknown bits, the null bit, B11..B8.
    # CH2 at 2.5 V of 3.3 V: 4096 * 2.5 / 3.3 = 3103.03.
    model = adc(MCP3204, ch2=2.5)
    for d2 in (0, 1):  # D2 is ignored
        rx = exchange(model, bytes([0b0000_0110 | d2, 0b1000_0000, 0x00]))
        assert rx[1] == 0b111_0_0000 | 3103 >> 8
        assert rx[2] == 3103 & 0xFF


def test_mcp3208_channel_7_and_the_lsb_first_tail() -> None:
    # A fourth byte continues: B1..B11 LSB first (B0 is not repeated), then zeros.
    code = 0b1010_0110_1001
    model = adc(MCP3208, vref=4.096, ch7=code / 1000)  # 1 mV a code at 4.096 V
    rx = exchange(model, bytes([0b0000_0111, 0b1100_0000]), 4)
    assert rx[1] & 0x0F == code >> 8 and rx[2] == code & 0xFF
    tail = int.from_bytes(rx[3:5], "big")
    lsb_first = [code >> i & 1 for i in range(1, 12)]
    assert [tail >> (15 - i) & 1 for i in range(11)] == lsb_first
    assert tail & 0x1F == 0  # zeros after


@pytest.mark.parametrize("msbf,tail", [(0, True), (1, False)])
def test_mcp3202_figure_6_1_and_msbf(msbf: int, tail: bool) -> None:
    # Byte 1: seven zeros and the start bit; byte 2: SGL/DIFF ODD/SIGN MSBF, don't cares;
    # received byte 2: three unknown bits, the null bit, B11..B8; byte 3: B7..B0. MSBF 0:
    # the LSB-first tail follows (DS21034D 5.1); MSBF 1: zeros.
    model = adc(MCP3202, ch1=1.1)  # 4096 * 1.1 / 3.3 = 1365.33
    rx = exchange(model, bytes([0x01, 0b1100_0000 | msbf << 5, 0x00, 0x00]))
    assert rx[1] == 0b111_0_0000 | 1365 >> 8 and rx[2] == 1365 & 0xFF
    assert (rx[3] == 0) is not tail
    if tail:
        assert rx[3] >> 1 == sum((1365 >> (i + 1) & 1) << (6 - i) for i in range(7))


def test_mcp3002_figure_6_1() -> None:
    # Byte 1: one leading zero, start, SGL/DIFF, ODD/SIGN, MSBF, don't cares: the MSB
    # leaves on the falling edge of clock 6, so byte 1 ends with B9 B8; byte 2: B7..B0.
    model = adc(MCP3002, ch0=3.0)  # 1024 * 3 / 3.3 = 930.9
    rx = exchange(model, bytes([0b0110_1000, 0x00]))
    assert rx[0] & 0b11 == 930 >> 8 and rx[1] == 930 & 0xFF
    assert rx[0] >> 3 == 0b11111  # high impedance until the null bit (clock 6)
    assert rx[0] >> 2 & 1 == 0  # the null bit


@pytest.mark.parametrize("part,bits", [(MCP3201, 12), (MCP3001, 10)])
def test_mcp3x01_figure_6_1(part: Part, bits: int) -> None:
    # No DIN: two unknown bits, the null bit, then the result; after B0 the LSB-first
    # tail (MCP3201: "the B1 bit repeated"; MCP3001: "the B1-B4 bits repeated").
    model = adc(part, ch0=2.0, ch1=0.5)  # IN+ - IN- = 1.5 V
    code = int((1 << bits) * 1.5 / 3.3)
    word = int.from_bytes(exchange(model, 2), "big")
    assert word >> 14 == 0b11 and word >> 13 & 1 == 0
    assert word >> (13 - bits) & ((1 << bits) - 1) == code
    tail = [code >> i & 1 for i in range(1, 13 - bits + 1)]
    assert [word >> (12 - bits - i) & 1 for i in range(13 - bits)] == tail


def test_transfer_function_clamps() -> None:
    model = adc(MCP3208, vref=2.5, ch0=2.5, ch1=3.0, ch2=0.0, ch3=1.25)
    assert model.code(0) == 4095  # VIN = VREF: full scale
    assert model.code(1) == 4095
    assert model.code(2) == 0
    assert model.code(3) == 2048
    # Pseudo-differential: IN- above IN+ reads 0.
    assert model.code(2, 3) == 0
    assert model.code(3, 2) == 2048


@pytest.mark.parametrize(
    "part,config,plus,minus",
    [
        (MCP3008, 0b0_000, 0, 1),
        (MCP3008, 0b0_001, 1, 0),
        (MCP3008, 0b0_110, 6, 7),
        (MCP3008, 0b0_111, 7, 6),
        (MCP3004, 0b0_011, 3, 2),
        (MCP3204, 0b0_110, 2, 3),  # D2 ignored
        (MCP3002, 0b0_0_1, 0, 1),  # ODD/SIGN 0, MSBF 1
        (MCP3202, 0b0_1_1, 1, 0),
    ],
)
def test_differential_pairs(part: Part, config: int, plus: int, minus: int) -> None:
    # Tables 5-1/5-2: the pair's IN+ is the even channel when the last channel bit is 0.
    # The start bit at clock 1, the configuration after it; the null bit after the
    # configuration and the sample clocks, the result after the null bit.
    model = adc(part, vref=2.048)
    setattr(model, f"ch{plus}", 1.024)
    setattr(model, f"ch{minus}", 0.512)
    command = (1 << part.config_bits | config) << (31 - part.config_bits)
    null = 1 + part.config_bits + part.sample_clocks + 1
    mask = (1 << part.bits) - 1
    stream = int.from_bytes(exchange(model, command.to_bytes(4, "big")), "big")
    assert stream >> (31 - null + 1) & 1 == 0  # the null bit
    assert stream >> (32 - null - part.bits) & mask == 1 << (part.bits - 2)  # 0.512 / 2.048
    # The other way round: IN- above IN+ reads 0.
    setattr(model, f"ch{plus}", 0.5)
    stream = int.from_bytes(exchange(model, command.to_bytes(4, "big")), "big")
    assert stream >> (32 - null - part.bits) & mask == 0


def test_a_read_spread_over_transfers_and_words() -> None:
    # The same exchange in one message of three transfers, and in 16-bit words: the chip
    # sees clocks, not bytes.
    model = adc(MCP3208, ch3=1.0)
    one = exchange(model, bytes([0x06, 0xC0, 0x00]))
    split = exchange(model, b"\x06", b"\xc0", 1)
    assert split == one
    words = exchange(model, bytes([0x06, 0xC0, 0x00, 0x00]), bpw=16)
    assert words[:3] == one


@pytest.mark.parametrize(
    "mode", [VIRTIO_SPI_CPHA, VIRTIO_SPI_CPOL, VIRTIO_SPI_MODE_LSB_FIRST], ids=str
)
def test_modes_the_chip_cannot_take_fail(mode: int) -> None:
    with pytest.raises(ModelError):
        exchange(adc(MCP3008), b"\x01", mode=mode)
    exchange(adc(MCP3008), b"\x01", mode=VIRTIO_SPI_CPHA | VIRTIO_SPI_CPOL)  # mode 1,1
