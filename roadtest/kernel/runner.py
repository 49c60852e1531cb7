"""Running the kernel's build commands: all output to a log file, a compact count to the user."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from roadtest.errors import RoadtestError
from roadtest.text import count as plural

# Variables that would silently change what kbuild builds, or where, without changing the cache
# key; a parent make's MAKEFLAGS would also override our -j and add "Entering directory" noise.
_SCRUBBED_ENV = (
    "ARCH",
    "SUBARCH",
    "CROSS_COMPILE",
    "LLVM",
    "LLVM_IAS",
    "O",
    "KBUILD_OUTPUT",
    "KBUILD_EXTMOD",
    "KBUILD_KCONFIG",
    "KCONFIG_CONFIG",
    "KCONFIG_ALLCONFIG",
    "KCFLAGS",
    "KCPPFLAGS",
    "KAFLAGS",
    "INSTALL_MOD_PATH",
    "INSTALL_MOD_STRIP",
    "MAKEFLAGS",
    "MFLAGS",
    "MAKELEVEL",
    "MAKEOVERRIDES",
)

# kbuild's short output: one "  CC      path.o" (or "  CC [M]  ...", "  AS ...") per object.
_COMPILED = re.compile(rb"^  (?:CC|AS)\b")
# A compiler's error: "path.c:223:14: error: ...", "path.h:9: fatal error: ...".
_ERROR = re.compile(rb"^(\S+?):\d+:(?:\d+:)? (?:fatal )?error: ")

TAIL_LINES = 20


@dataclass(frozen=True)
class Result:
    returncode: int
    tail: list[str]  # the last TAIL_LINES lines of output, for error messages
    compiled: int  # objects compiled, as counted from kbuild's output
    first_error: str | None = None  # the first compiler error line, if any


class CommandFailed(RoadtestError):
    """A build command failed; `first_error` is its first compiler error line, if any."""

    def __init__(self, message: str, first_error: str | None) -> None:
        super().__init__(message)
        self.first_error = first_error

    def error_file(self) -> str | None:
        """The file of the first compiler error, as the compiler named it."""
        found = _ERROR.match(self.first_error.encode()) if self.first_error else None
        return found.group(1).decode(errors="replace") if found else None


def build_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED_ENV}
    env["LC_ALL"] = "C"  # messages we parse (patch, kbuild) stay in English
    return env


def parallel_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)))


class Runner:
    """Runs commands with their output appended to one log; optionally reports a compile count."""

    def __init__(
        self, log_path: Path, progress: Callable[[str], None], *, interval: float = 10.0
    ) -> None:
        self.log_path = log_path
        self.progress = progress
        self.interval = interval
        self.nice = shutil.which("nice")
        log_path.parent.mkdir(parents=True, exist_ok=True)

    def note(self, line: str) -> None:
        """A line of our own in the log (what was done instead of a command)."""
        with open(self.log_path, "a") as log:
            log.write(f"\n{line}\n")

    def run(
        self, args: Sequence[str], *, cwd: Path, count: str | None = None, nice: bool = False
    ) -> Result:
        """Run `args`; with `count` (a stage name), report "<count>: N objects compiled"."""
        argv = [*args]
        if nice and self.nice:
            # Builds share the machine (and CI runners) with other work: be the one that yields.
            argv = [self.nice, "-n", "10", *argv]
        tail: deque[str] = deque(maxlen=TAIL_LINES)
        compiled = 0
        first_error: str | None = None
        started = last_report = time.monotonic()
        with open(self.log_path, "ab") as log:
            log.write(f"\n$ (cd {cwd} && {' '.join(argv)})\n".encode())
            log.flush()
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=build_env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            assert proc.stdout is not None
            try:
                for line in proc.stdout:
                    log.write(line)
                    tail.append(line.decode(errors="replace").rstrip())
                    if first_error is None and _ERROR.match(line):
                        first_error = tail[-1]
                    if count is None or not _COMPILED.match(line):
                        continue
                    compiled += 1
                    now = time.monotonic()
                    if now - last_report >= self.interval:
                        self.progress(f"{count}: {plural(compiled, 'object')} compiled")
                        last_report = now
                returncode = proc.wait()
            finally:
                # On Ctrl-C or any error, don't leave a make running into a build dir we don't own.
                if proc.poll() is None:
                    proc.terminate()
                    try:
                        proc.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()
            took = time.monotonic() - started
            log.write(f"[exit status {returncode} after {took:.1f} s]\n".encode())
        return Result(returncode, list(tail), compiled, first_error)

    def check(
        self,
        args: Sequence[str],
        *,
        cwd: Path,
        failure: str,
        count: str | None = None,
        nice: bool = False,
    ) -> Result:
        """Like run(), but on failure show the log's tail and raise CommandFailed:
        "<failure>: <first compiler error>; full log: ..."."""
        result = self.run(args, cwd=cwd, count=count, nice=nice)
        if result.returncode != 0:
            self.show_tail(result)
            first = f": {result.first_error}" if result.first_error else ""
            raise CommandFailed(f"{failure}{first}; full log: {self.log_path}", result.first_error)
        return result

    def show_tail(self, result: Result) -> None:
        self.progress(f"--- last {plural(len(result.tail), 'line')} of {self.log_path} ---")
        for line in result.tail:
            self.progress(line)
        self.progress("---")
