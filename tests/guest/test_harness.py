"""The harness around driver tests, seen from a user's pytest run: reports and crash recovery.

Each case runs a small driver-test file in a pytest subprocess (so it gets
its own guest) and checks what the user sees.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from scaffold import AFTER_A_LOST_GUEST, run

from roadtest.kernel import cached_kernel

# Before a test that crashes or hangs its guest (AFTER_A_LOST_GUEST after it): boots the
# guest first, so that a time limit below is the test's own and not a boot's
# (a boot on a busy CPU, as in make test's other lane, can take longer than the limit).
BOOTED_FIRST = """
def test_boots(guest):
    assert guest.boots == 1
"""


def test_failing_test_shows_its_kernel_and_backend_log(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
def test_wrong_lux(guest):
    with guest.bound(SENSOR) as dev:
        dev.model.result = 0x3456
        assert read_float(dev.path.only("iio:device*") / "in_illuminance_input") == 1.0
""",
    )
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "roadtest kernel log" in out
    assert "Found TI OPT3001" in out  # the probe message, logged during this test
    assert "roadtest backend log" in out
    assert "console: " in out and "console.log" in out


MODEL_FAULTS = """
class Refuses(OPT3001):
    def reg_read(self, addr):
        if addr == REG_RESULT:
            raise ModelError("result register is on fire")
        return super().reg_read(addr)

class Buggy(OPT3001):
    def reg_read(self, addr):
        if addr == REG_RESULT:
            return {}[addr]  # the model's own bug
        return super().reg_read(addr)

def read_lux_ignoring_eio(dev):
    try:
        read_float(dev.path.only("iio:device*") / "in_illuminance_input")
    except OSError:
        pass  # the NACK reaches the driver, which fails the read: the test body passes

def test_refusing_model(guest):
    with guest.bound(SENSOR, model=Refuses()) as dev:
        read_lux_ignoring_eio(dev)

def test_buggy_model(guest):
    dev = guest.attach(SENSOR, model=Buggy())  # detached by the fixture, after the test
    dev.bind()
    read_lux_ignoring_eio(dev)
"""


def failure_section(out: str, test: str) -> str:
    """The FAILURES section of one test in a pytest report."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip("_ ") == test)
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].startswith(("___", "==="))),
        len(lines),
    )
    return "\n".join(lines[start:end])


def test_a_model_fault_fails_its_test_headed_by_the_models_exception(
    pytester: pytest.Pytester,
) -> None:
    """What a user sees when a model raises while serving the driver, even in a test that
    swallows the driver's EIO: the test fails in its call phase (not a pass with an error at
    teardown), with the model's exception as its headline, not the EIO. A ModelError is a
    deliberate refusal whose message says it all: no traceback. Any other exception is a
    bug in the model: its traceback, down to the model's own line, is shown."""
    result = run(pytester, MODEL_FAULTS, "-rfE")
    result.assert_outcomes(failed=2)  # and no errors
    result.stdout.fnmatch_lines_random(
        [
            "FAILED *::test_refusing_model - *ModelFault: i2c 0x* Refuses.read(2): "
            "result register is on fire",
            "FAILED *::test_buggy_model - *ModelFault: i2c 0x* Buggy.read(2): KeyError: 0",
        ]
    )
    out = result.stdout.str()
    refusing = failure_section(out, "test_refusing_model")
    assert "a model raised while serving the driver" in refusing
    assert "Traceback" not in refusing
    buggy = failure_section(out, "test_buggy_model")
    assert "Traceback (most recent call last)" in buggy
    assert 'test_user.py", line' in buggy and ", in reg_read" in buggy
    assert "return {}[addr]  # the model's own bug" in buggy


def test_guest_crash_fails_one_test_and_the_next_gets_a_new_guest(
    pytester: pytest.Pytester,
) -> None:
    result = run(
        pytester,
        """
def test_crash(guest):
    guest.agent.write_file("/proc/sysrq-trigger", b"c")
"""
        + AFTER_A_LOST_GUEST,
    )
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*Kernel panic*"])


