"""`roadtest shell` in a real terminal: pexpect gives it a pty, as a terminal emulator would.

The user's day: the guest's shell reads the opt3001's lux, the Python prompt
changes the model's result register, the shell reads the new lux, and leaving
(exit(), Ctrl-D, SIGTERM, the terminal hanging up) leaves nothing running.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from pathlib import Path

import pexpect
import pytest
from scaffold import leftovers, other_cpu

from roadtest.checkout import repo_root
from roadtest.kernel import default_cache_dir

ROOT = repo_root()
ROADTEST = Path(sys.executable).with_name("roadtest")
OPT3001_TESTS = "tests/drivers/iio/light/test_opt3001.py"
PROMPT = ">>> "
GUEST_PROMPT = re.escape("# ")  # PS1 "guest <dir># "
ESCAPE = "\x1d"  # Ctrl-]


def lux_from_datasheet(result: int) -> float:
    """OPT3001 datasheet (SBOS681B), 7.4.1: lux = 0.01 * 2^E[3:0] * R[11:0]."""
    exponent, mantissa = result >> 12, result & 0x0FFF
    return 0.01 * float(2**exponent) * mantissa


def start(work: Path, *selection: str, ready: str = PROMPT) -> pexpect.spawn[str]:
    env = {**os.environ, "TERM": "dumb", "ROADTEST_CACHE": str(default_cache_dir())}
    env.pop("PYTEST_ADDOPTS", None)
    child = pexpect.spawn(
        str(ROADTEST),
        ["shell", f"--roadtest-workdir={work}", f"--roadtest-cpu={other_cpu()}", *selection],
        cwd=str(ROOT),
        env=env,
        encoding="utf-8",
        codec_errors="replace",
        timeout=120,
        dimensions=(40, 200),
    )
    if ready:
        child.expect(ready)
    return child


def read_lux(child: pexpect.spawn[str]) -> float:
    """In the guest's shell: the IIO attribute through $SENSOR, the device's sysfs dir."""
    child.sendline("cat $SENSOR/iio:device*/in_illuminance_input")
    child.expect(r"\r\n(-?[0-9.]+)\r\n")
    value = float(str(child.after).strip())
    child.expect(GUEST_PROMPT)
    return value


def finish(child: pexpect.spawn[str], work: Path) -> None:
    child.expect(pexpect.EOF)
    child.close()
    assert leftovers(work, set()) == [], "processes of the shell's guest are left"


def test_the_guest_shell_sees_what_the_python_prompt_sets(tmp_path: Path) -> None:
    work = tmp_path / "work"
    child = start(work, OPT3001_TESTS)
    banner = str(child.before)
    assert "sensor" in banner and "ti,opt3001" in banner and "driver bound" in banner, banner
    try:
        child.sendline("shell()")
        child.expect(GUEST_PROMPT)
        assert read_lux(child) == lux_from_datasheet(0x0000)  # the model's reset value
        child.send(ESCAPE)
        child.expect(PROMPT)

        # E = 6, R = 0xabc = 2748: 0.01 * 64 * 2748 = 1758.72 lux.
        child.sendline("sensor.result = 0x6ABC")
        child.expect(PROMPT)
        child.sendline("shell()")
        child.expect(GUEST_PROMPT)  # the prompt it printed before, shown again
        assert read_lux(child) == pytest.approx(lux_from_datasheet(0x6ABC))
        assert lux_from_datasheet(0x6ABC) == pytest.approx(1758.72)

        # The guest's shell ending brings the Python prompt back; shell() starts another.
        child.sendline("exit")
        child.expect(r"the guest's shell exited")
        child.expect(PROMPT)
        child.sendline("sensor.result = 0x3456")  # the README's example: 88.80 lux
        child.expect(PROMPT)
        child.sendline("shell()")
        child.expect(GUEST_PROMPT)
        assert read_lux(child) == pytest.approx(88.80)
        child.send(ESCAPE)
        child.expect(PROMPT)

        child.sendline('sh("cat $SENSOR/name")')  # one command, its output printed
        child.expect(r"opt3001\r\n")
        child.expect(PROMPT)
        child.sendline("exit()")
        finish(child, work)
        assert child.exitstatus == 0, child.before
    finally:
        child.close(force=True)


@pytest.mark.parametrize("how", ["Ctrl-D", "SIGTERM in the guest's shell", "hang-up"])
def test_leaving_powers_the_guest_off(tmp_path: Path, how: str) -> None:
    work = tmp_path / "work"
    child = start(work, f"{OPT3001_TESTS}::test_illuminance")
    try:
        if how == "Ctrl-D":
            child.sendeof()
            child.expect("powering the guest off")
            finish(child, work)
            assert child.exitstatus == 0
        elif how == "SIGTERM in the guest's shell":
            child.sendline("shell()")
            child.expect(GUEST_PROMPT)
            child.kill(signal.SIGTERM)
            child.expect(r"roadtest: terminated \(SIGTERM\)")
            finish(child, work)
            assert child.exitstatus == 128 + signal.SIGTERM
        else:
            # The terminal goes away (its window closed): the kernel hangs the session up.
            pty = vars(child)["ptyproc"]  # pexpect's process (not in its type stubs)
            pty.fileobj.close()
            pty.wait()
            assert pty.exitstatus == 128 + signal.SIGHUP
            assert _wait_for_no_leftovers(work), "processes of the shell's guest are left"
    finally:
        child.close(force=True)


def test_ctrl_c_while_the_guest_boots_leaves_nothing(tmp_path: Path) -> None:
    work = tmp_path / "work"
    child = start(work, "opt3001", ready="")
    try:
        console = work / "gw0" / "guest-1" / "console.log"
        deadline = time.monotonic() + 120
        while not console.exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # the guest is booting
        child.sendintr()  # Ctrl-C, as typed in the terminal
        child.expect(r"roadtest: interrupted")
        finish(child, work)
        assert child.exitstatus == 128 + signal.SIGINT
    finally:
        child.close(force=True)


def _wait_for_no_leftovers(work: Path) -> bool:
    deadline = time.monotonic() + 30
    while leftovers(work, set()):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_after_a_crash_restart_gives_a_guest_with_the_devices_bound(tmp_path: Path) -> None:
    work = tmp_path / "work"
    child = start(work, "opt3001")  # a device by its chip name
    try:
        child.sendline("sensor.result = 0x3456")
        child.expect(PROMPT)
        child.sendline('sh("echo c > /proc/sysrq-trigger")')  # the kernel crashes
        child.expect("the guest kernel panicked")
        child.expect(r"restart\(\) boots a new guest")
        child.expect(PROMPT)
        child.sendline("restart()")
        child.expect("a new guest is running")
        child.expect(PROMPT)
        child.sendline("shell()")
        child.expect(GUEST_PROMPT)
        assert read_lux(child) == pytest.approx(88.80)  # the model kept what was set
        child.send(ESCAPE)
        child.expect(PROMPT)
        child.sendline("exit()")
        finish(child, work)
        assert child.exitstatus == 0
    finally:
        child.close(force=True)
