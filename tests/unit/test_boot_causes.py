"""A guest that dies at boot for a cause roadtest knows says that cause, in one line."""

from __future__ import annotations

from roadtest.machine.console import known_cause


def test_a_boot_that_dies_for_a_known_cause_says_it() -> None:
    # What UML 6.1 prints at its first exec on a host with AMX (kernel-patches/um/0001).
    lines = [
        "[    0.000000] userspace - ptrace set fp regs failed, errno = 14",
        "[    0.000000] Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b",
    ]
    cause = known_cause(lines)
    assert cause is not None and "AMX" in cause and "kernel-patches/um/0001" in cause
    assert "\n" not in cause
    assert known_cause(lines[1:]) is None  # a panic alone: no known cause