def test_malformed_fragment_stops_the_run_with_one_line(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
BAD = I2CDevice(compatible="ti,opt3001", model=OPT3001, dts="sensor@$addr$ { reg = <0x$addr$> ")

def test_anything(guest):
    pass
""",
    )
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        ["*roadtest: devicetree fragment of test_user.BAD does not compile:*"]
    )


def test_compatible_without_module_says_which_config_to_add(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
NOMOD = I2CDevice(
    compatible="acme,nothing",
    model=OPT3001,
    dts='sensor@$addr$ { compatible = "acme,nothing"; reg = <0x$addr$>; };',
)

def test_bind(guest):
    with guest.bound(NOMOD):
        pass
""",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*compatible 'acme,nothing': add the driver's CONFIG_ option*"])


def test_ktap_results_read_by_the_kernels_own_parser(pytester: pytest.Pytester) -> None:
    kernel = cached_kernel(Path(__file__).parents[2])
    assert kernel is not None, "roadtest run builds the kernel before its tests"
    kunit = kernel.source_dir / "tools" / "testing" / "kunit" / "kunit.py"
    ktap = pytester.path / "results.ktap"
    run(
        pytester,
        """
import pytest

def test_in_the_guest(guest):
    with guest.bound(SENSOR) as dev:
        dev.model.result = 0x0001
        assert read_float(dev.path.only("iio:device*") / "in_illuminance_input") == 0.01

def test_wrong_lux(guest):
    with guest.bound(SENSOR) as dev:
        dev.model.result = 0x0001
        assert read_float(dev.path.only("iio:device*") / "in_illuminance_input") == 1.0

@pytest.mark.skip(reason="no such chip")
def test_skipped():
    pass

@pytest.fixture
def broken():
    raise RuntimeError("fixture is broken")

def test_setup_error(broken):
    pass
""",
        f"--roadtest-ktap={ktap}",
    ).assert_outcomes(passed=1, failed=1, skipped=1, errors=1)
    parsed = subprocess.run(
        [sys.executable, str(kunit), "parse", f"--json={pytester.path / 'results.json'}", ktap],
        capture_output=True,
        text=True,
        check=False,
    )
    assert parsed.returncode == 1, parsed.stdout + parsed.stderr  # kunit.py: a test failed
    (suite,) = json.loads((pytester.path / "results.json").read_text())["sub_groups"]
    assert suite["name"] == "test_user.py"
    assert [(case["name"], case["status"]) for case in suite["test_cases"]] == [
        ("test_in_the_guest", "PASS"),
        ("test_wrong_lux", "FAIL"),
        ("test_skipped", "SKIP"),
        ("test_setup_error", "FAIL"),
    ]
    text = ktap.read_text()
    diagnostics = [line for line in text.splitlines() if line.startswith("  # ")]
    # The failure and the kernel's lines of that test, as diagnostic lines
    assert any("AssertionError: assert 0.01 == 1.0" in line for line in diagnostics)
    assert any("opt3001 0-00" in line and "Found TI OPT3001" in line for line in diagnostics)
    assert "not ok 4 test_setup_error # ERROR in setup: RuntimeError: fixture is broken" in text


def test_a_test_past_its_time_limit_fails_and_the_next_gets_a_new_guest(
    pytester: pytest.Pytester,
) -> None:
    ktap = pytester.path / "results.ktap"
    result = run(
        pytester,
        BOOTED_FIRST
        + """
import pytest

@pytest.mark.timeout(3)
def test_spins_in_the_guest(guest):
    guest.agent.kmsg("about to spin")
    # Busy, not asleep: time-travel skips a guest's idle time, not its work.
    guest.agent.run(["/bin/sh", "-c", "while :; do :; done"], timeout=600)
"""
        + AFTER_A_LOST_GUEST,
        f"--roadtest-ktap={ktap}",
    )
    result.assert_outcomes(failed=1, passed=2)
    assert "  not ok 2 test_spins_in_the_guest # TIMEOUT 3 seconds" in ktap.read_text()
    result.stdout.fnmatch_lines(
        [
            "*TestTimeout: the test ran past its limit of 3 s*its guest was stopped",
            "*last kernel lines:",
            "*about to spin*",
        ]
    )


def test_a_hang_limit_fails_a_request_that_hangs_and_the_next_gets_a_new_guest(
    pytester: pytest.Pytester,
) -> None:
    """roadtest_hang_limit(seconds): an agent request of the test that is not answered in
    time fails it as a hang (a read of a FIFO that nobody writes never returns)."""
    result = run(
        pytester,
        BOOTED_FIRST
        + """
import pytest

@pytest.mark.roadtest_hang_limit(2)
def test_reads_a_fifo_nobody_writes(guest):
    guest.agent.run(["/bin/sh", "-c", "rm -f /run/f; mkfifo /run/f"])
    fd = guest.agent.open("/run/f", 2)  # O_RDWR: the open itself does not wait
    guest.agent.read(fd, 1)
"""
        + AFTER_A_LOST_GUEST,
    )
    result.assert_outcomes(failed=1, passed=2)
    result.stdout.fnmatch_lines(["*AgentTimeout: guest agent did not answer within 2 s*"])


def test_a_test_stuck_on_the_host_is_interrupted_at_its_time_limit(
    pytester: pytest.Pytester,
) -> None:
    result = run(
        pytester,
        BOOTED_FIRST
        + """
import time
import pytest

@pytest.mark.timeout(2)
def test_sleeps_on_the_host(guest):
    time.sleep(600)
"""
        + AFTER_A_LOST_GUEST,
    )
    result.assert_outcomes(failed=1, passed=2)
    result.stdout.fnmatch_lines(["*Timeout: the test ran past its limit of 2 s*"])


def test_boot_arguments_reach_every_guest_kernel(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
def test_kernel_arguments(guest):
    cmdline = guest.agent.read_file("/proc/cmdline").decode()
    assert ' opt3001.dyndbg="+p" trace_event=i2c:i2c_write ' in cmdline
    # trace_event= enabled the event at boot
    assert "i2c:i2c_write" in guest.agent.read_file("/sys/kernel/tracing/set_event").decode()
    with guest.bound(SENSOR):
        pass
    # The module's dyndbg= turned on its dev_dbg() (printed when it probes without an interrupt)
    rc, out, _ = guest.agent.run(["/bin/dmesg"])
    assert b"enabling interrupt-less operation" in out
""",
        '--roadtest-bootargs=opt3001.dyndbg="+p"  trace_event=i2c:i2c_write',
    )
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("value", "why"),
    [('opt3001.dyndbg="+p', "a double quote is not closed"), ("a -- b", "'--' ends")],
)
def test_boot_arguments_the_kernel_cannot_take(
    pytester: pytest.Pytester, value: str, why: str
) -> None:
    result = run(pytester, "def test_nothing(): pass\n", f"--roadtest-bootargs={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*roadtest: --roadtest-bootargs {value}: {why}*"])


def test_a_guest_that_panics_at_boot_says_why(pytester: pytest.Pytester) -> None:
    # Not "guest did not boot (channel closed by peer)": the kernel's panic names the cause.
    # And it stops the run in one line, not with the same error at every test's setup.
    result = run(
        pytester,
        "def test_one(guest): pass\ndef test_two(guest): pass\n",
        "--roadtest-bootargs=init=/no/such/init",
    )
    assert result.ret == 3
    result.assert_outcomes()
    result.stdout.fnmatch_lines(
        [
            "*Exit: roadtest: guest did not boot (Kernel panic - not syncing: "
            "Requested init /no/such/init failed*); console: *"
        ]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
