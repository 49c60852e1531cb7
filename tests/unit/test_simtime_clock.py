"""The clocks a model can be given: at once (`INSTANT`), and moved by hand (`ManualClock`)."""

from __future__ import annotations

import pytest

from roadtest.simtime.clock import INSTANT, ManualClock


def test_instant_work_is_done_at_once() -> None:
    done: list[int] = []
    INSTANT.after(10**9, lambda: done.append(1))
    assert done == [1]
    assert not INSTANT.simulated


def test_manual_work_runs_when_due_in_time_order_and_sees_its_own_time() -> None:
    clock = ManualClock()
    seen: list[tuple[str, int]] = []
    clock.after(300, lambda: seen.append(("late", clock.now())))
    clock.after(100, lambda: seen.append(("early", clock.now())))
    clock.after(100, lambda: seen.append(("early, asked second", clock.now())))
    clock.advance(99)
    assert seen == [] and clock.now() == 99 and clock.pending == 3
    clock.advance(1)
    assert seen == [("early", 100), ("early, asked second", 100)]
    clock.advance(1000)
    assert seen[-1] == ("late", 300)
    assert clock.now() == 1100 and clock.pending == 0


def test_work_scheduled_by_work_falls_due_in_the_same_advance() -> None:
    """A conversion that starts the next one (continuous mode): both within one advance."""
    clock = ManualClock(start=5)
    ends: list[int] = []

    def convert() -> None:
        ends.append(clock.now())
        if len(ends) < 3:
            clock.after(10, convert)

    clock.after(10, convert)
    clock.advance(25)
    assert ends == [15, 25]
    clock.advance(10)
    assert ends == [15, 25, 35]


def test_time_does_not_run_backwards() -> None:
    clock = ManualClock()
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)
    with pytest.raises(ValueError, match="in the past"):
        clock.after(-1, lambda: None)
