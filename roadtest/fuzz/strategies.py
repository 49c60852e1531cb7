"""Hypothesis strategies for what a device answers, from its register map.

Every strategy shrinks towards the unremarkable: a register value towards its
reset value, a field towards its reset value, an integer towards 0, an event
sequence towards no events. Each mixes boundary values (0, 1, the maximum, the
sign bit, a field's edges and named values) half the time with uniform draws; a
field of at most 16 values takes each of them alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from hypothesis import strategies as st

from roadtest.fuzz.events import DeviceEvent, InterruptChange, Pass, RegisterChange, TransferFails
from roadtest.models.regmap import Field, Register, RegisterMap


def _boundaries(bits: int) -> list[int]:
    top = (1 << bits) - 1
    sign = 1 << (bits - 1)
    return [0, 1, top, top - 1, sign, sign - 1]


# A range this small is drawn whole from one pool: every value is an edge.
_SMALL: Final = 16


def _mixed(specials: Iterable[int], top: int) -> st.SearchStrategy[int]:
    """Half the draws from `specials` (the first is where it shrinks to), half uniform over
    0..top; a range of at most _SMALL values, uniformly from `specials` first. Flat on
    purpose: each nested strategy costs every draw time."""
    pool = [v for v in dict.fromkeys(specials) if 0 <= v <= top]
    if top < _SMALL:
        return st.sampled_from(list(dict.fromkeys([*pool, *range(top + 1)])))
    return st.one_of(st.sampled_from(pool), st.integers(0, top))


def boundary_ints(bits: int, edges: Iterable[int] = ()) -> st.SearchStrategy[int]:
    """Unsigned `bits`-bit integers: half the draws from 0, 1, the maximum and its
    neighbour, the sign bit and its neighbour, and `edges`; half uniform. Shrinks to 0."""
    if bits < 1:
        raise ValueError(f"boundary_ints needs at least 1 bit, not {bits}")
    return _mixed([*_boundaries(bits), *edges], (1 << bits) - 1)


def register_values(reg: Register) -> st.SearchStrategy[int]:
    """Whole values of `reg` (any of its width's), boundary-heavy. Shrinks to its reset value."""
    return _mixed([reg.reset, *_boundaries(reg.bits)], reg.max)


def _field_part(reg: Register, field: Field) -> st.SearchStrategy[int]:
    """One field's value (not in place): its reset value, its named values and edges
    (reserved bits: as at reset, clear or set), or anything."""
    reset = field.get(reg.reset)
    if field.reserved:
        return _mixed([reset, 0, field.max], field.max)
    return _mixed(
        [reset, *sorted(set(field.values.values())), *_boundaries(field.width)], field.max
    )


def field_values(reg: Register) -> st.SearchStrategy[int]:
    """Values of `reg` composed field by field: each field over its reset value, its named
    values and its whole range (boundary-heavy); reserved bits, and bits no field covers,
    as at reset, all clear, all set or anything. A register without fields: as
    `register_values`. Shrinks to the reset value."""
    if not reg.fields:
        return register_values(reg)
    parts = [_field_part(reg, f) for f in reg.fields]
    places = [(f.lsb, f.max) for f in reg.fields]  # each value's shift and mask
    undeclared = reg.undeclared_mask
    if undeclared:
        # The datasheet says nothing of these bits: drawn like reserved ones.
        parts.append(_mixed([reg.reset & undeclared, 0, undeclared], reg.max))
        places.append((0, undeclared))

    def compose(values: tuple[int, ...]) -> int:
        return sum((v & mask) << shift for v, (shift, mask) in zip(values, places, strict=True))

    return st.tuples(*parts).map(compose)


def _register_map(source: object) -> RegisterMap | None:
    if isinstance(source, RegisterMap):
        return source
    regmap = getattr(source, "register_map", None)
    return regmap if isinstance(regmap, RegisterMap) else None


def _register_changes(reg: Register) -> st.SearchStrategy[RegisterChange]:
    return field_values(reg).map(lambda value: RegisterChange(reg.name, reg.address, value))


def device_events(
    source: object,
    lines: Sequence[str] = (),
    *,
    max_events: int = 10,
    max_pass: int = 8,
    messages: int = 2,
) -> st.SearchStrategy[list[DeviceEvent]]:
    """Scripts of at most `max_events` device events (`roadtest.fuzz.events`) for the
    device whose map `source` is (a RegisterMap, or a model or model class with a
    `register_map`; without one, no register changes): a readable register changes to a
    value from `field_values`, an interrupt `line` is asserted or released, a transfer
    fails at one of its first `messages` messages, or up to `max_pass` transfers pass.
    Shrinks to no events."""
    choices: list[st.SearchStrategy[DeviceEvent]] = [
        st.builds(Pass, st.integers(0, max_pass)),
    ]
    regmap = _register_map(source)
    readable = [r for r in regmap if r.readable] if regmap is not None else []
    if readable:
        # One strategy per register, built once (building one per draw is slow).
        choices.append(st.one_of([_register_changes(reg) for reg in readable]))
    if lines:
        choices.append(st.builds(InterruptChange, st.sampled_from(list(lines)), st.booleans()))
    choices.append(st.builds(TransferFails, st.integers(0, max(messages, 1) - 1)))
    return st.lists(st.one_of(choices), max_size=max_events)
