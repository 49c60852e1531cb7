"""`roadtest shell [options] SELECTION...`: a pytest session that opens a guest instead of
running tests (roadtest.pytest_plugin.session_runner), and hands the terminal to the
console."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Sequence
from pathlib import Path

from roadtest.errors import RoadtestError
from roadtest.guest.protocol import ProtocolError
from roadtest.pytest_plugin.session_runner import Collected, SessionRunner
from roadtest.shell import selection
from roadtest.shell.console import GuestConsole, bind_all
from roadtest.shell.selection import Selection
from roadtest.shell.terminal import Terminal

# Options of a test run that have no meaning for a session where no test runs.
_NOT_FOR_SHELL = ("--roadtest-record", "--roadtest-replay", "--roadtest-ktap", "-n")


def _open(selections: Sequence[Selection], found: Collected) -> int:
    """The interactive session on what collection found."""
    devices = selection.devices(selections, found.items, found.declared)
    # The guest's tree has the whole modules of the devices, as when their tests run
    # (a fragment may use another's #include); just the devices if that does not fit.
    tree = [d for group in found.declared.values() if set(group) & set(devices) for d in group]
    terminal = Terminal()
    try:
        guest = found.open_session(groups=[tree], terminal=terminal.guest_end)
        try:
            guest.require(*devices)
            bound = bind_all(guest, devices)
            return GuestConsole(guest, terminal, bound).interact()
        finally:
            with contextlib.suppress(OSError, ProtocolError):
                guest.detach_all()  # the drivers' remove runs, as after a test
            guest.stop()
    finally:
        terminal.close()


def split(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """The arguments as pytest options (those of `roadtest run`, as --option=VALUE) and the
    words that select devices."""
    options = [a for a in args if a.startswith("-")]
    for option in options:
        if option.split("=", 1)[0] in _NOT_FOR_SHELL or option.startswith("-n"):
            raise RoadtestError(f"shell: {option.split('=', 1)[0]} is for test runs, not a shell")
    return options, [a for a in args if not a.startswith("-")]


def shell(
    args: Sequence[str], drivers: Path, pytest_main: Callable[[list[str], list[object]], int]
) -> int:
    """Run the shell for `args`; `drivers` is where device names are looked up."""
    options, words = split(args)
    selections = selection.parse(words)
    plugin = SessionRunner(functools.partial(_open, selections))
    pytest_args = [
        *options,
        "--capture=no",  # the terminal is the user's
        "-p",
        "no:terminal",  # no pytest report around the session
        "-p",
        "no:cacheprovider",
        *selection.collect_paths(selections, drivers),
    ]
    status = pytest_main(pytest_args, [plugin])
    if plugin.error is not None:
        raise plugin.error
    return status if plugin.status is None else plugin.status
