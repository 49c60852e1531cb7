"""The BMI160 model against its data sheet (BST-BMI160-DS000-07 rev. 0.8), without a guest."""

from __future__ import annotations

import math

import pytest

from roadtest.models import ModelError
from roadtest.models.bmi160 import (
    ACC_RANGES,
    ACC_STARTUP_NS,
    BMI160,
    CMD_ACC_NORMAL,
    CMD_ACC_SUSPEND,
    CMD_FIFO_FLUSH,
    CMD_GYR_FAST_STARTUP,
    CMD_GYR_NORMAL,
    CMD_SOFTRESET,
    FAST_STARTUP,
    GYR_FAST_STARTUP_NS,
    GYR_RANGES,
    GYR_STARTUP_NS,
    NORMAL,
    REG_ACC_CONF,
    REG_ACC_RANGE,
    REG_CHIP_ID,
    REG_CMD,
    REG_DATA_ACC_X_L,
    REG_DATA_GYR_X_L,
    REG_ERR_REG,
    REG_FIFO_DATA,
    REG_FIFO_LENGTH_0,
    REG_GYR_CONF,
    REG_GYR_RANGE,
    REG_INT_EN_1,
    REG_INT_MAP_1,
    REG_INT_OUT_CTRL,
    REG_INT_STATUS_1,
    REG_PMU_STATUS,
    REG_STATUS,
    SUSPEND,
    WRITE_IDLE_SUSPEND_NS,
    acc_raw,
    gyr_raw,
    odr_hz,
)
from roadtest.simtime.clock import ManualClock


def read(m: BMI160, reg: int, n: int = 1) -> bytes:
    m.write(bytes([reg]))
    return m.read(n)


def write(m: BMI160, reg: int, *values: int) -> None:
    m.write(bytes([reg, *values]))


def timed() -> tuple[BMI160, ManualClock]:
    m = BMI160()
    clock = ManualClock()
    m.clock = clock
    return m, clock


def powered(m: BMI160 | None = None) -> BMI160:
    m = m or BMI160()
    write(m, REG_CMD, CMD_ACC_NORMAL)
    write(m, REG_CMD, CMD_GYR_NORMAL)
    return m


def test_reset_values() -> None:
    m = BMI160()
    assert read(m, REG_CHIP_ID) == b"\xd1"  # 2.11.1
    assert read(m, REG_PMU_STATUS) == b"\x00"  # both suspended after power-on
    assert read(m, REG_ACC_CONF, 4) == bytes([0x28, 0x03, 0x28, 0x00])  # 100 Hz, 2 g, 2000 dps
    assert read(m, REG_FIFO_LENGTH_0, 2) == b"\x00\x00"  # an empty FIFO


def test_reserved_and_read_only_registers_are_refused() -> None:
    m = BMI160()
    for reg in (0x01, 0x25, 0x3F, 0x48, 0x6E, 0x7C, 0x7F):
        with pytest.raises(ModelError, match="undefined"):
            read(m, reg)
    with pytest.raises(ModelError, match="read-only"):
        write(m, REG_CHIP_ID, 0)
    with pytest.raises(ModelError, match="write-only"):
        read(m, REG_CMD)


def test_reserved_codes_are_refused() -> None:
    m = BMI160()
    for reg, value in ((REG_ACC_RANGE, 0x04), (REG_GYR_RANGE, 0x05), (REG_ACC_CONF, 0x20)):
        with pytest.raises(ModelError, match="reserved"):
            write(m, reg, value)
    for odr in (0x00, 0x05, 0x0E):
        with pytest.raises(ModelError, match="gyr_odr"):
            write(m, REG_GYR_CONF, 0x20 | odr)
    with pytest.raises(ModelError, match="CMD 0x13"):
        write(m, REG_CMD, 0x13)


