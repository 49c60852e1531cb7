"""What the vcnl4010 tests share: waiting for the driver to release INT."""

from __future__ import annotations

from roadtest.models.vcnl4010 import REG_INTERRUPT_STATUS, VCNL4010
from roadtest.testing import wait_until


def wait_int_released(model: VCNL4010, timeout: float = 5.0) -> None:
    """Wait (host time) until the driver cleared the status bits and INT went high again.

    The driver pushes an event before it writes the status register, so the
    event can reach the test first; a measurement in between would find INT
    still low, make no new falling edge, and the interrupt would be lost.
    """
    irq = model.irq
    assert irq is not None, "the harness did not wire the irq line"
    wait_until(
        lambda: irq.input,
        lambda: (
            f"INT still asserted: status {model.regs[REG_INTERRUPT_STATUS]:#04x}, the "
            "driver did not clear it"
        ),
        timeout,
        interval=0.001,
    )
