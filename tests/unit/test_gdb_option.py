"""--roadtest-gdb without a guest: its bad uses (one line, before any test), the gdb command
a UML guest gives, no time limits under it, and the session's wait before the tests.
tests/guest/test_gdb.py attaches gdb for real."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from dummy_machine import DummyMachine, dummy_kernel, fake_include_root
from test_machine_seam import CONFTEST, USER_TESTS, pytest_on_the_dummy
from test_plugin_options import one_line, pytest_run

from roadtest.guest.client import AgentClient, AgentTimeout
from roadtest.guest.protocol import Channel
from roadtest.machine import gdb, registry
from roadtest.machine.base import Machine
from roadtest.testing.session import RoadtestSession


def test_gdb_with_xdist_workers(tmp_path: Path) -> None:
    line = one_line(pytest_run(tmp_path, "--roadtest-gdb", "-n", "2"))
    assert line == "ERROR: roadtest: --roadtest-gdb: one guest at a time; drop -n 2 (pytest-xdist)"


def test_gdb_on_a_machine_gdb_cannot_attach_to(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_user.py").write_text(USER_TESTS)
    line = one_line(pytest_on_the_dummy(tmp_path, "--roadtest-gdb", "test_user.py"))
    assert line.endswith(
        "roadtest: --roadtest-gdb: gdb cannot attach to a dummy guest (--roadtest-machine um can)"
    )


def test_gdb_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no gdb there
    line = one_line(pytest_run(tmp_path, "--roadtest-gdb"))
    assert line.endswith("roadtest: --roadtest-gdb: gdb not found: apt-get install gdb")


SLOW_TESTS = """
import time

import pytest


@pytest.mark.timeout(0.2)
def test_marked():
    time.sleep(1)


def test_unmarked():
    time.sleep(1)
"""


@pytest.mark.parametrize("gdb_option", [[], ["--roadtest-gdb"]])
def test_no_time_limit_under_gdb(tmp_path: Path, gdb_option: list[str]) -> None:
    (tmp_path / "test_slow.py").write_text(SLOW_TESTS)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--timeout=0.2"]
        + [*gdb_option, "test_slow.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    # A developer may hold the guest in gdb for as long as they like.
    expected = "2 passed" if gdb_option else "2 failed"
    assert expected in run.stdout, run.stdout + run.stderr


def test_the_uml_gdb_command(tmp_path: Path) -> None:
    vmlinux = tmp_path / "build" / "vmlinux"
    modules = tmp_path / "modules" / "lib" / "modules" / "6.12.0"
    override = tmp_path / "mine"
    args = gdb.command(vmlinux, 4242, [override, modules])
    assert shlex.split(gdb.shell_line(args)) == args
    assert args[0] == "gdb" and args[-1] == str(vmlinux)  # the kernel's symbols
    commands = [args[i + 1] for i, arg in enumerate(args) if arg == "-ex"]
    # The kernel's gdb scripts (vmlinux-gdb.py next to vmlinux) load with it.
    assert f"add-auto-load-safe-path {tmp_path / 'build' / 'vmlinux-gdb.py'}" in args
    # UML takes page faults as SIGSEGV and wakes on SIGUSR1 (arch/um/os-Linux/signal.c),
    # which gdb stops at by default: it must pass them on without stopping.
    handle = next(c.split() for c in commands if c.startswith("handle "))
    assert {"SIGSEGV", "SIGUSR1", "SIGIO", "SIGALRM"} <= set(handle)
    assert handle[-3:] == ["nostop", "noprint", "pass"]
    # Attached before lx-symbols reads the module list; the override's directory searched
    # before the kernel's (lx-symbols takes the first file of a name, and searches gdb's
    # working directory last).
    assert commands.index("attach 4242") < commands.index(f"lx-symbols {override}")
    assert commands.index(f"cd {modules}") < commands.index(f"lx-symbols {override}")


def test_no_tracer() -> None:
    assert gdb.tracer(os.getpid()) == 0
    child = subprocess.Popen(["sleep", "0"])
    child.wait()
    assert gdb.tracer(child.pid) == 0  # ended


def test_an_agent_without_a_limit_waits_past_a_calls_own() -> None:
    host, guest = socket.socketpair()
    with host, guest:
        patient = AgentClient(Channel(host.fileno()), timeout=None)
        other_end = Channel(guest.fileno())

        def answer_late() -> None:
            other_end.recv()
            time.sleep(0.3)
            other_end.send({"r": {"rc": 0, "out": b"", "err": b""}})

        thread = threading.Thread(target=answer_late)
        thread.start()
        assert patient.run(["true"], timeout=0.05) == (0, b"", b"")
        thread.join()
        # The same call with a limit: the guest answered too late.
        limited = AgentClient(Channel(host.fileno()), timeout=30.0)
        thread = threading.Thread(target=answer_late)
        thread.start()
        with pytest.raises(AgentTimeout):
            limited.run(["true"], timeout=0.05)
        thread.join()


def test_the_session_waits_for_the_debugger_in_each_guest(tmp_path: Path) -> None:
    machine = DummyMachine(dummy_kernel(tmp_path, fake_include_root(tmp_path / "ksrc")))
    registry.register(machine)
    calls: list[tuple[Machine, list[Path]]] = []
    try:
        session = RoadtestSession(
            machine.kernel,
            [],
            tmp_path / "run",
            cpu=None,
            machine=machine,
            debugger=lambda guest, dirs: calls.append((guest, dirs)),
        )
        session.start()
        try:
            session.boot()  # a new guest (after a crash, say) waits again
        finally:
            session.stop()
    finally:
        registry.unregister(machine.name)
    assert [guest for guest, _ in calls] == machine.booted
    assert all(dirs == [machine.kernel.modules_dir] for _, dirs in calls)
    assert all(guest.config.call_timeout is None for guest in machine.booted)
