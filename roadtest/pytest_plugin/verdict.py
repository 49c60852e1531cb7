"""A guest test's verdict: what happened in the guest and its models while it ran, and the
cause a failure names (the model's exception rather than the driver's EIO, how the guest
died rather than a closed channel)."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING

import pytest

from roadtest.guest.protocol import ProtocolError
from roadtest.pytest_plugin import examples, verdicts
from roadtest.pytest_plugin.backend_log import BACKEND_LOG
from roadtest.pytest_plugin.stash import RUNNER
from roadtest.replayer.failures import DamagedTrace, ReplayFailure

if TYPE_CHECKING:
    from roadtest.backend.device import BackendError
    from roadtest.machine.base import Machine
    from roadtest.testing.session import RoadtestSession


class TestVerdict:
    """One guest test's marks in the guest's console, the backend's log and errors and the
    session's device problems, and what they say of the test: its cause of failure."""

    __test__ = False  # not a test class, for pytest's collection

    def __init__(self, session: RoadtestSession, console_mark: int, backend_mark: int) -> None:
        self.session = session
        self.machine = session.machine
        self.console_mark = console_mark
        self.backend_mark = backend_mark
        self.errors_mark = len(session.backend.errors)
        self.problems_mark = len(session.problems)
        self.pids: set[int] = set()  # the guest's processes when the test started
        self.note = ""  # a line for what the models report (see REPLAY_TIMING_NOTE)
        self.timed_out: float | None = None  # the limit, once the test ran past it
        self.replay_problems: list[Exception] = []  # found at detach, under the test's own failure

    def follow(self, guest: Machine) -> None:
        """The session replaced the test's live guest with one whose devicetree has a device
        the test asked for: the test goes on in it (a crashed guest is never followed)."""
        assert guest.console is not None
        self.machine, self.console_mark = guest, guest.console.mark()
        self.pids = self.session.guest_pids()

    def flush_console(self, marker: str = "") -> None:
        """Make sure the kernel's lines so far reached the host, by waiting for a marker."""
        guest = self.machine
        if guest is None or guest.console is None or not guest.alive:
            return
        marker = marker or f"roadtest: report {self.console_mark}"
        try:
            guest.flush_console(marker, self.console_mark, timeout=2.0)
        except (OSError, ProtocolError):
            return

    def new_model_errors(self) -> list[BackendError]:
        """What the backend recorded since the last look (each error is reported once)."""
        errors = self.session.backend.errors[self.errors_mark :]
        self.errors_mark += len(errors)
        return errors

    def new_problems(self) -> list[Exception]:
        """The hooks' verdicts on devices detached since the last look (a replay's failure)."""
        problems = self.session.problems[self.problems_mark :]
        self.problems_mark += len(problems)
        return problems

    def note_for(self, problems: Sequence[object]) -> str:
        """The host-load note, unless every problem (a replay's failure, or a backend error
        holding one) is a damaged trace: host load cannot cause that."""

        def damaged(problem: object) -> bool:
            return isinstance(getattr(problem, "exception", problem), DamagedTrace)

        return self.note if self.note and not all(damaged(p) for p in problems) else ""

    def cause(self, exc: BaseException | None) -> BaseException | None:
        """What to report in place of `exc` (None: the test passed): a model's exception or
        the replay's divergence, or how the guest died; None when there is nothing better
        than `exc`."""
        if self.timed_out is not None and self.machine is not None:
            return verdicts.timed_out(self.machine, self.console_mark, self.timed_out)
        errors = self.new_model_errors()
        first = errors[0].exception if errors else None
        if exc is not None and isinstance(first, ReplayFailure) and first.in_unbind:
            # The test failed on its own, and so unbound early: the replay diverged after.
            self.replay_problems.append(first)
            errors = []
        outcome = verdicts.model_outcome(errors, self.note_for(errors))
        if outcome is not None:
            return outcome
        problems = self.new_problems()
        if exc is None and problems and isinstance(problems[0], ReplayFailure):
            return verdicts.replay_outcome(problems, self.note_for(problems))
        # Found when a device was detached (the driver stopped early): a test that failed
        # on its own stopped early itself, so its exception stays the headline.
        self.replay_problems += problems
        if self.machine is not None and exc is not None and verdicts.is_guest_death(exc):
            controller = self.session.backend.controller
            running = controller.running_for if controller is not None else 0.0
            return verdicts.hang_or_death(self.machine, self.console_mark, exc, running)
        return None

    def kernel_lines(self) -> list[str]:
        if self.machine is None or self.machine.console is None:
            return []
        lines = self.machine.console.lines_since(self.console_mark)
        return [line for line in lines if examples.MARKER not in line]

    def backend_lines(self) -> list[str]:
        return BACKEND_LOG.records[self.backend_mark :]


VERDICT = pytest.StashKey[TestVerdict]()  # a guest test's


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """A guest test's failure names its cause: the model's exception rather than the
    driver's EIO, how the guest died rather than a closed channel."""
    __tracebackhide__ = True  # the report shows the test's frames and the cause, not ours
    test_verdict = item.stash.get(VERDICT, None)
    if test_verdict is None or RUNNER in item.stash:
        return (yield)  # not a guest test, or a Hypothesis one: each example said its cause
    try:
        result = yield
    except (KeyboardInterrupt, pytest.exit.Exception, pytest.skip.Exception):
        raise  # the user's Ctrl-C, or the test's own decision
    except BaseException as exc:
        cause = test_verdict.cause(exc)
        if cause is None:
            raise
        raise cause from exc
    cause = test_verdict.cause(None)
    if cause is not None:
        raise cause
    return result
