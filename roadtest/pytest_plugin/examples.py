"""Hypothesis examples against one live guest: each example's kernel trouble is its failure.

A `@given` guest test runs many examples in the guest its test got. Around each
one (the plugin wraps Hypothesis's `inner_test`) this module:

- starts it on a live, clean guest: after a crash, a hang or any kernel report the
  guest is replaced before the next example, so no example inherits a tainted
  kernel (a lockdep report even turns lockdep off for the rest of a boot);
- gives every agent request a host-timed limit: a request not answered in time is a
  hang, and the guest is killed;
- ends it with a verdict: a panic, oops, BUG, WARN, UBSAN, KASAN or lockdep report
  printed during the example, the guest's death or a hang fails the example with
  the kernel's lines; otherwise a model's fault, else the test's own exception.

Each kind of kernel failure is its own exception class raised from one place, so
Hypothesis, which tells failures apart by type and origin, shrinks a panic as one
failure however the test got there, and never trades it for a different one.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from roadtest import signals
from roadtest.guest.client import AgentTimeout
from roadtest.machine.console import TROUBLE, first_kernel_report
from roadtest.pytest_plugin import verdicts
from roadtest.pytest_plugin.verdicts import (
    GuestDied,
    GuestHang,
    KASANReport,
    KernelBug,
    KernelFailure,
    KernelOops,
    KernelPanic,
    KernelWarning,
    LockdepReport,
    UBSANReport,
)
from roadtest.run_options import DEFAULT_HANG_LIMIT

if TYPE_CHECKING:
    from roadtest.machine.base import Machine
    from roadtest.testing.session import RoadtestSession

EXCERPT_LINES = 40
MARKER = "roadtest: example "  # what the runner prints at each example's end


# The kernel's reports, by the kind console.REPORTS gives their first line.
_KINDS: dict[str, type[KernelFailure]] = {
    "KASAN": KASANReport,
    "UBSAN": UBSANReport,
    "lockdep": LockdepReport,
    "oops": KernelOops,
    "BUG": KernelBug,
    "WARN": KernelWarning,
    "panic": KernelPanic,
}


def first_report(lines: Sequence[str]) -> tuple[type[KernelFailure], str] | None:
    """The failure class and line of the first kernel report among `lines`."""
    found = first_kernel_report(lines)
    return None if found is None else (_KINDS[found[0]], found[1])


def excerpt(lines: Sequence[str], limit: int = EXCERPT_LINES) -> str:
    """The part of an example's kernel lines worth reading: from a few lines before the
    first report on (the start of a report names what happened), else the last ones."""
    first = next((i for i, line in enumerate(lines) if TROUBLE.search(line)), None)
    if first is None:
        shown = lines[-limit:]
    else:
        shown = lines[max(0, first - 3) :][:limit]
    more = len(lines) - len(shown)
    body = "\n".join(f"  {line}" for line in shown) or "  (no kernel lines)"
    return body + (f"\n  ({more} more lines in the console log)" if more > 0 else "")


class ExampleLog(Protocol):
    """What the runner needs of the plugin's per-test log, made fresh for each example."""

    console_mark: int

    def cause(self, exc: BaseException | None) -> BaseException | None: ...


@dataclass
class ExampleStats:
    """What a run's examples did, for `roadtest fuzz`'s progress line and summary."""

    examples: int = 0
    failed: int = 0
    restarts: int = 0
    seconds: float = 0.0
    listeners: list[Callable[[str, ExampleStats], None]] = field(default_factory=list)
    per_test: dict[str, ExampleStats] = field(default_factory=dict)

    def count(self, test_id: str, failed: bool, restarted: bool, seconds: float) -> None:
        for stats in (self, self.per_test.setdefault(test_id, ExampleStats())):
            stats.examples += 1
            stats.failed += failed
            stats.restarts += restarted
            stats.seconds += seconds
        for listener in self.listeners:
            listener(test_id, self)


