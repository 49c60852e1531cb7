"""`roadtest shell` without a guest: its error lines, what a selection binds, the names at
the prompt, the terminal bridge and the signals that end the session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import types
from pathlib import Path

import pytest

from roadtest import signals
from roadtest.checkout import repo_root
from roadtest.models.opt3001 import OPT3001
from roadtest.shell import selection
from roadtest.shell.console import python_names
from roadtest.shell.terminal import ESCAPE, Terminal, bridge
from roadtest.testing.devices import Device, I2CDevice, PlatformDevice

ROADTEST = Path(sys.executable).with_name("roadtest")
ROOT = repo_root()
OPT3001_TESTS = "tests/drivers/iio/light/test_opt3001.py"


def shell(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROADTEST), "shell", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("args", "line"),
    [
        ((), "roadtest: shell: name a test file, a test (FILE::NAME) or a device"),
        (("tests/nope.py",), "roadtest: tests/nope.py: no such test file or directory"),
        (("tests/nope.py::test_x",), "roadtest: tests/nope.py::test_x: no such test file"),
        (
            ("tests/unit/test_cli.py",),
            "roadtest: tests/unit/test_cli.py declares no devices",
        ),
        (
            (f"{OPT3001_TESTS}::test_nope",),
            f"roadtest: {OPT3001_TESTS}::test_nope: no test there",
        ),
        (("nosuchchip",), "roadtest: no driver test declares a device nosuchchip"),
        (("--roadtest-record=x", "opt3001"), "roadtest: shell: --roadtest-record is for test"),
        (("-n", "2", "opt3001"), "roadtest: shell: -n is for test runs"),
    ],
    ids=[
        "nothing",
        "no file",
        "no file of a test",
        "no devices",
        "no test",
        "no device",
        "record",
        "xdist",
    ],
)
def test_a_bad_selection_is_one_line_and_status_2(args: tuple[str, ...], line: str) -> None:
    result = shell(*args)
    assert result.returncode == 2, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(line), result.stderr


def test_help_says_how_to_select() -> None:
    result = shell("--help")
    assert result.returncode == 0
    assert "FILE::NAME" in result.stdout and "Ctrl-]" in result.stdout


def _device(node: str) -> I2CDevice[OPT3001]:
    return I2CDevice(compatible="ti,opt3001", model=OPT3001, dts=f"{node}@$addr$ {{}};")


FAKE_TESTS = """
def helper():
    return C  # a module function the test calls: its devices count too

def test_uses_a():
    print(A, helper())

def test_uses_none():
    pass
"""


def test_a_test_binds_the_devices_its_code_names() -> None:
    a, b, c = _device("a"), _device("b"), PlatformDevice("x,consumer", "consumer { };")
    module = types.ModuleType("test_fake")
    vars(module).update(A=a, B=b, C=c)
    exec(compile(FAKE_TESTS, "test_fake.py", "exec"), vars(module))
    for name in ("A", "B", "C"):
        getattr(module, name).origin = f"test_fake.{name}"
    declared: list[Device] = [a, b, c]
    item = types.SimpleNamespace(module=module, function=module.test_uses_a)
    assert selection.test_devices(item, declared) == [a, c]
    # A test whose code names none (a fixture attaches them): all of the module's.
    none = types.SimpleNamespace(module=module, function=module.test_uses_none)
    assert selection.test_devices(none, declared) == declared
    # A test parametrized with a device binds that one.
    param = types.SimpleNamespace(
        module=module,
        function=module.test_uses_none,
        callspec=types.SimpleNamespace(params={"d": b}),
    )
    assert selection.test_devices(param, declared) == [b]


def test_a_test_file_binds_each_of_its_devices_once(tmp_path: Path) -> None:
    a, b = _device("a"), _device("b")
    module = types.ModuleType("test_fake")
    exec(compile(FAKE_TESTS, "test_fake.py", "exec"), vars(module))
    file = tmp_path / "test_fake.py"
    items = [
        types.SimpleNamespace(path=file, nodeid=f"test_fake.py::{name}", module=module)
        for name in ("test_uses_a", "test_uses_none")
    ]
    chosen = selection.devices(
        [selection.Selection(str(file), "path", file)], items, {"test_fake": [a, b]}
    )
    assert chosen == [a, b]


def test_prompt_names_are_the_declarations_in_lower_case() -> None:
    a, b, c = _device("a"), _device("b"), _device("c")
    a.origin, b.origin, c.origin = "test_x.SENSOR", "test_y.SENSOR", "test_y.RTC_IRQ"
    assert python_names([a, b, c]) == ["test_x_sensor", "test_y_sensor", "rtc_irq"]
    assert python_names([c]) == ["rtc_irq"]


def test_the_bridge_passes_bytes_both_ways_until_the_escape_key() -> None:
    keys_r, keys_w = os.pipe()
    screen_r, screen_w = os.pipe()
    terminal = Terminal()
    try:
        os.write(terminal.guest_end, b"booted\r\nguest # ")  # what the guest's shell printed
        os.write(keys_w, b"ls\r\x03" + ESCAPE)  # Ctrl-C goes through, as typed
        assert bridge(keys_r, screen_w, terminal, lambda: "") == ""
        assert os.read(terminal.guest_end, 100) == b"ls\r\x03"
        assert os.read(screen_r, 100) == b"booted\r\nguest # "
        assert bytes(terminal.last_line) == b"guest # "
        # Coming back: the prompt the guest printed before is shown again.
        os.write(keys_w, ESCAPE)
        assert bridge(keys_r, screen_w, terminal, lambda: "") == ""
        assert os.read(screen_r, 100) == b"guest # "
        # The other side going away ends it with the reason.
        assert bridge(keys_r, screen_w, terminal, lambda: "gone", every=0.01) == "gone"
    finally:
        terminal.close()
        for fd in (keys_r, keys_w, screen_r, screen_w):
            if fd >= 0:
                os.close(fd)


@pytest.mark.parametrize(
    ("signum", "status", "said"),
    [(signal.SIGTERM, 143, "terminated (SIGTERM)"), (signal.SIGHUP, 129, "hung up (SIGHUP)")],
)
def test_sigterm_and_sighup_end_an_interactive_session(signum: int, status: int, said: str) -> None:
    previous = signals.install()
    try:
        with pytest.raises(signals.Ended), signals.interactive():
            # Ctrl-C is the prompt's, and not remembered.
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGINT)
            assert signals.received() is None
            os.kill(os.getpid(), signum)
        assert signals.received() == signum
        assert (signals.exit_status(), signals.describe()) == (status, said)
        assert signal.getsignal(signal.SIGTERM) is signals._handler  # the command's again
    finally:
        signals.restore(previous)
