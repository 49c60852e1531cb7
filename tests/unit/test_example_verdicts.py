"""Which failure a kernel report is, from the lines the kernel prints (the formats of
lib/bug.c, mm/kasan/report.c, lib/ubsan.c, kernel/locking/lockdep.c, kernel/panic.c)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import cast

import pytest

from roadtest.guest.protocol import ProtocolError
from roadtest.machine.base import Machine
from roadtest.machine.console import Console
from roadtest.pytest_plugin.examples import ExampleRunner, ExampleStats, excerpt, first_report
from roadtest.pytest_plugin.verdicts import (
    KASANReport,
    KernelBug,
    KernelFailure,
    KernelOops,
    KernelPanic,
    KernelWarning,
    LockdepReport,
    UBSANReport,
)
from roadtest.testing.session import RoadtestSession

T = "[   12.340000] "


@pytest.mark.parametrize(
    ("lines", "kind"),
    [
        (
            [
                "WARNING: CPU: 0 PID: 7 at drivers/iio/light/x.c:42 x_read+0x1/0x2",
                "Kernel panic - not syncing: kernel: panic_on_warn set ...",
            ],
            KernelWarning,
        ),
        (
            [
                "BUG: KASAN: slab-out-of-bounds in x_read+0x1/0x2",
                "Read of size 1 at addr 000000006b2c1e40 by task python3/1",
                "Kernel panic - not syncing: KASAN: panic_on_warn set ...",
            ],
            KASANReport,
        ),
        (["UBSAN: shift-out-of-bounds in drivers/iio/light/x.c:9:12"], UBSANReport),
        (["WARNING: possible circular locking dependency detected"], LockdepReport),
        (["WARNING: possible recursive locking detected"], LockdepReport),
        (["Oops: general protection fault, probably for non-canonical address"], KernelOops),
        (["BUG: kernel NULL pointer dereference, address: 0000000000000008"], KernelBug),
        (["Kernel panic - not syncing: Kernel mode signal 8"], KernelPanic),
    ],
)
def test_the_first_report_names_the_failure(lines: list[str], kind: type[KernelFailure]) -> None:
    found = first_report(["x: probe done", *(T + line for line in lines)])
    assert found is not None
    assert found[0] is kind
    assert found[1] == T.strip() + " " + lines[0]


def test_no_report_in_ordinary_lines() -> None:
    assert first_report([T + "opt3001 0-0044: Found TI OPT3001", T + "i2c i2c-0: probe"]) is None


def test_an_excerpt_starts_a_few_lines_before_the_report() -> None:
    lines = [f"line {i}" for i in range(100)]
    lines[50] = "WARNING: CPU: 0 PID: 7 at x.c:1 x+0x0/0x1"
    shown = excerpt(lines, limit=10).splitlines()
    assert shown[0].strip() == "line 47"
    assert shown[3].strip().startswith("WARNING:")
    assert shown[-1].strip() == "(90 more lines in the console log)"


def test_an_excerpt_without_a_report_is_the_last_lines() -> None:
    shown = excerpt([f"line {i}" for i in range(5)], limit=3).splitlines()
    assert [s.strip() for s in shown] == [
        "line 2",
        "line 3",
        "line 4",
        "(2 more lines in the console log)",
    ]


class _DyingGuest:
    """A guest whose agent channel has closed while its kernel still prints its panic (as a
    UML guest on a loaded host does): its process ends `delay` s later, the panic line in."""

    name = "dummy"
    alive = False

    def __init__(self, tmp_path: Path, delay: float) -> None:
        read_end, self._write_end = os.pipe()
        self.console_log = tmp_path / "console.log"
        self.console = Console(read_end, self.console_log, tmp_path / "kernel.log")
        self._ended = threading.Event()
        self._dying = threading.Thread(target=self._die, args=(delay,), daemon=True)
        self._dying.start()

    def _die(self, delay: float) -> None:
        time.sleep(delay)
        os.write(
            self._write_end, (T + "Kernel panic - not syncing: Kernel mode signal 8\n").encode()
        )
        os.close(self._write_end)
        self._ended.set()

    def exit_status(self, wait: float) -> int | None:
        if not self._ended.wait(wait):
            return None
        self.console.wait_closed(wait)
        return 0


class _Log:
    console_mark = 0

    def cause(self, exc: BaseException | None) -> BaseException | None:
        return exc


def test_a_panic_printed_after_the_channel_closed_is_still_the_verdict(tmp_path: Path) -> None:
    # Hypothesis calls a test flaky when one example that crashes a guest is a KernelPanic
    # and the next, the same crash, is "the guest died" because its lines came late.
    guest = _DyingGuest(tmp_path, delay=1.0)
    runner = ExampleRunner(cast(RoadtestSession, None), "test_x", lambda _: _Log(), ExampleStats())
    verdict = runner._verdict(cast(Machine, guest), _Log(), ProtocolError("channel closed by peer"))
    assert isinstance(verdict, KernelPanic), verdict
    assert "Kernel mode signal 8" in str(verdict)