class ExampleRunner:
    """Runs the examples of one test in `session`'s guest (see the module's docstring)."""

    def __init__(
        self,
        session: RoadtestSession,
        test_id: str,
        new_log: Callable[[Machine], ExampleLog],
        stats: ExampleStats,
        hang_limit: float | None = DEFAULT_HANG_LIMIT,
    ) -> None:
        self.session = session
        self.test_id = test_id
        self.new_log = new_log
        self.stats = stats
        self.hang_limit = hang_limit
        self.restart_due = False
        self.last_lines: list[str] = []  # the last example's kernel lines (a flaky report)
        self.failed_lines: list[str] = []  # the first failing example's
        self.console_logs: list[str] = []  # every guest the examples went through

    def wrap(self, inner: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(inner)
        def run_example(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            return self.run(inner, args, kwargs)

        return run_example

    def run(self, inner: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        __tracebackhide__ = True
        # Imported here: a run without a property test never imports Hypothesis
        # (hypothesis_profile); one that runs an example has.
        from hypothesis.errors import HypothesisException, StopTest

        # A Ctrl-C whose KeyboardInterrupt was lost (Hypothesis's gc callback) ends the
        # test here, not after its last example.
        signals.check()
        start = time.monotonic()
        restarted = self._ready()
        guest = self.session.ensure_guest()
        assert guest.console is not None
        log = self.new_log(guest)
        # None: a debugger holds the guest, nothing times out.
        limit = (
            contextlib.nullcontext()
            if self.hang_limit is None
            else self.session.hang_limit(self.hang_limit)
        )
        failure: BaseException | None = None
        result = None
        try:
            with limit:
                result = inner(*args, **kwargs)
        except (HypothesisException, StopTest, KeyboardInterrupt):
            raise  # Hypothesis's control flow (assume(), an overrun), the user's Ctrl-C
        except BaseException as exc:  # noqa: BLE001 - every exception is the example's verdict
            failure = exc
        verdict = self._verdict(guest, log, failure)
        self.stats.count(
            self.test_id,
            verdict is not None or failure is not None,
            restarted,
            time.monotonic() - start,
        )
        if verdict is not None:
            # Raised outside any `except`: no implicit context, so that Hypothesis sees the
            # same failure wherever in the test the kernel broke; the cause still shows.
            verdict.__cause__ = failure
            raise verdict
        if failure is not None:
            raise failure
        return result

    def _ready(self) -> bool:
        """A live guest that nothing broke, with the test's kept devices reset; True if a
        new guest had to be started for it."""
        session = self.session
        guest = session.machine
        restart = self.restart_due or guest is None or not guest.alive
        if restart:
            self.restart_due = False
            if guest is not None and guest.console is not None:
                self.console_logs.append(str(guest.console_log))
            session.forget_kept()
            session.boot()
        session.reset_kept()
        return restart

    def _verdict(
        self, guest: Machine, log: ExampleLog, failure: BaseException | None
    ) -> BaseException | None:
        """What fails the example in place of (or as well as) `failure`; None: nothing more."""
        mark = log.console_mark
        console = guest.console
        assert console is not None
        if isinstance(failure, AgentTimeout):
            blocked = verdicts.blocked_model(failure)  # before the kill: a model, or the guest
            guest.kill()
            self.restart_due = True
            lines = console.kernel_lines_since(mark)
            self._keep(lines, failed=True)
            if blocked is not None:
                return blocked
            return GuestHang(
                f"an agent request was not answered within {self.hang_limit:g} s: the guest "
                f"was killed ({failure})\nkernel lines of the example:\n{excerpt(lines)}"
                f"\nconsole log: {guest.console_log}"
            )
        if guest.alive:
            try:
                guest.flush_console(f"{MARKER}{mark}", mark, timeout=2.0)
            except OSError:
                pass  # it died just now: said below
        if not guest.alive:
            # Its agent channel broke: the guest is going down. Its last lines (a panic's)
            # can reach the console after the channel closed, the more so on a loaded host:
            # read them once its process has ended, so that every example that crashes the
            # same way gets the same verdict (Hypothesis calls a test flaky otherwise).
            guest.exit_status(verdicts.DEATH_WAIT)
        lines = console.kernel_lines_since(mark)
        report = first_report(lines)
        if not guest.alive:
            self.restart_due = True
            self._keep(lines, failed=True)
            death = (verdicts.guest_death(guest, mark, failure) or "the guest died").split("\n")[0]
            kind: type[KernelFailure]
            if report is None:
                kind, headline = GuestDied, death
            elif report[0] is KernelPanic:
                kind, headline = KernelPanic, death
            else:
                kind, headline = report[0], f"{report[1]} ({death})"
            return kind(
                f"{headline}\nkernel lines of the example:\n{excerpt(lines)}"
                f"\nconsole log: {guest.console_log}"
            )
        if report is not None:
            self.restart_due = True
            self._keep(lines, failed=True)
            return report[0](
                f"the guest kernel reported trouble: {report[1]}\n"
                f"kernel lines of the example:\n{excerpt(lines)}"
            )
        self._keep(lines, failed=failure is not None)
        return log.cause(failure)

    def _keep(self, lines: list[str], failed: bool) -> None:
        self.last_lines = lines
        if failed and not self.failed_lines:
            self.failed_lines = lines
