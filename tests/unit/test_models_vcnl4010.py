"""The VCNL4010/4020 model against its datasheet (83462), without a guest."""

from __future__ import annotations

import pytest

from roadtest.backend.gpio import GpioLine, VirtioGpio
from roadtest.models import ModelError
from roadtest.models.vcnl4010 import (
    COMMAND_ALS_DATA_RDY,
    COMMAND_ALS_EN,
    COMMAND_ALS_OD,
    COMMAND_CONFIG_LOCK,
    COMMAND_PROX_DATA_RDY,
    COMMAND_PROX_EN,
    COMMAND_PROX_OD,
    COMMAND_SELFTIMED_EN,
    ICR_ALS_READY_EN,
    ICR_PROX_READY_EN,
    ICR_THRES_EN,
    ICR_THRES_SEL_ALS,
    ISR_ALS_READY,
    ISR_PROX_READY,
    ISR_TH_HI,
    ISR_TH_LOW,
    REG_ALS_PARAM,
    REG_ALS_RESULT_HIGH,
    REG_COMMAND,
    REG_HIGH_THRESHOLD_HIGH,
    REG_INTERRUPT_CONTROL,
    REG_INTERRUPT_STATUS,
    REG_IR_LED_CURRENT,
    REG_LOW_THRESHOLD_HIGH,
    REG_PRODUCT_ID_REVISION,
    REG_PROX_RESULT_HIGH,
    REG_PROX_RESULT_LOW,
    REG_PROXIMITY_RATE,
    RESET,
    VCNL4010,
    VCNL4020,
)
from roadtest.trace.gpio import IrqType


def read_reg(m: VCNL4010, reg: int, length: int = 1) -> bytes:
    m.write(bytes([reg]))
    return m.read(length)


def write_reg(m: VCNL4010, reg: int, *values: int) -> None:
    m.write(bytes([reg, *values]))


def wired() -> tuple[VCNL4020, GpioLine]:
    m = VCNL4020()
    line = VirtioGpio(ngpio=1).line(0)
    line.irq_type = IrqType.EDGE_FALLING
    m.irq = line
    return m, line


def periodic(m: VCNL4010, icr: int) -> None:
    write_reg(m, REG_COMMAND, COMMAND_SELFTIMED_EN | COMMAND_PROX_EN)
    write_reg(m, REG_INTERRUPT_CONTROL, icr)


def test_reset_values_and_product_id() -> None:
    m = VCNL4010()
    assert read_reg(m, REG_COMMAND) == bytes([COMMAND_CONFIG_LOCK])
    assert read_reg(m, REG_PRODUCT_ID_REVISION) == b"\x21"  # product 2 (>> 4), revision 1
    assert read_reg(m, 0x80, 16) == bytes(RESET[r] for r in range(0x80, 0x90))


@pytest.mark.parametrize("reg", [0x7F, 0x90, 0x00])
def test_undefined_registers_nack(reg: int) -> None:
    m = VCNL4010()
    with pytest.raises(ModelError, match="undefined register"):
        read_reg(m, reg)
    with pytest.raises(ModelError, match="undefined register"):
        write_reg(m, reg, 0)


@pytest.mark.parametrize("reg", [REG_PRODUCT_ID_REVISION, REG_ALS_RESULT_HIGH, REG_PROX_RESULT_LOW])
def test_read_only_registers(reg: int) -> None:
    with pytest.raises(ModelError, match="read-only"):
        write_reg(VCNL4010(), reg, 0x12)


def test_on_demand_measurement_and_data_ready_cleared_by_reading() -> None:
    m = VCNL4010()
    m.prox_result = 0xF002
    write_reg(m, REG_COMMAND, COMMAND_PROX_OD | 0xE0)  # the read-only bits ignore the write
    command = read_reg(m, REG_COMMAND)[0]
    assert command == COMMAND_CONFIG_LOCK | COMMAND_PROX_DATA_RDY  # od reads 0 when done
    # i2c_smbus_read_word_swapped: two bytes from the high register on, MSB first.
    assert read_reg(m, REG_PROX_RESULT_HIGH, 2) == b"\xf0\x02"
    assert not read_reg(m, REG_COMMAND)[0] & COMMAND_PROX_DATA_RDY
    # Reading the low byte alone clears it too.
    write_reg(m, REG_COMMAND, COMMAND_PROX_OD)
    read_reg(m, REG_PROX_RESULT_LOW)
    assert not read_reg(m, REG_COMMAND)[0] & COMMAND_PROX_DATA_RDY


def test_measurement_never_completes() -> None:
    m = VCNL4010()
    m.measurements_complete = False
    m.als_result = 0x1234
    write_reg(m, REG_COMMAND, COMMAND_ALS_OD)
    command = read_reg(m, REG_COMMAND)[0]
    assert command & COMMAND_ALS_OD and not command & COMMAND_ALS_DATA_RDY
    assert read_reg(m, REG_ALS_RESULT_HIGH, 2) == b"\x00\x00"
    with pytest.raises(ModelError, match="on-demand"):
        write_reg(m, REG_ALS_PARAM, 0x0D)


def test_on_demand_disabled_in_self_timed_mode() -> None:
    m = VCNL4010()
    m.als_result = 0x1234
    write_reg(m, REG_COMMAND, COMMAND_SELFTIMED_EN | COMMAND_ALS_OD)
    assert read_reg(m, REG_COMMAND)[0] == COMMAND_CONFIG_LOCK | COMMAND_SELFTIMED_EN
    assert read_reg(m, REG_ALS_RESULT_HIGH, 2) == b"\x00\x00"


