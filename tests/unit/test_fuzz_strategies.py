"""The fuzz strategies (roadtest.fuzz) themselves: what they draw, that they reach the
values that matter, and what they shrink to. Deterministic: derandomized, no database."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from helpers import drawn, found
from hypothesis import strategies as st

from roadtest.fuzz import (
    InterruptChange,
    Pass,
    RegisterChange,
    TransferFails,
    boundary_ints,
    device_events,
    field_values,
    register_values,
)
from roadtest.models.opt3001 import OPT3001
from roadtest.models.regmap import Field, Register, RegisterMap
from roadtest.models.vcnl4000 import VCNL4000

CONFIGURATION = OPT3001.register_map["CONFIGURATION"]  # fields and a 3-value M
COMMAND = VCNL4000.register_map["COMMAND"]  # reserved bits 2..0, reset 0x80
WIDE = RegisterMap([Register("WIDE", 0x10, 0x123456)], width=24)["WIDE"]


@pytest.mark.parametrize("reg", [CONFIGURATION, COMMAND, WIDE], ids=lambda r: r.name)
@pytest.mark.parametrize("strategy", [register_values, field_values])
def test_every_drawn_value_fits_the_register(
    reg: Register, strategy: Callable[[Register], st.SearchStrategy[int]]
) -> None:
    assert all(0 <= v < 1 << reg.bits for v in drawn(strategy(reg), 150))


@pytest.mark.parametrize("bits", [1, 8, 12, 16, 24])
def test_boundary_values_appear(bits: int) -> None:
    values = set(drawn(boundary_ints(bits), 150))
    top = (1 << bits) - 1
    assert {0, 1, top, 1 << (bits - 1)} <= values
    assert all(0 <= v <= top for v in values)
    assert len(values) > 4 or bits == 1  # uniform draws too


def test_a_fields_named_values_and_edges_are_reached() -> None:
    values = drawn(field_values(CONFIGURATION), 200)
    m, rn = CONFIGURATION.field("M"), CONFIGURATION.field("RN")
    assert {m.get(v) for v in values} >= set(m.values.values())
    assert {rn.get(v) for v in values} >= {0, rn.max}


def test_reserved_bits_are_drawn_set_and_clear() -> None:
    reserved = COMMAND.reserved_mask
    assert reserved == 0b111
    values = drawn(field_values(COMMAND), 200)
    assert any(v & reserved == reserved for v in values)
    assert any(v & reserved == 0 and v != COMMAND.reset for v in values)


def test_bits_no_field_covers_are_drawn_set_and_clear() -> None:
    reg = RegisterMap([Register("R", 0, 0x00, fields=(Field("F", 3, 0),))])["R"]
    assert {v & 0xF0 for v in drawn(field_values(reg), 200)} >= {0x00, 0xF0}


@pytest.mark.parametrize("reg", [CONFIGURATION, COMMAND, WIDE], ids=lambda r: r.name)
def test_register_values_shrink_to_the_reset_value(reg: Register) -> None:
    assert found(register_values(reg), lambda v: True) == reg.reset
    assert found(field_values(reg), lambda v: True) == reg.reset


def test_boundary_ints_shrink_to_zero() -> None:
    assert found(boundary_ints(16), lambda v: True) == 0
    assert found(boundary_ints(16), lambda v: v > 0) == 1


def test_event_scripts_shrink_to_no_events() -> None:
    assert found(device_events(VCNL4000, lines=("irq",)), lambda evs: True) == []


def test_event_scripts_draw_every_kind_of_event() -> None:
    scripts = drawn(device_events(OPT3001.register_map, lines=("irq",), messages=2), 200)
    events = [e for script in scripts for e in script]
    assert any(isinstance(e, Pass) and e.transfers for e in events)
    assert InterruptChange("irq", True) in events and InterruptChange("irq", False) in events
    assert TransferFails(0) in events and TransferFails(1) in events
    assert {e.name for e in events if isinstance(e, RegisterChange)} == {
        r.name for r in OPT3001.register_map
    }


def test_a_register_change_shrinks_to_the_reset_value() -> None:
    events = device_events(OPT3001.register_map)
    change = found(
        events, lambda evs: any(isinstance(e, RegisterChange) and e.name == "RESULT" for e in evs)
    )
    assert change == [RegisterChange("RESULT", 0x00, 0x0000)]


def test_event_values_fit_their_registers_and_messages_their_count() -> None:
    regmap = VCNL4000.register_map
    for script in drawn(device_events(VCNL4000(), messages=3, max_events=5), 200):
        assert len(script) <= 5
        for event in script:
            assert not isinstance(event, InterruptChange)  # no lines given
            if isinstance(event, RegisterChange):
                reg = regmap[event.address]
                assert reg.name == event.name and reg.readable
                assert 0 <= event.value <= reg.max
            elif isinstance(event, TransferFails):
                assert 0 <= event.at_message < 3


def test_a_model_without_a_map_gets_no_register_changes() -> None:
    for script in drawn(device_events(object(), lines=("irq",)), 200):
        assert not any(isinstance(e, RegisterChange) for e in script)
