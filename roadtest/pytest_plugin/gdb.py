"""--roadtest-gdb: every guest waits, once booted, until gdb is attached to its kernel.

roadtest loads the drivers of the guest's devices (none is bound: the guest does
not autoprobe), prints the command to paste into another terminal (the machine
makes it: Machine.gdb_command), and waits before any test runs. The command runs
lx-symbols, so every driver's symbols are there at the prompt, and a breakpoint
can go anywhere in a driver, its probe included. A guest booted later in the run
(after a crash, or for another devicetree) waits again, with a command of its own.

Under gdb nothing times out: no call into the guest (RoadtestSession), and no
test's time limit (timeouts.py), since the developer may hold the guest for as
long as they like.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from roadtest.machine.base import GuestError, Machine

_POLL = 0.2  # seconds between looks for a debugger


def waiter(config: pytest.Config) -> Callable[[Machine, list[Path]], None]:
    """RoadtestSession's `debugger`: print how to attach gdb to the guest, and wait for it."""

    def wait_for_gdb(guest: Machine, module_dirs: list[Path]) -> None:
        command = guest.gdb_command(module_dirs)
        _tell(
            config,
            f"\nroadtest: the guest waits for gdb before the tests go on. "
            f"In another terminal, run:\n\n{command}\n\n"
            "then set breakpoints (the drivers' symbols are loaded; after a module loads "
            "later, run lx-symbols again) and `continue`.",
        )
        while not guest.debugger_attached():
            if not guest.alive:
                raise GuestError(
                    f"the guest ended before gdb attached; console: {guest.console_log}"
                )
            time.sleep(_POLL)
        _tell(config, "roadtest: gdb is attached: the tests go on when it continues")

    return wait_for_gdb


def _tell(config: pytest.Config, text: str) -> None:
    """A message on the terminal, past pytest's capture (the guest boots inside a test)."""
    capture = config.pluginmanager.getplugin("capturemanager")
    terminal = config.pluginmanager.getplugin("terminalreporter")
    suspended = capture.global_and_fixture_disabled() if capture else contextlib.nullcontext()
    with suspended:
        if terminal is not None:
            terminal.write_line(text)
            terminal.flush()
        else:
            print(text, file=sys.stderr, flush=True)
