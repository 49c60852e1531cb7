"""The MLX90632 and MPU-3050 models without a guest: the framing and the register behaviour
their modules' docstrings take from the datasheets."""

from __future__ import annotations

import pytest

from roadtest.models.base import ModelError
from roadtest.models.mlx90632 import EE_VERSION, MLX90632, REG_CONTROL, REG_STATUS, ram
from roadtest.models.mpu3050 import MEM_R_W, MEM_START_ADDR, MPU3050, PWR_MGM


def test_mlx90632_reads_big_endian_words_from_16_bit_addresses() -> None:
    model = MLX90632({0x240C: 0x1234, 0x240D: 0xABCD})
    model.write(bytes([0x24, 0x0B]))
    assert model.read(6) == bytes([0x01, 0x05, 0x12, 0x34, 0xAB, 0xCD])
    assert model.words[EE_VERSION] == 0x0105


def test_mlx90632_ram_and_registers() -> None:
    model = MLX90632()
    model.set_ram(6, -2)
    assert ram(6) == 0x4005
    model.write(bytes([0x40, 0x05]))
    assert model.read(2) == b"\xff\xfe"
    model.write(bytes([0x30, 0x01, 0x00, 0x06]))
    assert model.words[REG_CONTROL] == 0x0006


def test_mlx90632_status_new_data_is_only_cleared() -> None:
    model = MLX90632()
    model.set_status(2)
    model.write(bytes([0x3F, 0xFF, 0x00, 0x08]))  # new data 0, cycle position bits ignored
    assert model.words[REG_STATUS] == 2 << 2
    model.write(bytes([0x3F, 0xFF, 0x00, 0x01]))
    assert model.words[REG_STATUS] == 2 << 2


def test_mlx90632_refuses_eeprom_and_ram_writes_and_odd_lengths() -> None:
    model = MLX90632()
    with pytest.raises(ModelError):
        model.write(bytes([0x24, 0x0B, 0x00, 0x00]))
    with pytest.raises(ModelError):
        model.write(bytes([0x40, 0x00, 0x00, 0x01]))
    with pytest.raises(ModelError):
        model.write(bytes([0x24]))
    model.write(bytes([0x24, 0x0B]))
    with pytest.raises(ModelError):
        model.read(3)
    with pytest.raises(ValueError):
        MLX90632({0x3000: 1})


def test_mpu3050_who_am_i_and_reset() -> None:
    model = MPU3050()
    model.write(bytes([0x00]))
    assert model.read(1) == b"\x68"
    model.write(bytes([0x17, 0x81]))
    model.write(bytes([PWR_MGM, 0x43]))
    assert model.asleep
    model.write(bytes([PWR_MGM, 0x80]))
    assert model.regs[0x17] == 0 and model.regs[PWR_MGM] == 0 and not model.asleep


def test_mpu3050_memory_reads_keep_the_pointer_at_mem_r_w() -> None:
    model = MPU3050()
    model.write(bytes([MEM_START_ADDR, 0x10]))
    model.write(bytes([MEM_R_W]))
    assert model.read(8) == bytes(8)
    assert model.regs[MEM_START_ADDR] == 0x18


def test_mpu3050_refuses_writes_to_read_only_registers() -> None:
    model = MPU3050()
    with pytest.raises(ModelError):
        model.write(bytes([0x00, 0x00]))
    model.write(bytes([0x50]))
    with pytest.raises(ModelError):
        model.read(1)
