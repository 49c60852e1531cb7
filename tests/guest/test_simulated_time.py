"""Simulated time (`--roadtest-time=sim`): runs repeat event for event, idle guests sleep.

A recording of the clock-bound driver tests made twice gives the same traces: every transfer,
GPIO request, interrupt and marker, with the same simulated timestamps. An
idle guest blocks in its wait for the calendar instead of spinning.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from scaffold import own_cpu, run

from roadtest.checkout import repo_root
from roadtest.kernel import ensure_kernel
from roadtest.machine.base import TimeMode
from roadtest.machine.process import ProcessGuest
from roadtest.testing.session import RoadtestSession
from roadtest.trace.format import read_trace


def _roadtest_under_sim(command: str, *args: str) -> None:
    """`roadtest COMMAND --roadtest-time=sim ARGS` from the repository, on a CPU of ours;
    it must pass."""
    result = subprocess.run(
        [
            str(Path(sys.executable).with_name("roadtest")),
            command,
            "--roadtest-time=sim",
            f"--roadtest-cpu={own_cpu()}",
            *args,
            "-q",
        ],
        cwd=repo_root(),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


# The driver tests whose I/O leans most on the clock: interrupts (vcnl4010, tca8418, the
# RTC alarms, pcf857x's edges), conversion times on the model's clock (opt3001, ltr501),
# polls with timeouts (drv260x). About 230 traces in 6 s, where the whole suite took 20 s
# a recording; every other golden trace is replayed against its recording each make test.
RECORDED = [
    "tests/drivers/iio/light",
    "tests/drivers/rtc",
    "tests/drivers/input",
    "tests/drivers/gpio",
]


def _record(out: Path) -> None:
    _roadtest_under_sim("record", "--out", str(out), *RECORDED, "--ignore-glob=*_properties.py")


def _events(path: Path) -> list[dict[str, Any]]:
    _, events = read_trace(path)
    # `t` is the host's clock: the one thing a second run may change.
    return [{k: v for k, v in event.items() if k != "t"} for event in events]


def test_a_recording_made_twice_is_the_same_event_for_event(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    _record(first)
    _record(second)
    traces = sorted(p.relative_to(first) for p in first.rglob("*.rtrace"))
    assert traces == sorted(p.relative_to(second) for p in second.rglob("*.rtrace"))
    assert len(traces) > 40
    timed = 0
    for name in traces:
        a, b = _events(first / name), _events(second / name)
        assert a == b, f"{name}: the second recording differs"
        timed += all("sim" in event for event in a)
    assert timed == len(traces)


def _kernel_log_of_a_property_run(work: Path) -> list[str]:
    _roadtest_under_sim(
        "run", f"--roadtest-workdir={work}", "tests/drivers/iio/light/test_vcnl4000_properties.py"
    )
    (log,) = work.glob("gw0/guest-*/kernel.log")
    # The runner's end-of-example marker names a position in the host's copy of the
    # console (roadtest/pytest_plugin/examples.py): the host's count, not the guest's doing.
    return [line for line in log.read_text().splitlines() if "roadtest: example " not in line]


def test_hypothesis_examples_reproduce_exactly() -> None:
    """The quick profile is derandomized: the same examples run again, and under simulated
    time the guest does the same thing at the same times for each (its kernel log, time
    stamps included, line for line: the data-ready interrupts, the driver's timeouts)."""
    works = [Path(tempfile.mkdtemp(prefix="rt-")) for _ in range(2)]  # short: socket paths
    try:
        first, second = (_kernel_log_of_a_property_run(work) for work in works)
    finally:
        for work in works:
            shutil.rmtree(work, ignore_errors=True)
    assert len(first) > 100
    assert first == second


def test_an_idle_guest_sleeps(tmp_path: Path) -> None:
    kernel = ensure_kernel(repo_root())
    cpu = own_cpu()
    session = RoadtestSession(kernel, [], tmp_path / "work", cpu=cpu, time=TimeMode.SIM)
    try:
        session.start()
        guest = session.machine
        assert isinstance(guest, ProcessGuest)
        uptime = session.agent.read_file("/proc/uptime")
        before = guest.cpu_seconds()
        time.sleep(2.0)
        used = guest.cpu_seconds() - before
        # The guest's clock stood still, and its process (UML's kernel) used (next to) no CPU.
        assert session.agent.read_file("/proc/uptime") == uptime
        assert used < 0.2
    finally:
        session.stop()


# A calendar that breaks the protocol once the guest runs: a RUN one nanosecond later
# than the guest asked for, which time.c meets with BUG_ON(time_travel_time != e->time).
BROKEN_CALENDAR = """
import pytest

from roadtest.simtime import controller as calendar
from roadtest.simtime import protocol


@pytest.fixture
def broken_calendar(monkeypatch):
    send = calendar.Controller._send

    def late_run(self, op, seq, when, fds=None):
        send(self, op, seq, when + 1 if op == protocol.RUN else when, fds)

    monkeypatch.setattr(calendar.Controller, "_send", late_run)


def test_broken(guest, broken_calendar):
    guest.sleep(0.05)


def test_after(guest):
    guest.sleep(0.05)
    assert float(guest.agent.read_file("/proc/uptime").split()[0]) < 1
"""


def test_a_broken_calendar_fails_the_test_with_the_console_and_the_next_gets_a_guest(
    pytester: pytest.Pytester,
) -> None:
    work = Path(tempfile.mkdtemp(prefix="rt-"))  # short: socket paths must fit 107 bytes
    result = run(
        pytester, BROKEN_CALENDAR, "--roadtest-time=sim", f"--roadtest-workdir={work}", "-rf"
    )
    result.assert_outcomes(failed=1, passed=1)
    out = result.stdout.str()
    assert "FAILED test_user.py::test_broken" in out
    assert "kernel BUG" in out or "time-travel" in out  # the guest's own words, from its log
    assert "console: " in out
    # Nothing of the run is left: no process started in its work directory, no socket.
    left = subprocess.run(["pgrep", "-f", str(work)], capture_output=True, text=True, check=False)
    assert left.stdout == ""
    assert not list(work.rglob("*.sock"))
    shutil.rmtree(work)
