"""Ctrl-C while a guest boots ends it at once, not after the rest of the boot.

The KeyboardInterrupt left the booting guest running; the session's teardown then asked
its agent to power off, which waited until the guest had booted to answer: 2-12 s
under QEMU's TCG. Here a host process that never says it is ready stands for a guest
still booting.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from roadtest.machine.base import BootConfig
from roadtest.machine.process import ProcessGuest


class Booting(ProcessGuest):
    """A guest whose kernel boots for a minute: its agent's channel is open, and silent."""

    def program(self) -> list[str]:
        return ["sleep", "60"]

    def open_channel(self) -> tuple[int, ...]:
        self.host_end, self.guest_end = socket.socketpair()
        return ()

    def connect_channel(self, deadline: float) -> socket.socket:
        return self.host_end

    def cleanup(self) -> None:
        self.guest_end.close()


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """Python's own SIGINT handler for the test. A process started in the background by a
    non-interactive shell inherits SIGINT ignored, and Python then installs no handler: the
    Ctrl-C below would be lost, and the boot would wait its whole 30 s (seen in the stress
    check, bench/bench_stress_make_test.py, when it was started with `cmd &`)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("ctrl_c_raises")
def test_ctrl_c_during_a_boot_ends_the_guest_at_once(tmp_path: Path) -> None:
    guest = Booting(BootConfig(image=tmp_path / "image", workdir=tmp_path / "guest"))
    main = threading.main_thread().ident
    assert main is not None
    ctrl_c = threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT))
    ctrl_c.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            guest.start()  # waits for the agent's "ready", for up to 30 s
    finally:
        ctrl_c.cancel()
    pid = guest.proc.pid if guest.proc is not None else None
    assert guest.proc is None, "the booting guest was left running"
    started = time.monotonic()
    guest.stop()  # the teardown's: nothing left to power off
    assert time.monotonic() - started < 0.5
    assert pid is None or not os.path.exists(f"/proc/{pid}")