def test_sensitivity_table() -> None:
    # Table 1: LSB/g and LSB/(deg/s) at each range
    assert {fs: lsb for fs, lsb in ACC_RANGES.values()} == {2: 16384, 4: 8192, 8: 4096, 16: 2048}
    assert [lsb / 10 for _, lsb in GYR_RANGES.values()] == [16.4, 32.8, 65.6, 131.2, 262.4]
    assert acc_raw(1.0, 0b0011) == 16384
    assert acc_raw(-2.0, 0b0011) == -32768
    assert acc_raw(2.0, 0b0011) == 32767  # clipped
    assert acc_raw(1.0, 0b1100) == 2048
    assert gyr_raw(100.0, 0) == 1640
    assert gyr_raw(-125.0, 4) == -32768
    assert [odr_hz(n) for n in (1, 2, 5, 8, 12, 13)] == [0.78125, 1.5625, 12.5, 100, 1600, 3200]


def test_data_registers_are_little_endian_signed_and_live_in_normal_mode() -> None:
    m = BMI160()
    m.acceleration = (0.5, -1.0, 0.0)
    assert read(m, REG_DATA_ACC_X_L, 6) == bytes(6)  # suspended: nothing sampled yet
    powered(m)
    assert read(m, REG_DATA_ACC_X_L, 6) == b"\x00\x20\x00\xc0\x00\x00"
    m.angular_rate = (0.0, 0.0, -10.0)  # -164 = 0xff5c
    assert read(m, REG_DATA_GYR_X_L + 4, 2) == b"\x5c\xff"
    write(m, REG_ACC_RANGE, 0b1000)  # 8 g: 4096 LSB/g
    assert read(m, REG_DATA_ACC_X_L, 2) == (2048).to_bytes(2, "little")
    write(m, REG_CMD, CMD_ACC_SUSPEND)  # suspended: the last sample is held
    m.acceleration = (0.0, 0.0, 0.0)
    assert read(m, REG_DATA_ACC_X_L, 2) == (2048).to_bytes(2, "little")


def test_start_up_times_on_the_clock() -> None:
    m, clock = timed()
    write(m, REG_CMD, CMD_ACC_NORMAL)
    assert m.acc_pmu == SUSPEND
    clock.advance(ACC_STARTUP_NS - 1)
    assert m.acc_pmu == SUSPEND
    read(m, REG_DATA_ACC_X_L, 2)
    assert m.early_data_reads == [(ACC_STARTUP_NS - 1, REG_DATA_ACC_X_L)]
    clock.advance(1)
    assert m.acc_pmu == NORMAL
    write(m, REG_CMD, CMD_GYR_NORMAL)
    clock.advance(GYR_STARTUP_NS - 1)
    assert m.gyr_pmu == SUSPEND
    clock.advance(1)
    assert read(m, REG_PMU_STATUS) == b"\x14"  # acc normal (bits 5:4), gyr normal (3:2)


def test_fast_start_up_is_quicker() -> None:
    m, clock = timed()
    write(m, REG_CMD, CMD_GYR_FAST_STARTUP)
    assert m.gyr_pmu == FAST_STARTUP
    clock.advance(WRITE_IDLE_SUSPEND_NS)
    write(m, REG_CMD, CMD_GYR_NORMAL)
    clock.advance(GYR_FAST_STARTUP_NS)
    assert m.gyr_pmu == NORMAL


def test_command_during_start_up_is_dropped() -> None:
    m, clock = timed()
    write(m, REG_CMD, CMD_ACC_NORMAL)
    clock.advance(1_000_000)
    write(m, REG_CMD, CMD_GYR_NORMAL)  # the accelerometer still starts: dropped
    assert [c.accepted for c in m.commands] == [True, False]
    assert read(m, REG_ERR_REG) == b"\x40"  # drop_cmd_err
    assert read(m, REG_ERR_REG) == b"\x00"  # cleared when read
    clock.advance(GYR_STARTUP_NS)
    assert (m.acc_pmu, m.gyr_pmu) == (NORMAL, SUSPEND)


def test_writes_too_close_together_while_suspended_are_lost() -> None:
    m, clock = timed()
    write(m, REG_ACC_RANGE, 0b0101)
    clock.advance(WRITE_IDLE_SUSPEND_NS - 1)
    write(m, REG_GYR_RANGE, 0x01)
    assert m.lost_writes == [(WRITE_IDLE_SUSPEND_NS - 1, REG_GYR_RANGE, 0x01)]
    assert m.regs[REG_GYR_RANGE] == 0
    clock.advance(WRITE_IDLE_SUSPEND_NS)
    write(m, REG_GYR_RANGE, 0x01)
    assert m.regs[REG_GYR_RANGE] == 1


