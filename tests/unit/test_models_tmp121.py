"""The TMP121 model against its datasheet (TI SBOS273, "Temperature Register"), without a
guest: the 16 bits its SO shifts out for the temperatures of the datasheet's table (whose
D1, D0 are high impedance, shown as 11), most significant bit first from the chip select."""

from __future__ import annotations

import pytest

from roadtest.models.tmp121 import TMP121

# (temperature in degC, the datasheet's digital output)
TABLE = [
    (150, 0x4B07),
    (125, 0x3E87),
    (25, 0x0C87),
    (0.0625, 0x000F),
    (0, 0x0007),
    (-0.0625, 0xFFFF),
    (-25, 0xF387),
    (-55, 0xE487),
]


def read(model: TMP121, *lengths: int, tx: bytes | None = None) -> list[bytes]:
    """One message (chip select held) of transfers of `lengths` bytes, in SPI mode 0."""
    model.select()
    try:
        return [model.transfer(tx, n, 0, 8) for n in lengths]
    finally:
        model.deselect()


@pytest.mark.parametrize(("degc", "output"), TABLE)
def test_the_datasheets_table(degc: float, output: int) -> None:
    model = TMP121()
    model.temperature = degc
    assert read(model, 2) == [output.to_bytes(2, "big")]


def test_the_power_on_temperature_reads_25_degc() -> None:
    assert read(TMP121(), 2) == [b"\x0c\x87"]


def test_each_message_starts_at_d15() -> None:
    model = TMP121()
    model.temperature = -25
    # Byte by byte in one message, then a new message starts over.
    assert read(model, 1, 1) == [b"\xf3", b"\x87"]
    assert read(model, 1) == [b"\xf3"]


def test_past_d0_the_output_is_high_impedance() -> None:
    model = TMP121()
    model.temperature = 25
    assert read(model, 4) == [b"\x0c\x87\xff\xff"]


def test_what_the_host_sends_is_not_heard() -> None:
    model = TMP121()
    model.temperature = 125
    assert read(model, 2, tx=b"\x00\x00") == [b"\x3e\x87"]
    assert read(model, 2, tx=b"\xff\xff") == [b"\x3e\x87"]


def test_a_temperature_between_counts_reads_the_nearest() -> None:
    model = TMP121()
    model.temperature = 25.03  # 400.48 counts of 0.0625 degC
    assert read(model, 2) == [(400 << 3 | 0b111).to_bytes(2, "big")]
