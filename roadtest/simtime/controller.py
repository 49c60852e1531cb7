"""The scheduler of simulated time: one guest, and the backend's work, on one clock.

The guest (UML booted with `time-travel=ext:<socket>`) asks to run at a time
(REQUEST), says it waits (WAIT), and runs again only when told (RUN). Its CPU
work takes no simulated time; its clock moves only here. The backend's work is
events on the same calendar (`at`): a transfer's completion after its bus time,
a model's alarm. Time moves only when every participant waits:

- the guest: it sent WAIT and no RUN is in flight;
- the backend: no in-band notification to the guest is in flight (`hold` until its
  reply: a RUN the guest read while it handled one would be lost, time.c's nested
  request, and the guest would hang for good);
- the agent: while it waits for the test's next request (`agent_idle`), the guest may
  run only at the current time, so that what the test does between requests happens
  at one instant of guest time, whatever the host's speed.

The guest sees the calendar from its boot: its time is the calendar's less the
calendar's time when it connected (`_base`), so every guest starts at 0 and a run
repeats whatever ran before it. With the shared-memory schedule (the default), a
wait and a run are one message each way, and while the agent works the guest runs
a short window past each RUN without asking (`WINDOW_NS`); each WAIT counts as the
whole window. Devices whose queues do not kick look at their rings each time the
guest waits (`when_guest_waits`), before the calendar moves.

All of it runs on the backend's event loop thread (its in-band notifications are
then ordered with the guest's requests without locks); other threads use `call_soon`.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from roadtest.simtime import protocol
from roadtest.simtime.protocol import MESSAGE, Schedule, TimeProtocolError
from roadtest.sockets import listen_unix

log = logging.getLogger("roadtest.simtime.controller")

NEVER = 1 << 63
# How far past a RUN the guest may run on its own with the shared schedule: each clock
# read in process context moves its clock 256 ns (arch/um/kernel/time.c, timer_read), and
# a short delay a few hundred ns; inside this window neither costs a turn. Every wait then
# counts as taking the whole window (see `_handle`): 0.4% of a 2-byte transfer's bus time.
WINDOW_NS = 2048
# The guest's time of day at boot (2026-01-01T00:00:00Z): fixed, so that runs repeat.
DEFAULT_TOD_NS = 1_767_225_600 * 1_000_000_000


class Loop(Protocol):
    """The event loop the controller runs on (the backend's EventLoop)."""

    def add_reader(self, fd: int, callback: Callable[[], None]) -> None: ...

    def remove_reader(self, fd: int) -> None: ...

    def call_soon(self, callback: Callable[[], None]) -> None: ...

    def on_loop_thread(self) -> bool: ...


SETTLE_TIMEOUT_S = 10.0


class Event:
    """Work for the loop thread at a time of the calendar; `cancel()` drops it. At one
    time, the backend's own work (rank 0) comes before the guest's turn, and the test's
    input (rank 1) after it: the test's input then finds the guest with nothing left to
    do at that instant, however late the host delivers it."""

    __slots__ = ("fn", "cancelled")

    def __init__(self, fn: Callable[[], None]) -> None:
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


# On the heap: (when, rank, seq, event), compared as tuples (seq: first come, first run).
_Entry = tuple[int, int, int, Event]


@dataclass
class Stats:
    """What the guest asked for, for benchmarks and failure reports."""

    messages: Counter[str] = field(default_factory=Counter)
    runs: int = 0
    events: int = 0


class Controller:
    """The calendar of one guest at a time: listen(), then boot a guest on `path`."""

    def __init__(
        self,
        path: Path,
        tod_ns: int = DEFAULT_TOD_NS,
        shared_memory: bool = True,
        window_ns: int = WINDOW_NS,
    ) -> None:
        self.path = Path(path)
        self.shared_memory = shared_memory
        self.window_ns = window_ns
        self._free_until = 0  # the calendar's time the guest may run to, alone (exclusive)
        self._schedule: Schedule | None = None
        self._shared: Schedule | None = None  # the schedule, once the guest took it
        self._base = 0  # the calendar's time when the guest connected: its time 0
        self._loop: Loop | None = None
        self.tod_ns = tod_ns
        self.now = 0
        self._counts = [0] * (len(protocol.NAMES) + 1)  # by op; the last: unknown ops
        self._runs = 0
        self._events_run = 0
        self.failure = ""  # why the last guest's link was dropped ("" if it was not)
        self._listener: socket.socket | None = None
        self._guest: socket.socket | None = None
        self._buf = bytearray()
        self._events: list[_Entry] = []
        self._seq = itertools.count()
        self._run_seq = 0
        self._waiting = False  # the guest sent WAIT and was not told to RUN since
        self._request = NEVER  # the time the guest last asked to run at
        self._run_in_flight = False
        self._holds = 0
        self._agent_idle = False
        self._stepping = False
        self._riders: list[Callable[[], None]] = []
        self._wait_hooks: list[Callable[[], None]] = []
        self._ran_at: float | None = None  # host time of the RUN the guest has not waited since
        self._looked = True  # the wait hooks ran since the guest's last WAIT

    # The guest's link

    @property
    def loop(self) -> Loop:
        if self._loop is None:
            raise RuntimeError("the controller is not listening (the backend is not running)")
        return self._loop

    def listen(self, loop: Loop) -> None:
        self._loop = loop
        sock = listen_unix(self.path, 1)
        self._listener = sock
        self.loop.add_reader(sock.fileno(), self._accept)

    def close(self) -> None:
        self._drop("")
        if self._listener is not None:
            self.loop.remove_reader(self._listener.fileno())
            self._listener.close()
            self._listener = None
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass

    @property
    def stats(self) -> Stats:
        """The messages the guests sent, the runs and the events so far."""
        names = [*(protocol.name(op) for op in range(len(protocol.NAMES))), "unknown"]
        counts = Counter({name: n for name, n in zip(names, self._counts, strict=True) if n})
        return Stats(counts, self._runs, self._events_run)

    @property
    def guest_time(self) -> int:
        """The current time as the guest's clock shows it: ns since it booted."""
        return self.now - self._base

    @property
    def running_for(self) -> float:
        """Host seconds the guest has run since its last RUN without waiting (0 while it
        waits). Its clock stands still meanwhile: long, it is stuck in a loop that neither
        sleeps nor reads the clock, and nothing under simulated time can preempt it."""
        return 0.0 if self._ran_at is None else time.monotonic() - self._ran_at

    @property
    def connected(self) -> bool:
        return self._guest is not None

    def _accept(self) -> None:
        assert self._listener is not None
        try:
            sock, _ = self._listener.accept()
        except BlockingIOError:
            return
        if self._guest is not None:
            self._drop("a new guest connected")
        sock.setblocking(False)
        self._guest = sock
        self._buf.clear()
        self._base = self.now
        self._waiting = False
        self._request = NEVER
        self._run_in_flight = False
        self._free_until = self.now + 1
        self._agent_idle = False  # the agent is booting: time runs until it is ready
        self.failure = ""
        self.loop.add_reader(sock.fileno(), self._readable)

    def _drop(self, why: str) -> None:
        sock = self._guest
        if sock is None:
            return
        if why:
            log.warning("time-travel link dropped: %s", why)
            self.failure = why
        self._guest = None
        self.loop.remove_reader(sock.fileno())
        sock.close()
        if self._schedule is not None:
            self._schedule.close()
            self._schedule = None
        self._shared = None
        self._ran_at = None
        self._waiting = False
        self._run_in_flight = False
        self._holds = 0
        self._riders.clear()

    def _readable(self) -> None:
        sock = self._guest
        if sock is None:
            return
        try:
            data = sock.recv(65536)
        except BlockingIOError:
            return
        except OSError as err:
            self._drop(f"reading the guest's time requests: {err}")
            return
        if not data:
            self._drop("")  # the guest ended
            return
        self._buf += data
        size = MESSAGE.size
        try:
            while len(self._buf) >= size and self._guest is not None:
                op, seq, when = MESSAGE.unpack_from(self._buf)
                del self._buf[:size]
                self._handle(op, seq, when)
        except TimeProtocolError as err:
            self._drop(str(err))
            return
        except OSError as err:
            self._drop(f"answering the guest's time request: {err}")
            return
        self._step()

    def _send(self, op: int, seq: int, when: int, fds: list[int] | None = None) -> None:
        assert self._guest is not None
        data = MESSAGE.pack(op, seq, when)
        if fds:
            socket.send_fds(self._guest, [data], fds)
        else:
            self._guest.sendall(data)

    def _handle(self, op: int, seq: int, when: int) -> None:
        self._counts[op if op < len(self._counts) else -1] += 1
        if op == protocol.ACK:
            if not self._run_in_flight or seq != self._run_seq:
                raise TimeProtocolError(f"ACK of seq {seq}, no RUN {seq} in flight")
            self._run_in_flight = False
            return
        if op == protocol.START:
            self._start(seq)
            return
        if self._shared is None and self._schedule is not None and self._schedule.time_share:
            self._shared = self._schedule
        reply = 0
        now = self.now - self._base  # in the guest's time
        if op == protocol.REQUEST:
            if when < now:
                raise TimeProtocolError(f"REQUEST for {when} ns, before now ({now} ns)")
            self._request = when + self._base
        elif op == protocol.WAIT:
            if self._run_in_flight:
                raise TimeProtocolError("WAIT while a RUN is in flight")
            self._waiting = True
            self._ran_at = None
            self._looked = False
            # The guest ran somewhere short of free_until, and says not where: take it as
            # having used the whole window, so nothing reaches it in its past, the same way
            # every run.
            self.now = max(self.now, self._free_until - 1)
            if self._shared is not None:
                return  # unacknowledged in shared memory
        elif op == protocol.GET:
            reply = now
        elif op == protocol.GET_TOD:
            reply = self.tod_ns + now
        elif op == protocol.UPDATE:
            # Without the shared schedule the guest never runs ahead (no FREE_UNTIL).
            if when != now:
                raise TimeProtocolError(f"UPDATE to {when} ns, the calendar is at {now} ns")
        elif op != protocol.BROADCAST:
            raise TimeProtocolError(f"unexpected {protocol.name(op)} from the guest")
        self._send(protocol.ACK, seq, reply)

    def _start(self, seq: int) -> None:
        # The schedule's memfd, and again in the log fd's place, which 6.12 closes unread.
        schedule = Schedule(protocol.SCHEDSHM_VERSION if self.shared_memory else 0)
        try:
            self._send(protocol.ACK, seq, 0, [schedule.fd] * protocol.SHARED_FDS)
        except BaseException:
            schedule.close()
            raise
        schedule.close_fd()
        if self.shared_memory:
            self._schedule = schedule
        else:
            schedule.close()

    def _guest_request(self) -> int:
        """When the guest asked to run, on the calendar (NEVER: it did not ask)."""
        schedule = self._shared
        if schedule is not None:
            when = schedule.request()
            return NEVER if when is None else when + self._base
        return self._request

    # The calendar

    def at(self, when: int, fn: Callable[[], None], after_guest: bool = False) -> Event:
        """Run `fn` on the loop thread at `when` (ns; now if earlier), once the guest waits;
        `after_guest`: after the guest's turn at that time (the test's input). Loop thread
        only (see `soon`)."""
        event = Event(fn)
        heapq.heappush(
            self._events, (max(when, self.now), int(after_guest), next(self._seq), event)
        )
        self._step()
        return event

    def after(self, delay: int, fn: Callable[[], None]) -> Event:
        return self.at(self.now + delay, fn)

    def soon(self, fn: Callable[[], None]) -> None:
        """Run `fn` on the loop thread: now if this is it (from any thread)."""
        if self.loop.on_loop_thread():
            fn()
        else:
            self.loop.call_soon(fn)

    def settle(self, timeout: float = SETTLE_TIMEOUT_S) -> None:
        """Return once the guest has nothing left to do at the calendar's current instant
        (from any thread but the loop's; at once with no guest): what the caller does next
        (a trace's marker, a model's input) then follows the guest's work at this instant
        on every run. After `timeout` host seconds it returns anyway: a guest that never
        waits is reported by whatever waits for it next."""
        if self._loop is None or self.loop.on_loop_thread() or not self.connected:
            return
        done = threading.Event()

        def after_the_guest() -> None:
            self.at(self.now, done.set, after_guest=True)

        self.loop.call_soon(after_the_guest)
        done.wait(timeout)

    def with_next_turn(self, fn: Callable[[], None]) -> None:
        """Run `fn` (loop thread) just before the guest's next turn, whenever that is: for
        a notification nothing in the guest waits for, which then costs no turn of its own."""
        self._riders.append(fn)

    def when_guest_waits(self, fn: Callable[[], None]) -> None:
        """Run `fn` (loop thread) each time the guest waits, before the calendar moves: a
        device takes what the guest queued without notifying it (`Virtqueue.kicks`)."""
        if fn not in self._wait_hooks:
            self._wait_hooks.append(fn)

    def forget(self, fn: Callable[[], None]) -> None:
        if fn in self._wait_hooks:
            self._wait_hooks.remove(fn)

    def hold(self, count: int = 1) -> None:
        """`count` things the guest must take in before it runs on are in flight (in-band
        notifications): no RUN until as many `release`s."""
        self._holds += count

    def release(self) -> None:
        self._holds -= 1
        self._step()

    def agent_idle(self, idle: bool) -> None:
        """The agent waits for the test (True) or works on a request (False).

        The agent's reply reaches the host in a kick, which the guest waits for us to ack,
        having just told its time (time_travel_propagate_time). Going idle there takes back
        the rest of the guest's window: the calendar is the guest's exact time, and stands
        still, as the test sees it, until the test's next input."""
        shared = self._shared
        if idle and not self._agent_idle and shared is not None and not self._waiting:
            told = shared.current_time + self._base
            self.now = max(self.now, told)
            self._free_until = self.now + 1
            shared.publish(self.now - self._base, self._free_until - self._base)
        self._agent_idle = idle
        self._step()

    def _step(self) -> None:
        """Give the calendar's next turn if every participant waits. An event's own changes
        (a notification it sends, the agent it wakes) are seen when it returns: the loop
        below looks again then, so a nested call does nothing."""
        if self._stepping:
            return
        self._stepping = True
        try:
            self._turns()
        finally:
            self._stepping = False

    def _turns(self) -> None:
        events = self._events
        while self._guest is not None and self._waiting:
            if not self._looked:
                self._looked = True
                for hook in list(self._wait_hooks):
                    try:
                        hook()
                    except Exception:  # as an event's: the clock must go on
                        log.exception("wait hook failed")
                continue
            if self._run_in_flight or self._holds:
                return
            while events and events[0][3].cancelled:
                heapq.heappop(events)
            # An event due while the guest ran ahead is due when it waits.
            first = max(events[0][0], self.now) if events else NEVER
            request = self._guest_request()
            when = min(first, request)
            if when >= NEVER or (self._agent_idle and when > self.now):
                return  # the guest blocks until something happens; no CPU is used
            if when < self.now:
                self._drop(f"the guest asked to run at {when - self._base} ns, in its past")
                return
            self.now = when
            event_due = first < request or (first == when and events[0][1] == 0)
            runs = not event_due and not self._riders
            # A RUN lets the guest run on alone up to free_until: its window with the shared
            # schedule (the only one that can say how far) while the agent works (the test
            # then waits for the agent, reading no time); nothing past now otherwise.
            shared = self._shared is not None
            window = self.window_ns if runs and shared and not self._agent_idle else 1
            schedule = self._schedule
            if schedule is not None:
                schedule.publish(when - self._base, when + window - self._base)
            if event_due:
                event = heapq.heappop(events)[3]
                self._events_run += 1
                try:
                    event.fn()
                except Exception:  # a model's bug must not stop the clock for every test
                    log.exception("simulated-time event failed")
                continue
            if self._riders:
                riders, self._riders = self._riders, []
                for fn in riders:
                    fn()
                continue  # what they sent is taken in before the guest runs
            self._waiting = False
            self._request = NEVER
            self._free_until = when + window
            self._run_seq += 1
            # In shared memory a RUN is not acknowledged: the guest's next WAIT follows it.
            self._run_in_flight = not shared
            self._runs += 1
            self._ran_at = time.monotonic()
            try:
                self._send(protocol.RUN, self._run_seq, when - self._base)
            except OSError as err:
                self._drop(f"sending RUN: {err}")
