"""What a model sees of time: `Clock`.

Under simulated time (`SimulatedClock`) a model's work happens at a time of the
guest's calendar: a conversion is ready 800 ms of guest time after it started, an
alarm fires at its minute, and a test can ask the model when the driver did what.
Without it (`INSTANT`, basic time-travel or the host's clock), the guest's clock
is not one the models can follow: work a model schedules is done at once, as
hardware infinitely fast (which is what models did before they kept time).

Models keep time through `after(delay, fn)` and `now`: `fn` runs on the backend's
thread, where the driver's transfers run too, so it needs no lock of its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final, Protocol

from roadtest.simtime.controller import Controller

NS_PER_MS: Final = 1_000_000
NS_PER_S: Final = 1_000_000_000


class Clock(Protocol):
    simulated: bool  # whether `now` is the guest's time and `after` waits for it

    def now(self) -> int:
        """The time in ns (when simulated, the guest's: since it booted)."""
        ...

    def after(self, delay: int, fn: Callable[[], None]) -> None:
        """Run `fn` `delay` ns from now (at once when not simulated)."""
        ...


class InstantClock:
    """Hardware that is done at once: the host's clock, and no waiting."""

    simulated = False

    def now(self) -> int:
        return time.monotonic_ns()

    def after(self, delay: int, fn: Callable[[], None]) -> None:
        fn()


INSTANT: Final = InstantClock()


class SimulatedClock:
    """The guest's calendar (from the backend's thread, or any other: `after` hands over)."""

    simulated = True

    def __init__(self, controller: Controller) -> None:
        self.controller = controller

    def now(self) -> int:
        return self.controller.guest_time

    def after(self, delay: int, fn: Callable[[], None]) -> None:
        controller = self.controller

        def schedule() -> None:
            controller.after(delay, fn)

        controller.soon(schedule)
