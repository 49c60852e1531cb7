"""Interrupt outputs and the wires they drive, against the electrical definitions:

- a push-pull output drives the wire to its level, both ways;
- an open-drain output either pulls the wire low or lets it go; a wire nothing
  drives rests at its pull resistor's level;
- active-low means asserted = low, active-high means asserted = high;
- two outputs that drive opposite levels short the wire.
"""

from __future__ import annotations

import pytest
from helpers import RecordingLine

from roadtest.models.base import ModelError
from roadtest.models.interrupt import (
    Drive,
    InterruptOutput,
    InterruptPin,
    Polarity,
    Trigger,
    Wire,
)
from roadtest.trace.gpio import IrqType

LOW = Polarity.ACTIVE_LOW
HIGH = Polarity.ACTIVE_HIGH
PP = Drive.PUSH_PULL
OD = Drive.OPEN_DRAIN


@pytest.mark.parametrize(
    ("polarity", "drive", "asserted", "state"),
    [
        (LOW, PP, True, "low"),
        (LOW, PP, False, "high"),
        (HIGH, PP, True, "high"),
        (HIGH, PP, False, "low"),
        (LOW, OD, True, "low"),  # pulls
        (LOW, OD, False, "released"),
        (HIGH, OD, True, "released"),  # asserts by letting the pull-up raise the wire
        (HIGH, OD, False, "low"),
    ],
)
def test_pin_state(polarity: Polarity, drive: Drive, asserted: bool, state: str) -> None:
    output = InterruptOutput(polarity, drive)
    output.set(asserted)
    assert output.state == state


@pytest.mark.parametrize("pull_up", [True, False])
@pytest.mark.parametrize(
    ("polarity", "drive", "asserted", "level"),
    [
        (LOW, PP, True, False),
        (LOW, PP, False, True),
        (HIGH, PP, True, True),
        (HIGH, PP, False, False),
        (LOW, OD, True, False),
        (HIGH, OD, False, False),
    ],
)
def test_a_driven_wire_ignores_its_pull(
    polarity: Polarity, drive: Drive, asserted: bool, level: bool, pull_up: bool
) -> None:
    wire = Wire(pull_up=pull_up)
    output = InterruptOutput(polarity, drive)
    output.set(asserted)
    wire.connect(output)
    assert wire.level is level


@pytest.mark.parametrize("pull_up", [True, False])
def test_a_released_wire_rests_at_its_pull(pull_up: bool) -> None:
    wire = Wire(pull_up=pull_up)
    assert wire.level is pull_up
    output = InterruptOutput(LOW, OD)  # deasserted: released
    wire.connect(output)
    assert wire.level is pull_up


@pytest.mark.parametrize(("a", "b"), [(False, False), (True, False), (False, True), (True, True)])
def test_active_low_open_drain_outputs_share_a_wire_as_wired_or(a: bool, b: bool) -> None:
    line = RecordingLine()
    wire = Wire(line)
    first, second = InterruptOutput(LOW, OD), InterruptOutput(LOW, OD)
    wire.connect(first)
    wire.connect(second)
    first.set(a)
    second.set(b)
    # The line is low (the interrupt asserted) while either pulls.
    assert line.input is not (a or b)


@pytest.mark.parametrize(("a", "b"), [(False, False), (True, False), (False, True), (True, True)])
def test_active_high_open_drain_outputs_share_a_wire_as_wired_and(a: bool, b: bool) -> None:
    wire = Wire()
    first, second = InterruptOutput(HIGH, OD), InterruptOutput(HIGH, OD)
    wire.connect(first)
    wire.connect(second)
    first.set(a)
    second.set(b)
    # High only when both let go: one that is not asserted pulls the wire low.
    assert wire.level is (a and b)


def test_opposite_drivers_short_the_wire() -> None:
    wire = Wire()
    push_pull = InterruptOutput(LOW, PP)  # deasserted: drives high
    wire.connect(push_pull)
    open_drain = InterruptOutput(LOW, OD)
    wire.connect(open_drain)
    with pytest.raises(ModelError, match="short circuit"):
        open_drain.set(True)  # pulls low against the push-pull high


def test_the_line_sees_each_edge_once() -> None:
    line = RecordingLine()
    output = InterruptOutput(LOW, OD)
    wire = Wire()
    wire.connect(output)
    wire.line = line
    output.set(True)
    output.set(True)
    output.set(False)
    output.set(False)
    assert line.levels == [True, False, True]  # idle high at wiring, then two edges


def test_polarity_changes_at_run_time_move_the_wire() -> None:
    line = RecordingLine()
    output = InterruptOutput(LOW, PP)
    Wire(line).connect(output)
    output.polarity = HIGH  # deasserted is now low
    output.drive = OD  # an open-drain deasserted active-high output pulls low: no change
    assert line.levels == [True, False]


@pytest.mark.parametrize(
    ("polarity", "trigger", "irq_type", "fires_on"),
    [
        (LOW, "level", "IRQ_TYPE_LEVEL_LOW", "asserted level low"),
        (HIGH, "level", "IRQ_TYPE_LEVEL_HIGH", "asserted level high"),
        (LOW, "edge", "IRQ_TYPE_EDGE_FALLING", "high to low"),
        (HIGH, "edge", "IRQ_TYPE_EDGE_RISING", "low to high"),
    ],
)
def test_irq_type_matches_the_polarity(
    polarity: Polarity, trigger: Trigger, irq_type: str, fires_on: str
) -> None:
    assert InterruptOutput(polarity, PP).irq_type(trigger) == irq_type
    # A name the devicetree's dt-bindings header defines (the backend speaks the same numbers).
    assert irq_type.removeprefix("IRQ_TYPE_") in IrqType.__members__


class Chip(InterruptPin):
    int_polarity = Polarity.ACTIVE_HIGH
    int_drive = Drive.PUSH_PULL

    def __init__(self) -> None:
        self.alert = False

    @property
    def int_asserted(self) -> bool:
        return self.alert


def test_a_model_drives_its_line_from_the_moment_it_is_wired() -> None:
    chip = Chip()
    line = RecordingLine()
    chip.irq = line
    assert line.levels == [False]  # active high, deasserted: low, before any driver asks
    chip.alert = True
    chip.update_int()
    chip.alert = False
    chip.update_int()
    assert line.levels == [False, True, False]


def test_models_on_a_shared_wire() -> None:
    a, b = Chip(), Chip()
    a.int_output.drive = b.int_output.drive = OD
    a.int_output.polarity = b.int_output.polarity = LOW
    line = RecordingLine()
    wire = Wire(line)
    wire.connect(a.int_output)
    wire.connect(b.int_output)
    a.alert = True
    a.update_int()
    b.alert = True
    b.update_int()
    a.alert = False
    a.update_int()
    assert line.levels == [True, False]  # still low while b pulls
    b.alert = False
    b.update_int()
    assert line.levels == [True, False, True]
