"""The guest's terminal on the host: a pty, and the bridge that gives it the user's terminal.

The machine wires the pty's guest end to a tty in the guest (BootConfig.terminal);
the guest's tty does the line discipline (echo, Ctrl-C, job control), so the pty
and, while bridged, the user's terminal are raw: bytes pass unchanged both ways.
"""

from __future__ import annotations

import contextlib
import os
import select
import termios
import time
import tty
from collections.abc import Callable, Iterator

ESCAPE = b"\x1d"  # Ctrl-]: back to the host's prompt, as in telnet and qemu
ESCAPE_NAME = "Ctrl-]"


class Terminal:
    """A pty whose `guest` end the machine gets and whose `host` end the bridge reads."""

    def __init__(self) -> None:
        self.host, self.guest_end = os.openpty()
        tty.setraw(self.guest_end)
        # What the guest printed after its last newline (its prompt, usually): shown again
        # when the user comes back, since the guest prints it only once.
        self.last_line = bytearray()

    def close(self) -> None:
        for fd in (self.host, self.guest_end):
            with contextlib.suppress(OSError):
                os.close(fd)


@contextlib.contextmanager
def raw_mode(fd: int) -> Iterator[None]:
    """The user's terminal raw for the block (keys go through as typed, Ctrl-C included);
    a descriptor that is no terminal (input from a pipe) is left as it is."""
    if not os.isatty(fd):
        yield
        return
    saved = termios.tcgetattr(fd)
    tty.setraw(fd)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def hung_up() -> None:
    """The user's terminal is gone (SIGHUP): stdin, stdout and stderr go to /dev/null, so
    that what is still printed on the way out (and Python's flush at exit) cannot fail."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def _write_all(fd: int, data: bytes | bytearray) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _keep_last_line(kept: bytearray, output: bytes) -> None:
    head, newline, tail = output.rpartition(b"\n")
    if newline:
        kept[:] = tail
    else:
        kept += head + tail
    del kept[:-LAST_LINE_MAX]


LAST_LINE_MAX = 4096


def bridge(
    keys: int,
    screen: int,
    terminal: Terminal,
    gone: Callable[[], str],
    escape: bytes = ESCAPE,
    every: float = 0.5,
) -> str:
    """Copy `keys` to `terminal` and `terminal` to `screen` until the user types `escape`
    (returns ""), `keys` ends ("end of input"), or `gone()`, asked every `every` s, says
    why the other side went away (a non-empty reason)."""
    _write_all(screen, terminal.last_line)
    next_check = time.monotonic() + every
    while True:
        ready, _, _ = select.select([keys, terminal.host], [], [], every)
        if terminal.host in ready:
            output = os.read(terminal.host, 65536)
            _keep_last_line(terminal.last_line, output)
            _write_all(screen, output)
        if keys in ready:
            data = os.read(keys, 4096)
            if not data:
                return "end of input"
            before, found, _ = data.partition(escape)
            if before:
                _write_all(terminal.host, before)
            if found:
                return ""
        if time.monotonic() >= next_check:
            why = gone()
            if why:
                return why
            next_check = time.monotonic() + every
