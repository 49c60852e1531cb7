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

import heapq
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

    def settle(self) -> None:
        """Return once the guest has done what it had to do at this instant (simulated
        time; at once otherwise): the test's next change to the model comes after it."""
        ...


class InstantClock:
    """Hardware that is done at once: the host's clock, and no waiting."""

    simulated = False

    def now(self) -> int:
        return time.monotonic_ns()

    def after(self, delay: int, fn: Callable[[], None]) -> None:
        fn()

    def settle(self) -> None:
        pass  # the guest runs beside the test: there is no instant to finish


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

    def settle(self) -> None:
        self.controller.settle()


class ManualClock:
    """Simulated time that a test moves by hand: a model's unit tests, with no guest.

        clock = ManualClock()
        model.clock = clock
        model.write(START_CONVERSION)
        clock.advance(800 * NS_PER_MS)  # what the model scheduled for then has run

    Work falls due in the order of its time (in the order it was asked for, at the same
    time); while it runs, `now` is the time it was due at, so work it schedules falls due
    after it, in the same `advance` when that is not later than its end.
    """

    simulated = True

    def __init__(self, start: int = 0) -> None:
        self.time = start
        self._pending: list[tuple[int, int, Callable[[], None]]] = []
        self._asked = 0  # keeps the order of work due at the same time

    def now(self) -> int:
        return self.time

    def after(self, delay: int, fn: Callable[[], None]) -> None:
        if delay < 0:
            raise ValueError(f"a delay of {delay} ns is in the past")
        self._asked += 1
        heapq.heappush(self._pending, (self.time + delay, self._asked, fn))

    def settle(self) -> None:
        pass  # no guest: nothing runs unless the test advances the clock

    @property
    def pending(self) -> int:
        """How much work is scheduled and not yet due."""
        return len(self._pending)

    def advance(self, ns: int) -> None:
        """Move time on by `ns`, running the work that falls due on the way."""
        if ns < 0:
            raise ValueError("time does not run backwards")
        end = self.time + ns
        while self._pending and self._pending[0][0] <= end:
            due, _, fn = heapq.heappop(self._pending)
            self.time = due
            fn()
        self.time = end
