"""The TPS6286x model's register file, without a guest."""

import pytest

from roadtest.models.base import ModelError
from roadtest.models.tps6286x import (
    CONTROL_RESET,
    CONTROL_RESET_VALUE,
    REG_CONTROL,
    REG_STATUS,
    REG_VOUT1,
    TPS6286x,
)


def test_reset_values_follow_the_datasheet() -> None:
    model = TPS6286x()
    assert model.reg_read(REG_CONTROL) == CONTROL_RESET_VALUE
    assert model.enabled and not model.forced_pwm
    assert model.microvolts == 900_000


def test_reset_bit_restores_every_register_and_reads_back_zero() -> None:
    model = TPS6286x()
    model.write(bytes([REG_VOUT1, 0x10]))
    model.write(bytes([REG_CONTROL, 0x00]))
    model.write(bytes([REG_CONTROL, CONTROL_RESET]))
    assert model.reg_read(REG_VOUT1) == 0x64
    assert model.reg_read(REG_CONTROL) == CONTROL_RESET_VALUE


def test_status_is_read_only_and_reserved_registers_nack() -> None:
    model = TPS6286x()
    model.status = 0x04
    assert model.reg_read(REG_STATUS) == 0x04
    with pytest.raises(ModelError):
        model.reg_write(REG_STATUS, 0)
    with pytest.raises(ModelError):
        model.reg_read(0x04)
