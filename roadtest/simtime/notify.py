"""When the guest hears from its devices: the transport's seam to time.

The vhost-user transport (roadtest.backend.vhost_user) knows the wire and
nothing of time, as rust-vmm's does. What time decides it asks a `Scheduler`,
chosen where the backend is built:

- whether notifications are messages it times (`in_band`: the transport then
  offers INBAND_NOTIFICATIONS, and UML's time-travel handler takes each call at
  the calendar's time);
- for a connection that negotiated them, a `Notifier`: which queues the driver
  kicks (`kicks`; the others are looked at each time the guest waits, through
  `Link.look_at_rings`), when a completion is told (`signal`, set as
  `Virtqueue.signal`: the calendar calls `Link.send_calls` then), and that the
  calendar holds while a call is in flight (`in_flight`, until `replied`).

`RealTime` is the host's clock: kicks and call fds, nothing timed. `SimulatedTime`
runs it all on a `Controller`'s calendar (docs/design.md, "How sim works").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from roadtest.simtime.controller import Controller, Loop


class Queue(Protocol):
    """What a notifier sees of a virtqueue."""

    @property
    def index(self) -> int: ...

    @property
    def driver_spins(self) -> bool:
        """The driver busy-waits on the used ring after it kicks (hvc's put_chars)."""
        ...


class Link(Protocol):
    """What a notifier asks of its connection (the transport), on the loop thread."""

    def look_at_rings(self) -> None:
        """Take what the guest queued on the queues that do not kick."""
        ...

    def send_calls(self, queues: list[int]) -> None:
        """Send in-band calls for these queues (by index), in one write."""
        ...


class Notifier(Protocol):
    """One connection's in-band notifications in time."""

    def kicks(self, vq: Queue) -> bool:
        """Whether the driver should kick `vq` (if not, `Link.look_at_rings` covers it)."""
        ...

    def signal(self, vq: Queue, after: int) -> None:
        """`vq` has used buffers to tell of, done `after` ns from now (from any thread)."""
        ...

    def in_flight(self, calls: int) -> None:
        """`calls` calls were sent whose replies the guest owes."""
        ...

    def replied(self) -> None:
        """The guest took one of them in (or the link that owed it is gone): once for each
        call `in_flight` counted, never more."""
        ...

    def close(self) -> None:
        """The connection ends: its rings are not looked at any more."""
        ...


class Scheduler(Protocol):
    """Time's say in the transport: one per backend."""

    @property
    def in_band(self) -> bool:
        """Offer in-band notifications (INBAND_NOTIFICATIONS), timed by this scheduler."""
        ...

    def notifier(self, link: Link) -> Notifier:
        """For a connection that negotiated in-band notifications (loop thread)."""
        ...

    def listen(self, loop: Loop) -> None:
        """The backend's loop runs: serve what the guest needs of time on it."""
        ...

    def close(self) -> None:
        """The loop ends (loop thread)."""
        ...


class RealTime:
    """The host's clock: nothing in-band is offered; drivers kick, devices write call fds.
    Were in-band calls taken anyway, each would go at once."""

    in_band = False

    def notifier(self, link: Link) -> Notifier:
        return _AtOnce(link)

    def listen(self, loop: Loop) -> None:
        pass

    def close(self) -> None:
        pass


class _AtOnce:
    def __init__(self, link: Link) -> None:
        self._link = link

    def kicks(self, vq: Queue) -> bool:
        return True

    def signal(self, vq: Queue, after: int) -> None:
        self._link.send_calls([vq.index])

    def in_flight(self, calls: int) -> None:
        pass

    def replied(self) -> None:
        pass

    def close(self) -> None:
        pass


class SimulatedTime:
    """The guest's clock is `controller`'s calendar (roadtest.simtime.controller)."""

    in_band = True

    def __init__(self, controller: Controller) -> None:
        self.controller = controller

    def notifier(self, link: Link) -> Notifier:
        return _OnTheCalendar(self.controller, link)

    def listen(self, loop: Loop) -> None:
        self.controller.listen(loop)

    def close(self) -> None:
        self.controller.close()


class _OnTheCalendar:
    """Queues of drivers that sleep on a completion ask for no kicks: the rings are looked
    at each time the guest waits, the instant a kick would have been handled at. A
    completion is called at its time on the calendar; a spinning driver's (nothing waits
    for it) goes with the connection's next call, or at the latest with the guest's next
    turn. The calendar holds while a call's reply is due: a RUN the guest read while it
    handled the call would be lost (time.c's nested request)."""

    # A call in flight holds the calendar until its reply; the controller's own methods,
    # called once a transfer, without a call of this object's in between.
    in_flight: Callable[[int], None]
    replied: Callable[[], None]

    def __init__(self, controller: Controller, link: Link) -> None:
        self._controller = controller
        self._link = link
        self._loop = controller.loop
        self._lazy: list[int] = []  # calls for spinning drivers, not yet sent
        self.in_flight = controller.hold
        self.replied = controller.release
        controller.when_guest_waits(link.look_at_rings)

    def kicks(self, vq: Queue) -> bool:
        return vq.driver_spins

    def signal(self, vq: Queue, after: int) -> None:
        # From another thread it is the test's input (a GPIO line it drives): it reaches
        # the guest after the guest's own work at that instant, however late the host is.
        if self._loop.on_loop_thread():
            self._schedule(vq.index, vq.driver_spins, after, False)
        else:
            index, spins = vq.index, vq.driver_spins
            self._loop.call_soon(lambda: self._schedule(index, spins, after, True))

    def _schedule(self, index: int, spins: bool, after: int, tests_input: bool) -> None:
        controller = self._controller
        if spins:
            if index not in self._lazy:
                self._lazy.append(index)
                controller.with_next_turn(self._send_lazy)
        else:
            controller.at(controller.now + after, lambda: self._call(index), tests_input)

    def _send_lazy(self) -> None:
        if self._lazy:
            self._call(None)

    def _call(self, index: int | None) -> None:
        queues, self._lazy = self._lazy, []
        if index is not None:
            queues.append(index)
        self._link.send_calls(queues)

    def close(self) -> None:
        self._controller.forget(self._link.look_at_rings)
