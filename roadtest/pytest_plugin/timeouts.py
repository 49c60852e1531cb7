"""Per-test time limits for guest tests, through pytest-timeout's own settings.

`timeout` (ini, `--timeout`, `PYTEST_TIMEOUT`) and `@pytest.mark.timeout(N)`
set the limit, as pytest users know them; roadtest gives every test a default.
pytest-timeout's own methods end a stuck test by raising in the main thread
(wherever it is: in the middle of an agent call, leaving a reply unread) or by
exiting the whole run. For a guest test the stuck party is nearly always the
guest, so the limit stops the guest instead: the blocked call returns, the test
fails with the console's last lines, and the next test boots a new guest. A
test still stuck after that (in host code) is interrupted the signal way.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Protocol

import pytest

DEFAULT_LIMIT = 300.0  # seconds of host time per test: a hang, not a slow driver
# How long a test gets to end once its guest was stopped, before it is interrupted: a test
# blocked on the guest gets its error at once; one stuck on the host waits this out.
_GRACE = 5.0


class _Guest(Protocol):
    @property
    def alive(self) -> bool: ...

    def abort(self) -> None: ...


class _Settings(Protocol):  # pytest_timeout.Settings
    @property
    def timeout(self) -> float: ...


class _TestVerdict(Protocol):
    @property
    def machine(self) -> _Guest | None: ...

    timed_out: float | None


class _Timer:
    def __init__(self, item: pytest.Item, limit: float, log: Callable[[], _TestVerdict | None]):
        self.limit = limit
        self.log = log
        self.ended = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"timeout {item.nodeid}", daemon=True)
        self.main = threading.main_thread().ident
        # Only the main thread can take a signal handler: elsewhere, no host-side fallback.
        self.interrupts = threading.current_thread() is threading.main_thread()
        self.previous = signal.signal(signal.SIGALRM, self._interrupt) if self.interrupts else None

    def start(self) -> None:
        self.thread.start()

    def cancel(self) -> None:
        self.ended.set()
        self.thread.join()
        if self.interrupts:
            signal.signal(signal.SIGALRM, self.previous or signal.SIG_DFL)

    def _run(self) -> None:
        if self.ended.wait(self.limit):
            return
        log = self.log()
        if log is not None and log.machine is not None and log.machine.alive:
            log.timed_out = self.limit
            log.machine.abort()
            if self.ended.wait(_GRACE):
                return
        if self.interrupts and self.main is not None:
            signal.pthread_kill(self.main, signal.SIGALRM)

    def _interrupt(self, signum: int, frame: FrameType | None) -> None:
        __tracebackhide__ = True
        pytest.fail(f"Timeout: the test ran past its limit of {self.limit:g} s", pytrace=False)


class GuestTimeouts:
    """pytest-timeout's timer hooks, for tests that use the guest."""

    def __init__(
        self, log_of: Callable[[pytest.Item], _TestVerdict | None], limits: bool = True
    ) -> None:
        self.log_of = log_of
        self.limits = limits  # False: no test has a limit, not even by its marker (under gdb)
        self.timers: dict[str, _Timer] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_timeout_set_timer(self, item: pytest.Item, settings: _Settings) -> bool | None:
        if not self.limits:
            return True  # handled: no timer
        if "guest" not in getattr(item, "fixturenames", ()):
            return None  # pytest-timeout's own method
        timer = _Timer(item, float(settings.timeout), lambda: self.log_of(item))
        self.timers[item.nodeid] = timer
        timer.start()
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_timeout_cancel_timer(self, item: pytest.Item) -> bool | None:
        timer = self.timers.pop(item.nodeid, None)
        if timer is None:
            return True if not self.limits else None
        timer.cancel()
        return True


def set_default_limit(config: pytest.Config, limits: bool = True) -> None:
    """DEFAULT_LIMIT, unless the run set a limit (0 turns limits off) anywhere
    pytest-timeout looks: its option, the ini file, the environment. `limits` False
    (under gdb) turns them off, whatever the run set."""
    if not limits:
        config.option.timeout = 0.0
        return
    if config.getoption("timeout", None) is not None or config.getini("timeout"):
        return
    if os.environ.get("PYTEST_TIMEOUT"):
        return
    config.option.timeout = DEFAULT_LIMIT
