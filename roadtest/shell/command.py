"""`roadtest shell [options] SELECTION...`: a pytest session that opens a guest instead of
running tests.

Running as pytest gives the shell what a test run has: conftest files, every
`roadtest run` option (--roadtest-module, --roadtest-bootargs, --roadtest-machine,
--roadtest-cpu ...), the test modules' device declarations as collection finds
them, and the plugin's own way to open the guest session. The plugin below
takes pytest's place at the run-tests step (no test runs, so no time limit or
capture applies) and hands the terminal to the console.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from roadtest.errors import RoadtestError
from roadtest.guest.protocol import ProtocolError
from roadtest.machine.base import GuestError
from roadtest.shell import selection
from roadtest.shell.console import GuestConsole, bind_all
from roadtest.shell.selection import Selection
from roadtest.shell.terminal import Terminal

# Options of a test run that have no meaning for a session where no test runs.
_NOT_FOR_SHELL = ("--roadtest-record", "--roadtest-replay", "--roadtest-ktap", "-n")


class ShellPlugin:
    """Collects the selection's modules, then, at the run-tests step, the interactive session."""

    def __init__(self, selections: Sequence[Selection]) -> None:
        self.selections = list(selections)
        self.error: RoadtestError | None = None
        self.status: int | None = None
        self.collect_errors: list[pytest.CollectReport] = []

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collect_errors.append(report)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        try:
            self.status = self._run(session)
        except RoadtestError as err:
            self.error = err
        except GuestError as err:  # it did not boot: one line, as for bad input
            self.error = RoadtestError(str(err))
        return True  # the tests themselves do not run

    def _run(self, session: pytest.Session) -> int:
        from roadtest.testing import plugin

        for report in self.collect_errors:
            lines = [line for line in str(report.longrepr).splitlines() if line.strip()]
            why = lines[-1].strip() if lines else "collection failed"
            raise RoadtestError(f"cannot collect {report.nodeid or 'the tests'}: {why}")
        config = session.config
        declared = plugin.collected(config)
        devices = selection.devices(self.selections, session.items, declared)
        # The guest's tree has the whole modules of the devices, as when their tests run
        # (a fragment may use another's #include); just the devices if that does not fit.
        tree = [d for group in declared.values() if set(group) & set(devices) for d in group]
        terminal = Terminal()
        try:
            guest = plugin.open_session(config, groups=[tree], terminal=terminal.guest)
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
    plugin = ShellPlugin(selections)
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
