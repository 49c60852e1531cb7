"""Waiting, in host time, for what the guest does on its own after a call returned."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(
    condition: Callable[[], bool],
    what: str | Callable[[], str],
    timeout: float = 10.0,
    interval: float = 0.01,
) -> None:
    """Poll `condition` until it holds; AssertionError after `timeout` host seconds, naming
    `what` (a text, or a function that says it then: the state it found).

    For state the guest changes on its own after the test's call returned: a driver's
    interrupt thread clearing a status bit, the RTC core's follow-up read. Under a real
    clock (QEMU, travel) the guest runs beside the test, so the test waits for the state
    the driver must reach, never for a moment in between. Under simulated time the guest's
    clock stands still while the test polls: wait only for work that needs no guest time
    to pass (it is done, or it runs as soon as the guest does).
    """
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"{said}: not within {timeout:g} s")
        time.sleep(interval)