def test_rates_fixed_while_self_timed() -> None:
    m = VCNL4010()
    write_reg(m, REG_PROXIMITY_RATE, 6)
    write_reg(m, REG_COMMAND, COMMAND_SELFTIMED_EN | COMMAND_PROX_EN)
    for reg in (REG_PROXIMITY_RATE, REG_ALS_PARAM):
        with pytest.raises(ModelError, match="selftimed_en"):
            write_reg(m, reg, 1)
    assert read_reg(m, REG_PROXIMITY_RATE) == b"\x06"


def test_led_current() -> None:
    m = VCNL4010()
    m.regs[REG_IR_LED_CURRENT] |= 0x40  # a fuse ID
    write_reg(m, REG_IR_LED_CURRENT, 0x14)
    assert read_reg(m, REG_IR_LED_CURRENT) == b"\x54"
    with pytest.raises(ModelError, match="LED current"):
        write_reg(m, REG_IR_LED_CURRENT, 21)


def test_periodic_measurement_needs_self_timed_mode() -> None:
    m = VCNL4010()
    assert not m.periodic_measurement()
    write_reg(m, REG_COMMAND, COMMAND_SELFTIMED_EN)
    assert not m.periodic_measurement()
    write_reg(m, REG_COMMAND, COMMAND_SELFTIMED_EN | COMMAND_ALS_EN)
    m.als_result = 0x0102
    assert m.periodic_measurement()
    assert read_reg(m, REG_ALS_RESULT_HIGH, 2) == b"\x01\x02"


def test_int_line_driven_high_when_wired() -> None:
    m, line = wired()
    assert line.input is True
    assert not line.edge_latched


def test_high_threshold_interrupt_and_write_one_to_clear() -> None:
    m, line = wired()
    write_reg(m, REG_HIGH_THRESHOLD_HIGH, 0x12, 0x34)
    periodic(m, ICR_THRES_EN)
    m.prox_result = 0x1234  # equal: not beyond the threshold
    m.periodic_measurement()
    assert read_reg(m, REG_INTERRUPT_STATUS) == b"\x00" and line.input

    m.prox_result = 0x1235
    m.periodic_measurement()
    assert read_reg(m, REG_INTERRUPT_STATUS)[0] == ISR_TH_HI
    assert line.input is False and line.edge_latched  # INT is active low

    write_reg(m, REG_INTERRUPT_STATUS, ISR_TH_LOW)  # 1 in another bit: no effect
    assert read_reg(m, REG_INTERRUPT_STATUS)[0] == ISR_TH_HI and not line.input
    write_reg(m, REG_INTERRUPT_STATUS, ISR_TH_HI)
    assert read_reg(m, REG_INTERRUPT_STATUS) == b"\x00" and line.input


def test_low_threshold_interrupt() -> None:
    m, line = wired()
    write_reg(m, REG_LOW_THRESHOLD_HIGH, 0x0A, 0xBC)
    write_reg(m, REG_HIGH_THRESHOLD_HIGH, 0xFF, 0xFF)
    periodic(m, ICR_THRES_EN)
    m.prox_result = 0x0ABC
    m.periodic_measurement()
    assert not m.int_asserted
    m.prox_result = 0x0ABB
    m.periodic_measurement()
    assert read_reg(m, REG_INTERRUPT_STATUS)[0] == ISR_TH_LOW and not line.input


def test_threshold_count_exceed() -> None:
    m, _ = wired()
    periodic(m, ICR_THRES_EN | 2 << 5)  # 4 consecutive measurements
    m.prox_result = 1  # above the high threshold, 0
    for _ in range(3):
        m.periodic_measurement()
    assert not m.int_asserted
    m.prox_result = 0  # back in the window: the count restarts
    m.periodic_measurement()
    m.prox_result = 1
    for _ in range(3):
        m.periodic_measurement()
    assert not m.int_asserted
    m.periodic_measurement()
    assert m.regs[REG_INTERRUPT_STATUS] == ISR_TH_HI


def test_thresholds_follow_the_selected_source() -> None:
    m, _ = wired()
    write_reg(m, REG_COMMAND, COMMAND_SELFTIMED_EN | COMMAND_PROX_EN | COMMAND_ALS_EN)
    write_reg(m, REG_INTERRUPT_CONTROL, ICR_THRES_EN | ICR_THRES_SEL_ALS)
    m.prox_result = 0xFFFF  # ignored: thresholds watch the ALS
    m.periodic_measurement()
    assert not m.int_asserted
    m.als_result = 1
    m.periodic_measurement()
    assert m.regs[REG_INTERRUPT_STATUS] == ISR_TH_HI


def test_data_ready_interrupts() -> None:
    m, line = wired()
    write_reg(m, REG_COMMAND, COMMAND_SELFTIMED_EN | COMMAND_PROX_EN)
    m.periodic_measurement()
    assert not m.int_asserted  # not enabled
    write_reg(m, REG_INTERRUPT_CONTROL, ICR_PROX_READY_EN | ICR_ALS_READY_EN)
    m.periodic_measurement()
    assert m.regs[REG_INTERRUPT_STATUS] == ISR_PROX_READY and not line.input
    write_reg(m, REG_INTERRUPT_STATUS, ISR_PROX_READY | ISR_ALS_READY)
    assert line.input
    # On-demand ALS measurements signal data ready too.
    write_reg(m, REG_COMMAND, COMMAND_ALS_OD)
    assert m.regs[REG_INTERRUPT_STATUS] == ISR_ALS_READY
