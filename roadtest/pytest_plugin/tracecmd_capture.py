"""`--roadtest-trace-cmd DIR`: each test's i2c trace events, captured in the guest by trace-cmd.

The guest's root is the host's, so Debian's /usr/bin/trace-cmd runs in it,
on the guest's own tracefs. Before a test, `trace-cmd start -e i2c` turns on
the kernel's i2c_write/i2c_read/i2c_reply/i2c_result events; after it (its
devices unbound and detached, so their remove() traffic is in), `trace-cmd
extract` writes them into the guest's work directory, which is a host
directory, and `trace-cmd reset` turns tracing off again. The file lands in
DIR/<test>.dat, as `roadtest import trace-cmd` takes it: the same capture
a real board gives with `trace-cmd record -e i2c`. This costs ~0.7 s per test.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from roadtest.errors import RoadtestError
from roadtest.guest.protocol import ProtocolError
from roadtest.recorder.tracecmd import TraceCmdError

if TYPE_CHECKING:
    from roadtest.machine.base import Machine

EVENTS = "i2c"  # the trace system: i2c_write, i2c_read, i2c_reply, i2c_result
_CAPTURE = pytest.StashKey["TraceCmdCapture | None"]()


class TraceCmdCapture:
    """Captures of the tests of one pytest run, into `out`."""

    def __init__(self, out: Path) -> None:
        self.out = out.resolve()
        self.written: list[Path] = []
        self._tracing: Machine | None = None  # the guest tracing for the current test

    def _run(self, guest: Machine, argv: list[str]) -> bytes:
        try:
            rc, out, err = guest.agent.run(argv)
        except FileNotFoundError:
            raise TraceCmdError(
                "--roadtest-trace-cmd: there is no trace-cmd in the guest (the host's root): "
                "apt-get install trace-cmd"
            ) from None
        except OSError as e:
            raise TraceCmdError(f"--roadtest-trace-cmd: {' '.join(argv)}: {e}") from None
        if rc != 0:
            why = err.decode(errors="replace").strip().splitlines() or [f"exit status {rc}"]
            raise TraceCmdError(f"--roadtest-trace-cmd: `{' '.join(argv)}` in the guest: {why[0]}")
        return out

    def start(self, guest: Machine) -> None:
        """Turn the i2c events on (and clear what the buffer held)."""
        self._run(guest, ["trace-cmd", "start", "-e", EVENTS])
        self._tracing = guest

    def path_for(self, test_id: str) -> Path:
        from roadtest.trace.names import trace_name

        path = self.out / f"{trace_name(test_id)}.dat"
        if path in self.written:  # a test of the same name in another module
            module = Path(test_id.split("::", 1)[0]).stem
            path = self.out / f"{trace_name(test_id)}.{module}.dat"
        return path

    def finish(self, guest: Machine, test_id: str) -> Path | None:
        """Extract the test's events into out/<test>.dat and stop tracing; None when the
        guest died (its buffer died with it)."""
        tracing, self._tracing = self._tracing, None
        if tracing is not guest or not guest.alive:
            return None
        # The guest's work dir is mounted at the same path in the guest: a host directory.
        extracted = guest.workdir / f"trace-cmd-{os.getpid()}.dat"
        try:
            self._run(guest, ["trace-cmd", "extract", "-o", str(extracted)])
            self._run(guest, ["trace-cmd", "reset"])
        except ProtocolError:
            return None  # the guest went away meanwhile
        path = self.path_for(test_id)
        self.out.mkdir(parents=True, exist_ok=True)
        shutil.move(extracted, path)
        self.written.append(path)
        return path


def for_config(config: pytest.Config) -> TraceCmdCapture | None:
    """The run's capture, when --roadtest-trace-cmd asks for one."""
    if _CAPTURE not in config.stash:
        from roadtest.pytest_plugin.options import run_options

        out = run_options(config).trace_cmd
        config.stash[_CAPTURE] = TraceCmdCapture(out) if out else None
    return config.stash[_CAPTURE]


def start_test(config: pytest.Config, guest: Machine) -> None:
    """Before a test: start tracing, if the run captures (a failure fails the test's setup)."""
    capture = for_config(config)
    if capture is not None:
        try:
            capture.start(guest)
        except RoadtestError as err:
            pytest.fail(str(err), pytrace=False)


def finish_test(config: pytest.Config, guest: Machine, test_id: str) -> list[str]:
    """After a test: its capture to DIR; returns the problems that fail the test."""
    capture = for_config(config)
    if capture is None:
        return []
    try:
        capture.finish(guest, test_id)
    except (RoadtestError, OSError) as err:
        return [str(err)]
    return []
