"""The VCNL4000 model against its datasheet (Vishay 83798), without a guest.

Expected values are the datasheet's register descriptions: registers #0-#10
at 0x80-0x8A, 8 bits each; the command register's bits; the product ID and
revision; results in two registers, high byte first.
"""

from __future__ import annotations

import pytest

from roadtest.models import ModelError
from roadtest.models.vcnl4000 import VCNL4000

# Register #0, the command register.
CONFIG_LOCK = 1 << 7  # read only, always 1
ALS_DATA_RDY = 1 << 6  # read only
PROX_DATA_RDY = 1 << 5  # read only
ALS_OD = 1 << 4  # write 1: one on-demand ambient light measurement
PROX_OD = 1 << 3  # write 1: one on-demand proximity measurement


def read(m: VCNL4000, reg: int, length: int = 1) -> bytes:
    m.write(bytes([reg]))
    return m.read(length)


def read8(m: VCNL4000, reg: int) -> int:
    return read(m, reg)[0]


def write8(m: VCNL4000, reg: int, value: int) -> None:
    m.write(bytes([reg, value]))


def test_reset_state() -> None:
    m = VCNL4000()
    assert read8(m, 0x80) == CONFIG_LOCK  # no data ready, no measurement running
    assert read8(m, 0x81) == 0x11  # product ID 1 (bits 7:4), revision 1 (bits 3:0)
    assert read8(m, 0x83) & 0x3F == 2  # IR LED current value 2: 20 mA


@pytest.mark.parametrize(
    ("od", "ready", "result_reg", "attr"),
    [(ALS_OD, ALS_DATA_RDY, 0x85, "als_result"), (PROX_OD, PROX_DATA_RDY, 0x87, "prox_result")],
)
def test_an_on_demand_measurement(od: int, ready: int, result_reg: int, attr: str) -> None:
    m = VCNL4000()
    setattr(m, attr, 0x1234)
    assert not read8(m, 0x80) & ready
    write8(m, 0x80, od)
    assert read8(m, 0x80) & ready
    # The result is two registers, high byte first: one 2-byte read gets both.
    assert read(m, result_reg, 2) == b"\x12\x34"
    # Reading a result register resets its data-ready bit.
    assert not read8(m, 0x80) & ready


@pytest.mark.parametrize("result_reg", [0x85, 0x86])
def test_either_result_register_resets_als_data_ready(result_reg: int) -> None:
    m = VCNL4000()
    write8(m, 0x80, ALS_OD | PROX_OD)
    assert read8(m, 0x80) & (ALS_DATA_RDY | PROX_DATA_RDY) == ALS_DATA_RDY | PROX_DATA_RDY
    read8(m, result_reg)
    assert read8(m, 0x80) & (ALS_DATA_RDY | PROX_DATA_RDY) == PROX_DATA_RDY


def test_a_measurement_that_never_finishes_never_sets_data_ready() -> None:
    m = VCNL4000()
    m.measurements_complete = False
    write8(m, 0x80, ALS_OD | PROX_OD)
    assert read8(m, 0x80) & (ALS_DATA_RDY | PROX_DATA_RDY) == 0


def test_the_read_only_command_bits_stay() -> None:
    m = VCNL4000()
    write8(m, 0x80, ALS_DATA_RDY | PROX_DATA_RDY)  # no measurement requested
    assert read8(m, 0x80) == CONFIG_LOCK


@pytest.mark.parametrize("reg", [0x81, 0x85, 0x86, 0x87, 0x88])
def test_writing_a_read_only_register_is_a_model_error(reg: int) -> None:
    m = VCNL4000()
    before = read8(m, reg)
    with pytest.raises(ModelError, match=f"read-only register {reg:#04x}"):
        write8(m, reg, 0x55)
    assert read8(m, reg) == before


@pytest.mark.parametrize("reg", [0x00, 0x7F, 0x8B, 0xFF])
def test_an_undefined_register_is_a_model_error(reg: int) -> None:
    m = VCNL4000()
    with pytest.raises(ModelError, match=f"read of undefined register {reg:#04x}"):
        read8(m, reg)
    with pytest.raises(ModelError, match=f"write of 0x00 to undefined register {reg:#04x}"):
        write8(m, reg, 0x00)
