"""The sweep's KCOV feedback: reading a KCOV_TRACE_CMP area as the kernel lays it out
(Documentation/dev-tools/kcov.rst: the count in word 0, then four 64-bit words per
comparison: type, first operand, second operand, PC; include/uapi/linux/kcov.h:
KCOV_CMP_CONST is bit 0 of the type, KCOV_CMP_SIZE(n) = n << 1 with the operand size
1 << n bytes), and what a probe's comparisons teach the next register plan."""

from __future__ import annotations

import sys

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.sweep.feedback import (
    LABELS,
    Comparison,
    comparisons,
    labelled,
    learned,
    sites,
)

CONST = 1  # KCOV_CMP_CONST


def size_bits(n: int) -> int:
    return n << 1  # KCOV_CMP_SIZE(n)


def area(*records: tuple[int, int, int, int], room: int = 0) -> bytes:
    words = [len(records)] + [w for r in records for w in r] + [0] * room
    return b"".join(w.to_bytes(8, sys.byteorder) for w in words)


def test_an_area_gives_its_comparisons_in_order() -> None:
    raw = area(
        (size_bits(0) | CONST, 0x58, 0xA1, 0x1000),
        (size_bits(1), 0x1234, 0x5678, 0x1008),
        (size_bits(3) | CONST, 7, 8, 0x1010),
    )
    assert comparisons(raw) == [
        Comparison(1, True, 0x58, 0xA1, 0x1000),
        Comparison(2, False, 0x1234, 0x5678, 0x1008),
        Comparison(8, True, 7, 8, 0x1010),
    ]


def test_an_area_reads_no_further_than_its_count() -> None:
    raw = area((size_bits(0) | CONST, 1, 2, 3), room=8)  # stale words after the count's
    assert len(comparisons(raw)) == 1


def test_an_empty_or_cut_area_gives_what_is_whole() -> None:
    assert comparisons(b"") == []
    whole = area((CONST, 1, 2, 3), (CONST, 4, 5, 6))
    assert len(comparisons(whole[: 8 + 4 * 8 + 8])) == 1  # the second record cut short


def test_sites_counts_distinct_pcs() -> None:
    found = [Comparison(1, True, 1, 2, pc) for pc in (0x10, 0x20, 0x10)]
    assert sites(found) == 2


def test_labelling_gives_each_register_read_a_value_of_its_own() -> None:
    plan = RegisterPlan(((0x10, 0x33),))
    reads = [(0x0F, 0), (0x10, 0x33), (0x0F, 0), (0x20, 0)]
    out = labelled(plan, reads)
    fixed = dict(out.registers)
    assert fixed[0x10] == 0x33  # the plan's own registers keep their values
    assert fixed[0x0F] in LABELS and fixed[0x20] in LABELS
    assert fixed[0x0F] != fixed[0x20]


def test_a_constant_compared_with_a_label_sets_that_register() -> None:
    plan = labelled(RegisterPlan(), [(0x0F, 0), (0xFE, 0)])
    label_of = dict(plan.registers)
    reads = [(0x0F, label_of[0x0F]), (0xFE, label_of[0xFE])]
    found = [
        Comparison(1, True, 0x58, label_of[0xFE], 0x100),  # if (id != 0x58)
        Comparison(1, True, 0x01, 0x02, 0x108),  # a loop counter: no label
    ]
    better = learned(plan, reads, found)
    assert better is not None
    assert dict(better.registers)[0xFE] == 0x58
    assert dict(better.registers)[0x0F] == label_of[0x0F]


def test_a_comparison_with_match_data_counts_either_way_round() -> None:
    plan = labelled(RegisterPlan(), [(0x00, 0)])
    label = dict(plan.registers)[0x00]
    found = [Comparison(1, False, label, 0x91, 0x100)]  # id == chip->id: two variables
    better = learned(plan, [(0x00, label)], found)
    assert better is not None and dict(better.registers)[0x00] == 0x91


def test_nothing_new_learned_is_none() -> None:
    plan = RegisterPlan(((0x0F, 0x58),))
    assert learned(plan, [(0x0F, 0x58)], [Comparison(1, True, 0x58, 0x58, 1)]) is None
    wide = labelled(RegisterPlan(), [(0x01, 0)])
    label = dict(wide.registers)[0x01]
    # A constant wider than the 8-bit register cannot be its value.
    assert learned(wide, [(0x01, label)], [Comparison(2, True, 0x1234, label, 1)]) is None


def test_a_constant_compared_with_a_field_of_a_label_sets_that_field() -> None:
    # A part number in bits 5:3 (bq24190's REG0A, say): (value >> 3) & 7 == 4.
    plan = labelled(RegisterPlan(), [(0x0A, 0)])
    label = dict(plan.registers)[0x0A]
    field = (label >> 3) & 7
    assert field != 0  # the labels are chosen with bits set all over
    wanted = 5 if field != 5 else 6
    better = learned(plan, [(0x0A, label)], [Comparison(4, True, wanted, field, 0x100)])
    assert better is not None
    assert (dict(better.registers)[0x0A] >> 3) & 7 == wanted


def test_a_zero_field_tells_nothing() -> None:
    plan = labelled(RegisterPlan(), [(0x0A, 0)])
    label = dict(plan.registers)[0x0A]
    assert learned(plan, [(0x0A, label)], [Comparison(4, True, 4, 0, 0x100)]) is None


def test_the_register_file_logs_what_the_driver_read() -> None:
    device = RegisterFile(RegisterPlan(((0x0F, 0x58),)))
    device.write(bytes([0x0F]))
    assert device.read(2) == bytes([0x58, 0x00])  # auto-increment: 0x0F, then 0x10
    assert device.reads == [(0x0F, 0x58), (0x10, 0x00)]
    device.reset()
    assert device.reads == []
