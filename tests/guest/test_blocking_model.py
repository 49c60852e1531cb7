"""A model whose read does not return is named, with its call and register, not the guest.

The backend serves every device on one thread: while a model's callback sleeps, the
driver's transfer gets no answer and the test's agent request times out. That read
`GuestDied: the guest hung: guest agent did not answer within 30 s`. The unit tests
(tests/unit/test_model_blocks.py) check the verdict against the fake frontend; this one
against a real driver in a guest.
"""

from __future__ import annotations

import pytest
from scaffold import AFTER_A_LOST_GUEST, run

CASES = """
import time

class Sleepy(OPT3001):
    def reg_read(self, addr):
        if addr == REG_RESULT:
            time.sleep(6.0)  # past the agent's limit below
        return super().reg_read(addr)

def test_model_sleeps_in_its_read(guest):
    with guest.bound(SENSOR, model=Sleepy()) as dev:
        lux = dev.path.only("iio:device*") / "in_illuminance_input"
        guest.agent.timeout = 2.0
        read_float(lux)
"""


def test_a_model_that_blocks_is_named_not_the_guest(pytester: pytest.Pytester) -> None:
    result = run(pytester, CASES + AFTER_A_LOST_GUEST)
    out = result.stdout.str()
    result.assert_outcomes(failed=1, passed=1)  # the next test works in a new guest
    result.stdout.fnmatch_lines(
        [
            "FAILED *test_model_sleeps_in_its_read - *ModelBlocked: the model Sleepy "
            "(i2c 0x*) did not return from read(2) -> _reg_bytes(0) -> reg_read(0), "
            "register 0x00*",
        ]
    )
    assert "time.sleep(6.0)" in out  # where it waits
    assert "the guest hung" not in out
