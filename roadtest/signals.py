"""SIGINT and SIGTERM end a command the same way: as a KeyboardInterrupt, remembered.

Without a handler SIGTERM kills Python on the spot: no fixture teardown, so no
guest shut down and no staging removed. Raising KeyboardInterrupt instead lets
pytest tear the session down as it does for Ctrl-C; since pytest swallows the
exception (it returns its "interrupted" status), the signal is remembered for
the command to report as `roadtest: interrupted` with status 128 + signal.
The KeyboardInterrupt can be lost: raised while a gc callback (Hypothesis has one),
a `__del__` or a weakref callback runs, Python prints it as "ignored" and goes on.
The signal is still remembered, and the pytest plugin stops before the next test.
A `deferred()` block (the switch of golden traces) holds the signal until it ends.

An interactive session (`roadtest shell`) is different: Ctrl-C belongs to the
prompt (Python's KeyboardInterrupt, which cancels the line), and SIGTERM or
SIGHUP (the terminal went away) end the session as `Ended`, a SystemExit that
the prompt does not catch, remembered like the others (`interactive()`).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)
ENDING = (signal.SIGTERM, signal.SIGHUP)  # what ends an interactive session

_received: int | None = None
_deferring = False


def _handler(signum: int, frame: FrameType | None) -> None:
    global _received
    if _received is None:
        _received = signum
    if not _deferring:
        raise KeyboardInterrupt


def install() -> dict[int, Any]:
    """Handle SIGINT and SIGTERM; returns the previous handlers for restore()."""
    global _received
    _received = None
    if threading.current_thread() is not threading.main_thread():
        return {}  # only the main thread may set handlers (an in-process caller's business)
    return {sig: signal.signal(sig, _handler) for sig in SIGNALS}


def restore(previous: dict[int, Any]) -> None:
    """Put back the handlers install() replaced, and forget the signal."""
    global _received
    for sig, handler in previous.items():
        signal.signal(sig, handler)
    _received = None


def installed() -> bool:
    """Whether install()'s handler takes SIGINT now (a roadtest command, not plain pytest)."""
    return signal.getsignal(signal.SIGINT) is _handler


def received() -> int | None:
    """The first SIGINT or SIGTERM since install(), if any."""
    return _received


def check() -> None:
    """Raise KeyboardInterrupt if a signal came (e.g. while pytest, which swallows it, ran)."""
    if _received is not None:
        raise KeyboardInterrupt


def exit_status() -> int:
    """The shell's convention for a command ended by the signal: 128 + its number."""
    return 128 + (_received or signal.SIGINT)


def describe() -> str:
    if _received in (None, signal.SIGINT):
        return "interrupted"
    if _received == signal.SIGHUP:
        return "hung up (SIGHUP)"
    return "terminated (SIGTERM)"


class Ended(SystemExit):
    """SIGTERM or SIGHUP ended an interactive session."""


def _end(signum: int, frame: FrameType | None) -> None:
    global _received
    if _received is None:
        _received = signum
    raise Ended(exit_status())


@contextmanager
def interactive() -> Iterator[None]:
    """For a prompt: Ctrl-C raises a KeyboardInterrupt that is not remembered (the prompt
    takes it), SIGTERM and SIGHUP raise `Ended`. The previous handlers come back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler)}
    previous |= {sig: signal.signal(sig, _end) for sig in ENDING}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM until the block ends, then raise KeyboardInterrupt if one came."""
    global _deferring
    outer = _deferring
    _deferring = True
    try:
        yield
    finally:
        _deferring = outer
    if not outer:
        check()
