"""The guest's console: every line the kernel and init print, kept in memory and on disk."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

# Lines that mean the kernel is in trouble: the report shows them first.
TROUBLE = re.compile(
    r"Kernel panic|WARNING:|BUG:|Oops|general protection|UBSAN:|KASAN:|"
    r"possible recursive locking|circular locking|INFO: task .* blocked|Call Trace:"
)
# The kind of the report a trouble line starts, by its text. A report comes before the
# panic it may cause (roadtest's guests boot with panic_on_warn and oops=panic): the
# first trouble line that names a kind names the failure. Within a line, the first match
# wins: lockdep's reports start with "WARNING:" too, KASAN's with "BUG:".
REPORTS: tuple[tuple[str, str], ...] = (
    ("KASAN:", "KASAN"),
    ("UBSAN:", "UBSAN"),
    ("locking", "lockdep"),
    ("lock held", "lockdep"),
    ("Oops", "oops"),
    ("general protection", "oops"),
    ("BUG:", "BUG"),
    ("WARNING:", "WARN"),
    ("Kernel panic", "panic"),
)


def first_kernel_report(lines: Sequence[str]) -> tuple[str, str] | None:
    """The kind (REPORTS) and the line of the first kernel report among `lines`."""
    for line in lines:
        if TROUBLE.search(line):
            for text, kind in REPORTS:
                if text in line:
                    return kind, line.strip()
    return None


# Console lines whose cause roadtest knows, and what to tell the user: a boot that dies
# on one of them says this instead of the panic alone.
KNOWN_CAUSES: tuple[tuple[str, str], ...] = (
    (
        "ptrace set fp regs failed, errno = 14",
        "UML cannot restore its processes' FPU state on this host, whose XSTATE area is "
        "larger than the kernel expects (AMX): the kernel lacks the fix of "
        "kernel-patches/um/0001 (in roadtest's 6.12 kernel, and as 6.1.y/um/0001 in a 6.1 "
        "--tree; a tree neither applies to boots only on hosts without AMX)",
    ),
)


def known_cause(lines: Sequence[str]) -> str | None:
    """What roadtest knows about the first console line of KNOWN_CAUSES among `lines`."""
    for line in lines:
        for text, cause in KNOWN_CAUSES:
            if text in line:
                return cause
    return None


# The kernel's last word when it panics: the reason is the rest of the line.
PANIC = re.compile(r"Kernel panic - not syncing: .*")
_KERNEL_LINE = re.compile(r"^\[\s*\d+\.\d+\]")


class Console:
    """Reads the console pipe on a thread; positions in it mark where each test starts."""

    def __init__(self, fd: int, log_path: Path, kernel_log_path: Path) -> None:
        self._fd = fd
        self._lines: list[str] = []
        self._cond = threading.Condition()
        self._closed = False
        self.log_path = log_path
        self.kernel_log_path = kernel_log_path
        # Called (on the console's thread) when the kernel says it panics, once.
        self.on_panic: Callable[[], None] | None = None
        self._panicked = False
        self._thread = threading.Thread(target=self._pump, name="roadtest-console", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        partial = b""
        with open(self.log_path, "wb") as log, open(self.kernel_log_path, "wb") as klog:
            while True:
                try:
                    chunk = os.read(self._fd, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    break
                log.write(chunk)
                log.flush()
                data = partial + chunk
                *complete, partial = data.split(b"\n")
                lines = [line.decode("utf-8", "replace").rstrip("\r") for line in complete]
                for line in lines:
                    if _KERNEL_LINE.match(line):
                        klog.write(line.encode() + b"\n")
                klog.flush()
                with self._cond:
                    self._lines.extend(lines)
                    self._cond.notify_all()
                if not self._panicked and any(PANIC.search(line) for line in lines):
                    self._panicked = True
                    if self.on_panic is not None:
                        self.on_panic()
            if partial:
                with self._cond:
                    self._lines.append(partial.decode("utf-8", "replace"))
        os.close(self._fd)
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def mark(self) -> int:
        with self._cond:
            return len(self._lines)

    def lines_since(self, mark: int) -> list[str]:
        with self._cond:
            return self._lines[mark:]

    def kernel_lines_since(self, mark: int) -> list[str]:
        """The kernel's lines (those with its timestamp) after `mark`: not init's."""
        return [line for line in self.lines_since(mark) if _KERNEL_LINE.match(line)]

    def wait_for(self, text: str, since: int, timeout: float) -> bool:
        """Wait until a line containing `text` appeared after `since` (or the console closed)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if any(text in line for line in self._lines[since:]):
                    return True
                remaining = deadline - time.monotonic()
                if self._closed or remaining <= 0:
                    return False
                self._cond.wait(remaining)

    def wait_closed(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def trouble(self, since: int = 0) -> list[str]:
        return [line for line in self.lines_since(since) if TROUBLE.search(line)]