def test_softreset_restores_the_reset_values() -> None:
    m = powered()
    write(m, REG_ACC_RANGE, 0b1100)
    write(m, REG_CMD, CMD_SOFTRESET)
    assert m.regs[REG_ACC_RANGE] == 0x03
    assert (m.acc_pmu, m.gyr_pmu) == (SUSPEND, SUSPEND)


def test_fifo_is_empty() -> None:
    m = powered()
    write(m, REG_CMD, CMD_FIFO_FLUSH)
    assert read(m, REG_FIFO_DATA) == b"\x80"  # 2.5.1.2: an overread


def test_slow_odr_in_normal_mode_is_an_error() -> None:
    m = powered()
    write(m, REG_ACC_CONF, 0x25)  # 12.5 Hz: valid
    assert m.config_errors == []
    write(m, REG_ACC_CONF, 0x21)  # 0.78125 Hz with acc_us = 0
    assert len(m.config_errors) == 1
    assert read(m, REG_ERR_REG)[0] >> 1 & 0xF == 0b0001
    write(m, REG_ACC_CONF, 0xA1)  # with acc_us: undersampling, valid
    assert len(m.config_errors) == 1


class Recorder:
    """A GPIO line that keeps each level driven onto it (the interrupt pin's wire)."""

    def __init__(self) -> None:
        self.levels: list[bool] = []

    def set(self, level: bool) -> None:
        self.levels.append(level)

    @property
    def input(self) -> bool:
        return self.levels[-1]

    def edges(self, rising: bool) -> int:
        """Transitions to `rising` (True) or to low (False)."""
        pairs = zip(self.levels, self.levels[1:], strict=False)
        return sum(1 for a, b in pairs if a != b and b == rising)


def wired(m: BMI160, pin: int) -> Recorder:
    line = Recorder()
    setattr(m, f"int{pin}", line)
    return line


def test_disabled_pin_floats_to_the_pull_up() -> None:
    m = powered()
    line = wired(m, 1)
    assert line.input  # high impedance: pulled up
    write(m, REG_INT_OUT_CTRL, 0x0A)  # INT1 output, push-pull, active high
    assert not line.input


def test_data_ready_on_int1() -> None:
    m = powered()
    line = wired(m, 1)
    write(m, REG_INT_OUT_CTRL, 0x0A)
    write(m, REG_INT_MAP_1, 0x80)  # int1_drdy
    m.data_ready()
    assert not line.input and line.edges(True) == 0  # int_drdy_en off
    assert read(m, REG_STATUS)[0] & 0xC0 == 0xC0  # drdy_acc, drdy_gyr
    write(m, REG_INT_EN_1, 0x10)
    m.data_ready()
    assert line.input and line.edges(True) == 1
    assert read(m, REG_INT_STATUS_1) == b"\x10"
    m.data_ready()  # not read yet: a new pulse all the same
    assert line.edges(True) == 2
    read(m, REG_DATA_ACC_X_L, 2)
    assert line.input  # the gyroscope's new data is not read yet
    read(m, REG_DATA_GYR_X_L, 2)
    assert not line.input
    assert read(m, REG_STATUS)[0] & 0xC0 == 0


def test_data_ready_on_int2_open_drain_active_low() -> None:
    m = powered()
    line = wired(m, 2)
    write(m, REG_INT_OUT_CTRL, 0xC0)  # INT2 output, open drain, active low
    write(m, REG_INT_MAP_1, 0x08)  # int2_drdy
    write(m, REG_INT_EN_1, 0x10)
    assert line.input
    m.data_ready()
    assert not line.input and line.edges(False) == 1
    assert m.int_asserted(2) and not m.int_asserted(1)
    write(m, REG_INT_EN_1, 0x00)  # disabling drdy ends it
    assert line.input


def test_chip_id_variant() -> None:
    assert read(BMI160(chip_id=0x42), REG_CHIP_ID) == b"\x42"
    assert math.isclose(odr_hz(6), 25.0)
