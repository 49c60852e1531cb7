"""The VCNL4040 and VCNL4200 models against their datasheets (84274, 84430), without a guest."""

from __future__ import annotations

import pytest

from roadtest.backend.gpio import GpioLine, VirtioGpio
from roadtest.models import ModelError
from roadtest.models.vcnl4040 import (
    ALS_CONF_INT_EN,
    INT_FLAG_ALS_IF_H,
    INT_FLAG_ALS_IF_L,
    INT_FLAG_PS_IF_AWAY,
    INT_FLAG_PS_IF_CLOSE,
    PS_CONF2_HD,
    REG_ALS_CONF,
    REG_ALS_DATA,
    REG_ALS_THDH,
    REG_ALS_THDL,
    REG_PS_CONF1,
    REG_PS_DATA,
    REG_PS_THDH,
    REG_PS_THDL,
    VCNL4040,
    VCNL4200,
    VCNL40x0Family,
)
from roadtest.trace.gpio import IrqType

MODELS = [VCNL4040, VCNL4200]


def read_word(m: VCNL40x0Family, reg: int) -> int:
    m.write(bytes([reg]))
    return int.from_bytes(m.read(2), "little")


def write_word(m: VCNL40x0Family, reg: int, value: int) -> None:
    m.write(bytes([reg]) + value.to_bytes(2, "little"))


def wired(cls: type[VCNL40x0Family]) -> tuple[VCNL40x0Family, GpioLine]:
    m = cls()
    line = VirtioGpio(ngpio=1).line(0)
    line.irq_type = IrqType.EDGE_FALLING
    m.irq = line
    return m, line


def test_ids_and_reset_values() -> None:
    m4040, m4200 = VCNL4040(), VCNL4200()
    assert read_word(m4040, 0x0C) == 0x0186  # ID_L 0x86: what the driver checks (& 0xff)
    assert read_word(m4200, 0x0E) == 0x1058
    assert read_word(m4040, REG_ALS_CONF) == 0x0001  # ALS_SD, high byte 0 (table 1)
    assert read_word(m4200, REG_ALS_CONF) == 0x0101
    for m in (m4040, m4200):
        assert read_word(m, REG_PS_CONF1) == 0x0001
        assert not m.als_enabled and not m.ps_enabled


@pytest.mark.parametrize(
    ("cls", "reg"),
    [(VCNL4040, 0x0D), (VCNL4040, 0x0E), (VCNL4040, 0x0F), (VCNL4200, 0x0B), (VCNL4200, 0x0C)],
)
def test_undefined_registers_nack(cls: type[VCNL40x0Family], reg: int) -> None:
    # The VCNL4040 has no 0x0e: the 6.12 driver's probe read it (kernel-patches/iio/0002).
    m = cls()
    with pytest.raises(ModelError, match="undefined register"):
        read_word(m, reg)
    with pytest.raises(ModelError, match="undefined register"):
        write_word(m, reg, 0)


@pytest.mark.parametrize("cls", MODELS)
def test_read_only_registers(cls: type[VCNL40x0Family]) -> None:
    m = cls()
    for reg in (REG_PS_DATA, REG_ALS_DATA, 0x0A, m.reg_int_flag, m.reg_id):
        with pytest.raises(ModelError, match="read-only"):
            write_word(m, reg, 1)


@pytest.mark.parametrize("cls", MODELS)
def test_data_follows_the_light_only_while_enabled(cls: type[VCNL40x0Family]) -> None:
    m = cls()
    m.als_result = 0x1234
    assert read_word(m, REG_ALS_DATA) == 0  # shut down at reset
    write_word(m, REG_ALS_CONF, 0x0000)
    assert read_word(m, REG_ALS_DATA) == 0x1234
    write_word(m, REG_ALS_CONF, 0x0001)
    m.als_result = 0x5678
    assert read_word(m, REG_ALS_DATA) == 0x1234  # the last value, kept in shutdown


@pytest.mark.parametrize("cls", MODELS)
def test_ps_data_width(cls: type[VCNL40x0Family]) -> None:
    m = cls()
    write_word(m, REG_PS_CONF1, 0x0000)
    m.prox_result = 0xFFFF
    assert read_word(m, REG_PS_DATA) == 0x0FFF  # 12 bits unless PS_HD
    write_word(m, REG_PS_CONF1, PS_CONF2_HD)
    assert read_word(m, REG_PS_DATA) == 0xFFFF


@pytest.mark.parametrize("cls", MODELS)
def test_ps_close_and_away_interrupts_clear_on_read(cls: type[VCNL40x0Family]) -> None:
    m, line = wired(cls)
    assert line.input is True
    write_word(m, REG_PS_THDL, 0x0100)
    write_word(m, REG_PS_THDH, 0x0200)
    write_word(m, REG_PS_CONF1, PS_CONF2_HD | 3 << 8)  # enabled, close and away
    m.prox_result = 0x0200  # on the threshold: nothing
    m.measure()
    assert m.int_flags == 0 and line.input
    m.prox_result = 0x0201
    m.measure()
    assert m.int_flags == INT_FLAG_PS_IF_CLOSE and line.input is False and line.edge_latched
    assert read_word(m, m.reg_int_flag) == INT_FLAG_PS_IF_CLOSE
    assert m.int_flags == 0 and line.input  # "Once the host reads INT_Flag ..."
    m.prox_result = 0x00FF
    m.measure()
    assert read_word(m, m.reg_int_flag) == INT_FLAG_PS_IF_AWAY


@pytest.mark.parametrize("cls", MODELS)
def test_ps_interrupt_mode_and_persistence(cls: type[VCNL40x0Family]) -> None:
    m, _ = wired(cls)
    write_word(m, REG_PS_THDH, 0x0010)
    write_word(m, REG_PS_CONF1, 1 << 8 | 2 << 4)  # close only, 3 consecutive hits
    m.prox_result = 0x0011
    m.measure()
    m.measure()
    assert m.int_flags == 0
    m.measure()
    assert m.int_flags == INT_FLAG_PS_IF_CLOSE


@pytest.mark.parametrize("cls", MODELS)
def test_als_interrupts(cls: type[VCNL40x0Family]) -> None:
    m, line = wired(cls)
    write_word(m, REG_ALS_THDH, 0x1000)
    write_word(m, REG_ALS_THDL, 0x0010)
    write_word(m, REG_ALS_CONF, 0)  # enabled, interrupt off
    m.als_result = 0x2000
    m.measure()
    assert m.int_flags == 0
    write_word(m, REG_ALS_CONF, ALS_CONF_INT_EN)
    m.measure()
    assert m.int_flags == INT_FLAG_ALS_IF_H and not line.input
    m.als_result = 0x000F
    m.measure()
    assert read_word(m, m.reg_int_flag) == INT_FLAG_ALS_IF_H | INT_FLAG_ALS_IF_L
    assert line.input


def test_measure_skips_shut_down_functions() -> None:
    m = VCNL4040()
    m.als_result = m.prox_result = 0x0042
    m.measure()
    assert m.regs[REG_ALS_DATA] == 0 and m.regs[REG_PS_DATA] == 0
