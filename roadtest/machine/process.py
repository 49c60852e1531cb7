"""A guest that is one confined host process: what UML and QEMU guests share.

`ProcessGuest` starts the guest's host program (UML's vmlinux, qemu-system-x86_64)
through sandbox.py, which confines it on the host: the run's work directory is
all it can write. The program runs in its own session so that one killpg() ends
it and everything it forked; PR_SET_PDEATHSIG (set by the sandbox) ends it if the
test process dies first, SIGKILL included. Its stdout and stderr are the console.
A machine says how to run it (`program`) and how the agent's channel reaches the
host (`open_channel`, then `connect_channel` once the program runs).
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import threading
import time
from abc import abstractmethod
from collections.abc import Sequence
from pathlib import Path

import roadtest
import roadtest.guest
from roadtest.guest.client import AgentClient
from roadtest.guest.protocol import BOOT_FAILED, Channel, ProtocolError
from roadtest.machine import sandbox
from roadtest.machine.base import BootConfig, GuestError, Machine
from roadtest.machine.console import PANIC, Console, known_cause
from roadtest.machine.guest_python import guest_python

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    # Until the sandbox sets it again (after its credential changes, which clear it).
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


# On every guest's kernel command line, before the machine's own and the user's arguments.
COMMON_BOOT_ARGS = (
    # The RFC's strictness: any WARN or oops ends the guest, and the test with it.
    "panic_on_warn=1",
    "oops=panic",
    # Sanity checks, red zones and poisoning; not U (alloc/free stack traces),
    # which doubled the cost of every I2C transfer (measured: 224 vs 105 us).
    "slub_debug=FZP",
    "no_hash_pointers",
    # The regulator core turns off unused regulators 30 s after boot, which
    # time-travel reaches within a few tests: a CONTROL write no test made. Simulated
    # time reaches it too, later (guest time passes only when tests let it) but in
    # whichever test runs then: a test's I/O would depend on the tests before it.
    # With "=1" (which the option ignores): a kernel without it (6.1) passes it to init
    # in its environment, where the bare word would be init's first argument (Python's
    # script: the guest would not boot).
    "regulator_ignore_unused=1",
    "quiet",
)


def init_args(python: str) -> list[str]:
    """The end of the kernel command line: the guest's init is the host's Python running
    roadtest/guest/init.py (`-I -S` and a path: every file Python looks up is a round trip
    to the host), with the bytecode the host compiled for it (guest_python.py)."""
    found = guest_python(python)
    prefix = ["-X", f"pycache_prefix={found.pycache}"] if found is not None else []
    return ["--", "-I", "-S", *prefix, str(Path(roadtest.guest.__file__).with_name("init.py"))]


def confined(config: BootConfig, writable: Sequence[Path], program: list[str]) -> list[str]:
    """`program` started through the sandbox: it can write the `writable` directories and
    nothing else of the host's, and runs on the config's CPU."""
    launcher = [config.python, "-I", "-S", str(Path(sandbox.__file__))]
    for path in writable:
        launcher += ["--writable", str(path)]
    if config.cpu is not None:
        launcher += ["--cpu", str(config.cpu)]
    return [*launcher, "--", *program]


class ProcessGuest(Machine):
    """One guest whose host side is a single confined process (and what it forks)."""

    def __init__(self, config: BootConfig) -> None:
        self.config = config
        self.workdir = config.workdir.resolve()
        self.console_log = self.workdir / "console.log"
        self.kernel_log = self.workdir / "kernel.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.console: Console | None = None
        self._agent: AgentClient | None = None
        self._channel: socket.socket | None = None
        self.release = ""
        self.boot_seconds = 0.0

    @abstractmethod
    def program(self) -> list[str]:
        """The guest's host command line, confined (see `confined`)."""

    @abstractmethod
    def open_channel(self) -> tuple[int, ...]:
        """Prepare the agent's channel before the program starts; the fds it inherits
        (still the machine's to close)."""

    @abstractmethod
    def connect_channel(self, deadline: float) -> socket.socket:
        """The host's end of the agent's channel, once the program runs or failed to start
        (GuestError if it does not connect by `deadline`, a time.monotonic() value)."""

    def prepare(self) -> None:
        """Set up what the program needs in the work directory (after it exists)."""

    def cleanup(self) -> None:
        """Remove what `prepare` and the program left that must not outlive the guest."""

    @property
    def agent(self) -> AgentClient:
        if self._agent is None:
            raise GuestError("the guest is not running")
        return self._agent

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.prepare()
        inherited = self.open_channel()
        console_r, console_w = os.pipe()
        started = time.monotonic()
        try:
            self.proc = subprocess.Popen(
                self.program(),
                stdin=subprocess.DEVNULL,
                stdout=console_w,
                stderr=subprocess.STDOUT,
                pass_fds=inherited,
                start_new_session=True,
                preexec_fn=_die_with_parent,
                cwd=self.workdir,
            )
        except BaseException:
            self.cleanup()
            raise
        finally:
            os.close(console_w)
        self.console = Console(console_r, self.console_log, self.kernel_log)
        self.console.on_panic = self._panicked
        try:
            self._channel = self.connect_channel(started + self.config.boot_timeout)
            self._agent = AgentClient(
                Channel(self._channel.fileno()), timeout=self.config.call_timeout
            )
            remaining = started + self.config.boot_timeout - time.monotonic()
            ready = self._agent.wait_ready(max(remaining, 0.1))
        except (ProtocolError, GuestError) as err:
            self.kill()
            raise GuestError(
                f"guest did not boot ({self._boot_failure(err)}); console: {self.console_log}"
            ) from err
        except BaseException:
            # Ctrl-C mid-boot: a guest whose agent is not up cannot be powered off, and
            # stop() would wait for the rest of the boot (seconds under QEMU's TCG) to ask.
            self.kill()
            raise
        self.boot_seconds = time.monotonic() - started
        self.release = str(ready.get("release", ""))

    # How long a panicked guest may go on printing (its backtrace) before it is ended.
    PANIC_GRACE = 1.0

    def _panicked(self) -> None:
        """The kernel panicked: UML exits by itself, but not always (under simulated time it
        can wait on its clock for good). End it shortly, so that the call in flight fails
        now rather than at its time limit; the verdict reads the panic from the console."""
        proc = self.proc
        if proc is None:
            return

        def end() -> None:
            # A debugger's user may want to look at the panicked kernel: leave it to them.
            if self.proc is proc and proc.poll() is None and not self.debugger_attached():
                self.abort()

        timer = threading.Timer(self.PANIC_GRACE, end)
        timer.daemon = True
        timer.start()

    def _boot_failure(self, err: Exception) -> str:
        lines = self.console.lines_since(0) if self.console is not None else []
        why = [line for line in lines if "roadtest sandbox:" in line or BOOT_FAILED in line]
        # A kernel that panics at boot (a bad init=, say) says why; the channel does not.
        panic = next((m.group(0) for line in lines if (m := PANIC.search(line))), None)
        cause = known_cause(lines)
        if cause is not None:
            return f"{cause}; {panic}" if panic else cause
        if why or panic:
            return why[-1].strip() if why else str(panic)
        # A host program that refused to start (QEMU's own error) says why on its last line.
        last = next((line.strip() for line in reversed(lines) if line.strip()), "")
        return f"{err}: {last}" if self.exited() and last else str(err)

    def cpu_seconds(self) -> float:
        """User and system CPU used so far by the guest's processes: everything in its
        session (UML's kernel and the processes it forks for its userspace), from proc(5)."""
        if self.proc is None:
            return 0.0
        session, total, tick = self.proc.pid, 0.0, os.sysconf("SC_CLK_TCK")
        for task in Path("/proc").iterdir():
            if not task.name.isdigit():
                continue
            try:
                # After the command's ")": state, ppid, pgrp, session, ... utime, stime.
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == session:
                total += (int(fields[11]) + int(fields[12])) / tick
        return total

    def exited(self) -> bool:
        return self.proc is None or self.proc.poll() is not None

    @property
    def alive(self) -> bool:
        """Running and answering: a guest whose agent timed out counts as dead (it hangs)."""
        return (
            self.proc is not None
            and self.proc.poll() is None
            and self._agent is not None
            and not self._agent.broken
        )

    def stop(self, timeout: float = 10.0) -> None:
        """Power the guest off; kill it if it does not go within `timeout`."""
        if self.proc is None:
            return
        if self.alive and self._agent is not None:  # (alive implies an agent; mypy can't see it)
            if self.config.before_poweroff is not None:
                self.config.before_poweroff()
            try:
                self._agent.call("poweroff", timeout=timeout)
            except (ProtocolError, OSError):
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def abort(self) -> None:
        """Stop the guest from another thread (a time limit): its processes are killed,
        the call in flight fails, and the owner cleans up (kill()) as for a crash."""
        proc = self.proc
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        """End the guest and every process in its session, now."""
        proc = self.proc
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        if self.console is not None:
            self.console.wait_closed(5.0)
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        self._agent = None
        self.proc = None
        self.cleanup()

    def exit_status(self, wait: float) -> int | None:
        proc = self.proc
        if proc is None:
            return None
        try:
            status = proc.wait(wait)
        except subprocess.TimeoutExpired:
            return None
        if self.console is not None:
            self.console.wait_closed(wait)  # every line it printed is in
        return status
