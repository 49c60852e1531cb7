"""Hypothesis examples in a live guest: kernel crashes, reports and hangs are failures that
Hypothesis shrinks, the guest is replaced between examples, and no state leaks across them.

The failure cases run a small test file in a pytest subprocess (its own guest), as the
harness tests do, and check what its user sees. The crash is the kernel's own (sysrq
'c' panics it); the kernel report is a line in the kernel's log as a WARN() prints it;
the hang is an agent request that blocks (reading a FIFO nobody writes, in the guest's
/run tmpfs).
"""

from __future__ import annotations

import re

import pytest
import scaffold
from hypothesis import given
from hypothesis import strategies as st

from roadtest.testing import RoadtestSession, read_float

SENSOR = scaffold.opt3001_sensor()

HEADER = (
    scaffold.OPT3001_SOURCE
    + """
from hypothesis import given, strategies as st

def lux_of(dev, result):
    dev.model.result = result
    return read_float(dev.path.only("iio:device*") / "in_illuminance_input")
"""
)


def run(pytester: pytest.Pytester, body: str, *args: str) -> pytest.RunResult:
    return scaffold.run(pytester, body, *args, header=HEADER, timeout=600)


def shrunk_to(out: str, argument: str) -> bool:
    """Does Hypothesis's report of the minimal failing example show `argument`?"""
    report = r"(?:Falsifying example|Failing test case): test_lux\((.*?)\n(?:E\s+)?\)"
    found = re.search(report, out, re.S)
    return found is not None and re.search(rf"\b{argument},", found.group(1)) is not None


def test_a_kernel_panic_fails_the_example_and_is_shrunk(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
@given(result=st.integers(0, 0xFFFF))
def test_lux(guest, result):
    dev = guest.bound_for_examples(SENSOR)
    lux_of(dev, result)
    if result >= 0x1000:  # exponent 1 and up: this "driver" panics
        guest.agent.write_file("/proc/sysrq-trigger", "c")

def test_after(guest):
    with guest.bound(SENSOR) as dev:
        assert lux_of(dev, 0x0001) == 0.01
""",
    )
    result.assert_outcomes(failed=1, passed=1)
    out = result.stdout.str()
    assert "KernelPanic: the guest kernel panicked" in out
    assert "sysrq" in out.lower()  # the example's kernel lines are in the report
    # Hypothesis shrank the crashing input to the smallest that crashes.
    assert shrunk_to(out, "result=4096")
    assert "roadtest reproduce" in out
    assert "roadtest run test_user.py::test_lux" in out


def test_a_kernel_report_fails_the_example_and_the_guest_is_replaced(
    pytester: pytest.Pytester,
) -> None:
    result = run(
        pytester,
        """
BOOTS = []

@given(result=st.integers(0, 0xFFFF))
def test_lux(guest, result):
    BOOTS.append(guest.boots)
    dev = guest.bound_for_examples(SENSOR)
    lux_of(dev, result)
    if result >= 77:
        guest.agent.kmsg("WARNING: CPU: 0 PID: 1 at drivers/fake.c:12 fake_read+0x1/0x2")

def test_the_guest_was_replaced_after_each_report():
    # Every failing example (the first, each shrink step, the final replay) was followed
    # by a new guest: more boots than one.
    assert max(BOOTS) > 2
""",
    )
    result.assert_outcomes(failed=1, passed=1)
    out = result.stdout.str()
    assert "KernelWarning: the guest kernel reported trouble: " in out
    assert "drivers/fake.c:12" in out
    assert shrunk_to(out, "result=77")


def test_a_hang_kills_the_guest_and_fails_the_example(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
@given(result=st.integers(0, 40))
def test_lux(guest, result):
    dev = guest.bound_for_examples(SENSOR)
    lux_of(dev, result)
    if result >= 20:
        guest.agent.run(["/bin/sh", "-c", "rm -f /run/f; mkfifo /run/f"])
        fd = guest.agent.open("/run/f", 2)  # O_RDWR: the open itself does not wait
        guest.agent.read(fd, 1)  # blocks: nobody writes
""",
        "--roadtest-hang-limit=2",
    )
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "GuestHang: an agent request was not answered within 2 s" in out
    # Shrunk through hangs, each costing the limit and a new guest: a small range keeps
    # the shrink's hanging examples few (0..1000 took 35 s).
    assert shrunk_to(out, "result=20")
    assert "--roadtest-hang-limit=2" in out  # the reproducer keeps the option


def test_a_failure_that_does_not_happen_again_is_flaky_with_both_logs(
    pytester: pytest.Pytester,
) -> None:
    result = run(
        pytester,
        """
SEEN = []

@given(result=st.integers(0, 0xFFFF))
def test_lux(guest, result):
    dev = guest.bound_for_examples(SENSOR)
    lux_of(dev, result)
    SEEN.append(result)
    if len(SEEN) == 3:
        guest.agent.kmsg("WARNING: CPU: 0 PID: 1 at drivers/once.c:1 once+0x1/0x2")
""",
    )
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "Flaky" in out
    assert "roadtest kernel log of the failing run" in out
    assert "roadtest kernel log of the passing re-run" in out
    assert "drivers/once.c:1" in out


# No state leaks from one example into the next (run in this guest, not a subprocess).

SEEN_RESULTS: list[int] = []


@given(result=st.integers(1, 0xFFFF))
def test_a_kept_device_starts_each_example_with_its_model_reset(
    guest: RoadtestSession, result: int
) -> None:
    dev = guest.bound_for_examples(SENSOR)
    assert dev.model.result == 0x0000, "the model's input kept an earlier example's value"
    dev.model.result = result
    lux = read_float(dev.path.only("iio:device*") / "in_illuminance_input")
    # Datasheet SBOS681B 7.4.1: lux = 0.01 * 2^E[15:12] * R[11:0].
    assert lux == round(0.01 * (1 << (result >> 12)) * (result & 0xFFF), 2)
    SEEN_RESULTS.append(result)


@given(integration_time=st.sampled_from(["0.1", "0.8"]))
def test_a_device_bound_in_each_example_starts_from_probe(
    guest: RoadtestSession, integration_time: str
) -> None:
    with guest.bound(SENSOR) as dev:
        time_file = dev.path.only("iio:device*") / "in_illuminance_integration_time"
        # The driver's probe sets 800 ms (datasheet: CT=1 at reset); an earlier example's
        # choice must not be what this example's driver starts with.
        assert time_file.read_text().strip() == "0.800000"
        time_file.write_text(integration_time)
        assert float(time_file.read_text()) == float(integration_time)
