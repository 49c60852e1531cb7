"""A pytest run that opens a guest session in place of running tests (`roadtest shell`).

Running as pytest gives such a command what a test run has: conftest files, every
`roadtest run` option, the test modules' device declarations as collection finds them,
and the plugin's own way to open the guest session. `SessionRunner` takes pytest's place
at the run-tests step (no test runs, so no time limit or capture applies) and calls the
command with what collection found.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from roadtest.errors import RoadtestError
from roadtest.machine.base import GuestError
from roadtest.pytest_plugin.collection import collected
from roadtest.pytest_plugin.fixtures import open_session

if TYPE_CHECKING:
    from roadtest.testing.devices import Device
    from roadtest.testing.session import RoadtestSession


@dataclass(frozen=True)
class Collected:
    """What collection found, and how to open the session the run's options describe."""

    items: Sequence[pytest.Item]  # the collected tests
    declared: dict[str, list[Device]]  # the devices each test module declares, by module
    # open_session(groups=..., terminal=...): booted, as a test run's (fixtures.open_session)
    open_session: Callable[..., RoadtestSession]


class SessionRunner:
    """Collects, then at the run-tests step calls `run` with what was collected; `status` is
    what it returned, `error` a RoadtestError it (or collection) raised."""

    def __init__(self, run: Callable[[Collected], int]) -> None:
        self.run = run
        self.error: RoadtestError | None = None
        self.status: int | None = None
        self.collect_errors: list[pytest.CollectReport] = []

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collect_errors.append(report)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        try:
            for report in self.collect_errors:
                lines = [line for line in str(report.longrepr).splitlines() if line.strip()]
                why = lines[-1].strip() if lines else "collection failed"
                raise RoadtestError(f"cannot collect {report.nodeid or 'the tests'}: {why}")
            config = session.config
            found = Collected(
                session.items, collected(config), functools.partial(open_session, config)
            )
            self.status = self.run(found)
        except RoadtestError as err:
            self.error = err
        except GuestError as err:  # it did not boot: one line, as for bad input
            self.error = RoadtestError(str(err))
        return True  # the tests themselves do not run
