"""A model that raises anything, even a BaseException, fails only its own test.

pytest.fail, pytest.skip, SystemExit and KeyboardInterrupt raised by a model
run on the backend's thread; they used to end that thread, after which the
guest panicked and every later test of the session errored. Each case here
runs in one inner pytest session (one guest), and the last test there must
pass on that same guest.
"""

from __future__ import annotations

import pytest
from scaffold import run

MODELS = """
import pytest

def read_lux(dev):
    return read_float(dev.path.only("iio:device*") / "in_illuminance_input")

class Raises(OPT3001):
    exc = None

    def reg_read(self, addr):
        if addr == REG_RESULT:
            raise self.exc
        return super().reg_read(addr)

def raising(exc):
    return type("Raising", (Raises,), {"exc": exc})()
"""

CASES = """
def test_model_calls_pytest_fail(guest):
    with guest.bound(SENSOR, model=raising(pytest.fail.Exception("the model says no"))) as dev:
        read_lux(dev)

def test_model_calls_pytest_skip(guest):
    with guest.bound(SENSOR, model=raising(pytest.skip.Exception("not modelled yet"))) as dev:
        read_lux(dev)

def test_model_raises_system_exit(guest):
    with guest.bound(SENSOR, model=raising(SystemExit(7))) as dev:
        try:
            read_lux(dev)
        except OSError:
            pass  # the driver's read fails; the model's exception still fails the test

def test_model_raises_keyboard_interrupt(guest):
    with guest.bound(SENSOR, model=raising(KeyboardInterrupt())) as dev:
        read_lux(dev)

def test_model_value_does_not_fit(guest):
    with guest.bound(SENSOR) as dev:
        dev.model.result = 0x1FFFF
        read_lux(dev)

def test_after(guest):
    with guest.bound(SENSOR) as dev:
        dev.model.result = 0x0001
        assert read_lux(dev) == 0.01
    assert guest.boots == 1  # the same guest: nothing above crashed it
"""


def test_model_faults_fail_their_own_test_only(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\naddopts = -rfEs\n")  # the skip's reason in the summary too
    result = run(pytester, MODELS + CASES)
    out = result.stdout.str()
    result.assert_outcomes(failed=4, skipped=1, passed=1)
    # Each headline is the model's exception, not the driver's EIO.
    result.stdout.fnmatch_lines_random(
        [
            "FAILED *test_model_calls_pytest_fail*the model says no*",
            "SKIPPED *not modelled yet*",
            "FAILED *test_model_raises_system_exit*SystemExit*7*",
            "FAILED *test_model_raises_keyboard_interrupt*KeyboardInterrupt*",
            "FAILED *test_model_value_does_not_fit*OPT3001 read of register 0x00 returned "
            "0x1ffff, which does not fit 16 bits*",
        ]
    )
    assert "PytestUnhandledThreadExceptionWarning" not in out
    assert "Errno 5" not in "\n".join(ln for ln in out.splitlines() if ln.startswith("FAILED"))
