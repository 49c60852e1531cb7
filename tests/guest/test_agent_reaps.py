"""The agent is PID 1 in the guest: the processes a test leaves behind become its children,
and when they end (killed at the test's end, or on their own) it reaps them, so no zombie
stays in the guest's process table."""

from __future__ import annotations

import time

from roadtest.testing import RoadtestSession


def state_and_parent(guest: RoadtestSession, pid: int) -> tuple[str, int] | None:
    """A process's state letter and parent (proc(5), /proc/PID/stat), None once it is gone."""
    try:
        stat = guest.agent.read_file(f"/proc/{pid}/stat").decode()
    except FileNotFoundError:
        return None
    fields = stat.rpartition(")")[2].split()
    return fields[0], int(fields[1])


def gone(guest: RoadtestSession, pid: int) -> bool:
    """Whether `pid` leaves the process table within 10 s (host time); every look at it is
    an agent request, before which the agent reaps."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if state_and_parent(guest, pid) is None:
            return True
        time.sleep(0.05)
    return False


def test_a_killed_background_process_is_reaped(guest: RoadtestSession) -> None:
    rc, out, _ = guest.agent.run(["/bin/sh", "-c", "sleep 1000 >/dev/null 2>&1 & echo $!"])
    assert rc == 0
    stray = int(out)
    state = state_and_parent(guest, stray)
    assert state is not None and state[1] == 1  # its shell ended: PID 1 is its parent
    assert guest.agent.run(["kill", "-KILL", str(stray)])[0] == 0  # as kill_strays does
    assert gone(guest, stray), state_and_parent(guest, stray)


def test_a_background_process_that_ends_on_its_own_is_reaped(guest: RoadtestSession) -> None:
    rc, out, _ = guest.agent.run(["/bin/sh", "-c", "sleep 0.2 >/dev/null 2>&1 & echo $!"])
    assert rc == 0
    # A program run meanwhile still gets its own exit status.
    assert guest.agent.run(["/bin/sh", "-c", "sleep 0.5; exit 7"])[0] == 7
    assert gone(guest, int(out)), state_and_parent(guest, int(out))
