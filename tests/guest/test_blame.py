"""Trouble is blamed on the test that caused it, with a headline that says what happened.

Each case runs a small test file in a pytest subprocess (one guest) and checks
the outcomes and the report, as tests/guest/test_harness.py does.
"""

from __future__ import annotations

import pytest
from scaffold import AFTER_A_LOST_GUEST, run

AFTER_ON_THE_SAME_GUEST = """
def test_after(guest):
    with guest.bound(SENSOR) as dev:
        dev.model.result = 0x0001
        assert read_float(dev.path.only("iio:device*") / "in_illuminance_input") == 0.01
"""


def test_crash_started_in_the_background_is_blamed_on_its_test(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
def test_leaves_a_crash_behind(guest):
    rc, _, _ = guest.agent.run(
        ["sh", "-c", "(sleep 5; echo c > /proc/sysrq-trigger) >/dev/null 2>&1 &"]
    )
    assert rc == 0
"""
        + AFTER_ON_THE_SAME_GUEST,
    )
    # The guilty test fails, or errors at its teardown, depending on whether the crash
    # came before the teardown killed what it left running; the next test passes.
    blamed = [ln for ln in result.outlines if ln.startswith(("FAILED ", "ERROR "))]
    assert len(blamed) == 1, result.stdout.str()
    assert "::test_leaves_a_crash_behind - " in blamed[0]
    killed = "left processes running in the guest" in blamed[0] and "sleep 5" in blamed[0]
    crashed = "the guest kernel panicked: Kernel panic - not syncing: sysrq triggered crash"
    assert killed or crashed in blamed[0], blamed[0]


def test_processes_a_test_leaves_running_are_killed_and_reported(
    pytester: pytest.Pytester,
) -> None:
    # Under basic time-travel: under simulated time a process that loops without a
    # system call stops the guest (docs/troubleshooting.md, "the guest hung").
    result = run(
        pytester,
        """
def test_leaves_a_busy_loop(guest):
    rc, _, _ = guest.agent.run(["sh", "-c", "while :; do :; done >/dev/null 2>&1 &"])
    assert rc == 0
"""
        + AFTER_ON_THE_SAME_GUEST
        + """
def test_nothing_left(guest):
    assert guest.boots == 1  # the same guest, quiet again
    rc, out, _ = guest.agent.run(["ps", "-e", "-o", "args="])
    assert b"while" not in out
""",
        "--roadtest-time=travel",
    )
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(
        [
            "ERROR *::test_leaves_a_busy_loop - Failed: the test left processes running "
            "in the guest (killed now*: *: sh -c while :; do :; done*"
        ]
    )


def test_a_busy_loop_under_simulated_time_hangs_the_guest_and_the_headline_says_why(
    pytester: pytest.Pytester,
) -> None:
    result = run(
        pytester,
        """
def test_starts_a_busy_loop(guest):
    guest.agent.run(["sh", "-c", "while :; do :; done >/dev/null 2>&1 &"], timeout=3)
"""
        + AFTER_A_LOST_GUEST,
        "--roadtest-time=sim",
    )
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        [
            "FAILED *::test_starts_a_busy_loop - *GuestDied: the guest hung: guest agent did "
            "not answer within 3 s; its clock stood still: it ran * s without waiting*"
        ]
    )


def test_guest_panic_headline_names_the_panic(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
def test_crash(guest):
    guest.agent.write_file("/proc/sysrq-trigger", b"c")
"""
        + AFTER_A_LOST_GUEST,
    )
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        [
            "FAILED *test_crash - *the guest kernel panicked: "
            "Kernel panic - not syncing: sysrq triggered crash",
        ]
    )
    result.stdout.fnmatch_lines(["*last kernel lines:*", "*sysrq: Trigger a crash*"])


def test_guest_poweroff_headline(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
def test_poweroff(guest):
    guest.agent.call("poweroff")
    guest.agent.ping()
"""
        + AFTER_A_LOST_GUEST,
    )
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["FAILED *test_poweroff - *the guest powered off*"])


def test_guest_hang_headline(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
import os

def test_hang(guest):
    fifo = guest.workdir / "never-written"
    os.mkfifo(fifo)
    guest.agent.call("open", path=str(fifo), flags=os.O_RDONLY, mode=0, timeout=2)
"""
        + AFTER_A_LOST_GUEST,
    )
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["FAILED *test_hang - *the guest hung*did not answer within 2 s*"])
