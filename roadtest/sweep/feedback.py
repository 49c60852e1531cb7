"""What KCOV tells the sweep about a probe, and the device it suggests next.

The sweep kernel instruments its modules with KCOV's comparison tracing
(CONFIG_KCOV_ENABLE_COMPARISONS, Documentation/dev-tools/kcov.rst): while the agent's
task has KCOV on in KCOV_TRACE_CMP mode, each comparison the module's code makes during
that task's system calls (a probe runs in the one that writes drivers_probe) leaves a
record: its type (operand size, and whether the first operand is a constant of the code),
both operands and the PC.

A driver that checks an ID register compares what it read with a constant. The register
file logs what it answered; so:

1. **label**: after a probe that failed, the registers it read answer distinct, unusual
   values (LABELS), so that a comparison's operand names the register it came from;
2. **learn**: each comparison of a constant with a label sets that register to the
   constant.

The loop repeats while it learns something new: a probe that checks a second register
after the first passes gets that one too. Comparisons with a transformed read (masked,
shifted) are not matched; Hypothesis's own search covers what this misses.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from roadtest.sweep.device import RegisterPlan

KCOV_TRACE_CMP = 1  # include/uapi/linux/kcov.h: enum kcov_trace_mode
KCOV_CMP_CONST = 1 << 0
WORDS = 1 << 16  # the area's size: 16K comparisons, far more than a probe makes

# Values rare in the registers of real chips and in drivers' constants, one per register a
# probe read (8-bit registers: at most this many are labelled at once).
LABELS = tuple(range(0xA1, 0xFF, 2))


@dataclass(frozen=True)
class Comparison:
    size: int  # operand bytes: 1, 2, 4 or 8
    constant: bool  # the first operand is a constant of the code
    first: int
    second: int
    pc: int


def comparisons(raw: bytes) -> list[Comparison]:
    """The records of a KCOV_TRACE_CMP area as the agent returned it (the count, then four
    64-bit words a comparison, in the guest's byte order: x86_64's here)."""
    words = [int.from_bytes(raw[i : i + 8], sys.byteorder) for i in range(0, len(raw) - 7, 8)]
    if not words:
        return []
    found = []
    for start in range(1, 1 + 4 * words[0], 4):
        record = words[start : start + 4]
        if len(record) < 4:
            break
        kind, first, second, pc = record
        size = 1 << ((kind >> 1) & 3)
        found.append(Comparison(size, bool(kind & KCOV_CMP_CONST), first, second, pc))
    return found


def sites(found: Iterable[Comparison]) -> int:
    """How many comparison sites (distinct PCs) ran: the sweep's measure of how deep a
    probe got."""
    return len({c.pc for c in found})


def labelled(plan: RegisterPlan, reads: Sequence[tuple[int, int]]) -> RegisterPlan:
    """`plan` with each register read that the plan leaves at its default answering a
    label of its own."""
    fixed = dict(plan.registers)
    read = [a for a in dict.fromkeys(address for address, _ in reads) if a not in fixed]
    labels = dict(zip(read, LABELS, strict=False))
    return RegisterPlan(tuple({**fixed, **labels}.items()), plan.default, plan.block_length)


def learned(
    plan: RegisterPlan, reads: Sequence[tuple[int, int]], found: Iterable[Comparison]
) -> RegisterPlan | None:
    """`plan` with each register whose label the code compared with a constant (or with
    another variable) set to that value (registers of 8 bits), and each register one of
    whose bit fields, shifted down, was compared so set to hold the constant in that
    field (field_of); None if the comparisons teach nothing new."""
    by_label = {value: address for address, value in reads if value in LABELS}
    registers = dict(plan.registers)
    changed = False
    for comparison in found:
        # The constant is the first operand (GCC's __sanitizer_cov_trace_const_cmp*); a
        # comparison of two variables may hold what the driver's match data says.
        pairs = [(comparison.first, comparison.second)]
        if not comparison.constant:
            pairs.append((comparison.second, comparison.first))
        for wanted, seen in pairs:
            if wanted > 0xFF or wanted in LABELS:
                continue
            if seen in by_label:
                address, value = by_label[seen], wanted
            elif comparison.constant and (hit := field_of(seen, wanted, by_label)) is not None:
                address, value = hit
            else:
                continue
            if registers.get(address) != value:
                registers[address] = value
                changed = True
    if not changed:
        return None
    return RegisterPlan(tuple(registers.items()), plan.default, plan.block_length)


def field_of(seen: int, wanted: int, by_label: dict[int, int]) -> tuple[int, int] | None:
    """A register whose label holds `seen` in a bit field (`(label >> shift) & mask`) and
    the label with `wanted` in that field instead: a chip ID in a register's upper bits,
    say. The field is the narrowest that holds both values, of two bits or more, and it
    must be the only one of that width any label has `seen` in (a loop counter compared
    with its bound matches some field of some label by chance: ambiguity means no)."""
    if seen == 0:
        return None  # every label has zero fields: no telling which
    for width in range(max(2, seen.bit_length(), wanted.bit_length()), 8):
        mask = (1 << width) - 1
        hits = [
            (address, (label & ~(mask << shift)) | (wanted << shift))
            for label, address in by_label.items()
            for shift in range(0, 9 - width)
            if (label >> shift) & mask == seen
        ]
        if hits:
            return hits[0] if len(hits) == 1 else None
    return None
