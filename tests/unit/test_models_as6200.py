"""The AS6200 model against its datasheet's register description (no guest)."""

from __future__ import annotations

import pytest
from helpers import RecordingLine

from roadtest.models.as6200 import AS6200
from roadtest.models.base import ModelError


def read(model: AS6200, pointer: int) -> int:
    model.write(bytes([pointer]))
    return int.from_bytes(model.read(2), "big")  # MSB first


def write(model: AS6200, pointer: int, value: int) -> None:
    model.write(bytes([pointer]) + value.to_bytes(2, "big"))


def test_reset_values() -> None:
    model = AS6200()
    assert read(model, 0x01) == 0x40A0  # CONFIG
    assert read(model, 0x02) == 0x4B00  # TLOW, 75 degC
    assert read(model, 0x03) == 0x5000  # THIGH, 80 degC


@pytest.mark.parametrize(
    ("degc", "tval"),
    [(25.0, 0x1900), (0.0625, 0x0010), (-0.0625, 0xFFF0), (-40.0, 0xD800), (127.9375, 0x7FF0)],
)
def test_temperature_register(degc: float, tval: int) -> None:
    model = AS6200()
    model.temperature = degc
    model.convert()
    assert read(model, 0x00) == tval


def test_comparator_mode_with_fault_queue_and_hysteresis() -> None:
    model = AS6200()
    write(model, 0x01, 0x40A0 | 1 << 11)  # CF = 01: two consecutive faults
    model.temperature = 80.0  # at THIGH
    model.convert()
    assert not model.alert
    model.convert()
    assert model.alert
    model.temperature = 76.0  # between TLOW and THIGH: stays active
    model.convert(5)
    assert model.alert
    model.temperature = 74.0  # below TLOW
    model.convert()
    assert model.alert
    model.convert()
    assert not model.alert


def test_al_follows_the_polarity() -> None:
    model = AS6200()
    assert read(model, 0x01) & 1 << 5  # POL = 0, no alert: AL = 1
    model.temperature = 90.0
    model.convert()
    assert not read(model, 0x01) & 1 << 5  # active low: AL = 0
    write(model, 0x01, 0x40A0 | 1 << 10)  # POL = 1
    assert read(model, 0x01) & 1 << 5  # active high: AL = 1


def test_the_open_drain_alert_pin_follows_pol() -> None:
    model = AS6200()
    line = RecordingLine()
    model.irq = line
    assert line.levels == [True]  # active low, quiet: released, pulled up
    write(model, 0x01, 0x40A0 | 1 << 10)  # POL = 1: quiet is now low
    assert line.levels == [True, False]
    model.temperature = 90.0
    model.convert()
    assert line.levels == [True, False, True]


def test_a_byte_write_sets_the_high_byte() -> None:
    model = AS6200()
    write(model, 0x02, 0x1234 & 0xFFF0)
    model.write(bytes([0x02, 0xAB]))
    assert read(model, 0x02) == 0xAB30


@pytest.mark.parametrize("config", [0x40A0 | 1 << 9, 0x40A0 | 1 << 8])
def test_interrupt_and_sleep_modes_are_not_modelled(config: int) -> None:
    with pytest.raises(ModelError, match="not modelled"):
        write(AS6200(), 0x01, config)


def test_tval_is_read_only() -> None:
    with pytest.raises(ModelError, match="read-only"):
        write(AS6200(), 0x00, 0x1900)
