"""The calendar of simulated time against a scripted guest speaking UML's protocol,
and the transport's notifications timed on it (`roadtest.simtime.notify`).

The protocol's rules are include/uapi/linux/um_timetravel.h's: 16-byte messages
(op, seq, time), each ACKed with its seq; RUN only at a time the guest asked for;
GET answered with the current time. The scheduling rules are the controller's
contract: time moves only when every participant waits.
"""

from __future__ import annotations

import array
import mmap
import os
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from roadtest.backend.server import EventLoop
from roadtest.simtime.controller import Controller
from roadtest.simtime.notify import Notifier, RealTime, SimulatedTime

MSG = struct.Struct("<IIQ")
ACK, START, REQUEST, WAIT, GET, UPDATE, RUN, FREE_UNTIL, GET_TOD, BROADCAST = range(10)


class Guest:
    """The guest's side of the link, as arch/um/kernel/time.c speaks it."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(5.0)
        self.sock.connect(os.fspath(path))
        self.seq = 0

    def send(self, op: int, when: int = 0) -> int:
        self.seq += 1
        self.sock.sendall(MSG.pack(op, self.seq, when))
        return self.seq

    def recv(self, timeout: float = 5.0) -> tuple[int, int, int]:
        self.sock.settimeout(timeout)
        data = b""
        while len(data) < MSG.size:
            chunk = self.sock.recv(MSG.size - len(data))
            if not chunk:
                raise ConnectionError("the controller closed the link")
            data += chunk
        op, seq, when = MSG.unpack(data)
        return op, seq, when

    def request(self, op: int, when: int = 0) -> int:
        """Send and take the ACK; its time."""
        seq = self.send(op, when)
        ack_op, ack_seq, ack_time = self.recv()
        assert (ack_op, ack_seq) == (ACK, seq)
        return ack_time

    def start(self) -> list[int]:
        """START; the fds of its ACK."""
        seq = self.send(START, 2**64 - 1)
        fds = array.array("i")
        data, ancdata, _, _ = self.sock.recvmsg(MSG.size, socket.CMSG_SPACE(2 * fds.itemsize))
        for _level, _kind, cdata in ancdata:
            fds.frombytes(cdata[: len(cdata) - len(cdata) % fds.itemsize])
        op, ack_seq, _ = MSG.unpack(data)
        assert (op, ack_seq) == (ACK, seq)
        return list(fds)

    def wait_run(self) -> int:
        """WAIT, then the RUN that ends it (ACKed, as the guest does); its time."""
        self.request(WAIT)
        op, seq, when = self.recv()
        assert op == RUN
        self.sock.sendall(MSG.pack(ACK, seq, 0))
        return when

    def nothing_for(self, seconds: float) -> bool:
        self.sock.settimeout(seconds)
        try:
            return not self.sock.recv(1, socket.MSG_PEEK)
        except TimeoutError:
            return True


@pytest.fixture
def loop() -> Iterator[EventLoop]:
    loop = EventLoop()
    thread = threading.Thread(target=loop.run, daemon=True)
    thread.start()
    yield loop
    loop.stop()
    thread.join(5)
    loop.close()


def listening(loop: EventLoop, controller: Controller) -> Iterator[Controller]:
    on_loop(loop, lambda: controller.listen(loop))
    yield controller
    on_loop(loop, controller.close)


@pytest.fixture
def controller(tmp_path: Path, loop: EventLoop) -> Iterator[Controller]:
    yield from listening(loop, Controller(tmp_path / "time.sock", tod_ns=1_000_000_000))


def on_loop(loop: EventLoop, fn: Callable[[], object]) -> None:
    """Run `fn` on the loop's thread and wait for it."""
    done = threading.Event()

    def call() -> None:
        try:
            fn()
        finally:
            done.set()

    if loop.on_loop_thread() or not loop._thread_id:
        fn()
        return
    loop.call_soon(call)
    assert done.wait(5)


def booted(controller: Controller) -> Guest:
    guest = Guest(controller.path)
    for fd in guest.start():
        os.close(fd)
    return guest


@pytest.mark.parametrize(("shared", "versions"), [(True, {2}), (False, set(range(3)) - {2})])
def test_start_ack_carries_two_fds_and_the_schedule(
    tmp_path: Path, loop: EventLoop, shared: bool, versions: set[int]
) -> None:
    controller = Controller(tmp_path / "t.sock", shared_memory=shared)
    on_loop(loop, lambda: controller.listen(loop))
    guest = Guest(controller.path)
    fds = guest.start()
    try:
        # time.c reads both slots of the ACK: the schedule's memfd and a log fd.
        assert len(fds) == 2
        # struct um_timetravel_schedshm starts with its version (2: the guest uses it;
        # another: it talks messages only) and its length, a 4 KiB header and 128 bytes a
        # client; the guest maps the header, so it must be there.
        version, length = struct.unpack("<II", os.pread(fds[0], 8, 0))
        assert version in versions
        assert os.fstat(fds[0]).st_size >= 4096 + 128 and length >= 4096 + 128
    finally:
        for fd in fds:
            os.close(fd)
        on_loop(loop, controller.close)


def test_time_of_day_and_time_start_where_the_calendar_is(controller: Controller) -> None:
    guest = booted(controller)
    assert guest.request(GET_TOD) == 1_000_000_000
    assert guest.request(GET) == 0


def test_the_guest_runs_at_the_time_it_asked_for(controller: Controller) -> None:
    guest = booted(controller)
    guest.request(REQUEST, 5_000)
    assert guest.wait_run() == 5_000
    assert guest.request(GET) == 5_000
    # A later request replaces an earlier one (um_timetravel.h: "REQUEST messages
    # override each other").
    guest.request(REQUEST, 9_000)
    guest.request(REQUEST, 7_000)
    assert guest.wait_run() == 7_000


def test_a_guest_with_nothing_to_do_is_not_run(controller: Controller) -> None:
    guest = booted(controller)
    guest.request(WAIT)
    assert guest.nothing_for(0.3)


def test_while_the_agent_is_idle_time_stands_still(controller: Controller, loop: EventLoop) -> None:
    guest = booted(controller)
    on_loop(loop, lambda: controller.agent_idle(True))
    guest.request(REQUEST, 1_000)
    guest.request(WAIT)
    assert guest.nothing_for(0.3)  # the timer at 1 us waits for the agent's next request
    # A request for now is granted: it moves no time.
    guest.request(REQUEST, 0)
    op, seq, when = guest.recv()
    assert (op, when) == (RUN, 0)
    guest.sock.sendall(MSG.pack(ACK, seq, 0))
    guest.request(REQUEST, 1_000)
    guest.request(WAIT)
    on_loop(loop, lambda: controller.agent_idle(False))
    op, seq, when = guest.recv()
    assert (op, when) == (RUN, 1_000)


def test_the_backends_work_comes_first_and_the_tests_input_after_the_guest(
    controller: Controller, loop: EventLoop
) -> None:
    guest = booted(controller)
    seen: list[tuple[str, int]] = []

    def schedule() -> None:
        controller.at(2_000, lambda: seen.append(("input", controller.now)), after_guest=True)
        controller.at(2_000, lambda: seen.append(("completion", controller.now)))
        controller.at(1_000, lambda: seen.append(("alarm", controller.now)))

    on_loop(loop, schedule)
    assert seen == []  # nothing runs while the guest runs
    guest.request(REQUEST, 2_000)
    assert guest.wait_run() == 2_000
    assert seen == [("alarm", 1_000), ("completion", 2_000)]
    guest.request(WAIT)
    assert guest.nothing_for(0.2)
    assert seen[-1] == ("input", 2_000)


def test_no_run_while_an_in_band_notification_is_in_flight(
    controller: Controller, loop: EventLoop
) -> None:
    guest = booted(controller)
    on_loop(loop, controller.hold)
    guest.request(REQUEST, 10)
    guest.request(WAIT)
    assert guest.nothing_for(0.3)
    on_loop(loop, controller.release)
    op, _, when = guest.recv()
    assert (op, when) == (RUN, 10)


@pytest.mark.parametrize(
    ("messages", "why"),
    [
        ([(ACK, 0)], "no RUN"),
        ([(REQUEST, 100), (WAIT, 0), (UPDATE, 5)], "UPDATE to 5 ns"),
        ([(FREE_UNTIL, 0)], "unexpected FREE_UNTIL"),
    ],
)
def test_a_protocol_error_drops_the_link_and_says_why(
    controller: Controller, messages: list[tuple[int, int]], why: str
) -> None:
    guest = booted(controller)
    with pytest.raises(ConnectionError):
        for op, when in messages:
            guest.send(op, when)
            while guest.recv()[0] != ACK:
                pass
    assert why in controller.failure


def test_a_request_in_the_past_is_a_protocol_error(controller: Controller) -> None:
    guest = booted(controller)
    guest.request(REQUEST, 50)
    assert guest.wait_run() == 50
    guest.send(REQUEST, 10)
    with pytest.raises(ConnectionError):
        guest.recv()
    assert "before now" in controller.failure


def test_a_new_guest_replaces_a_dead_one_and_starts_at_zero(controller: Controller) -> None:
    guest = booted(controller)
    guest.request(REQUEST, 3_000)
    guest.wait_run()
    guest.sock.close()
    second = booted(controller)
    # Each guest's clock starts at its boot (so that a run repeats whatever ran before it);
    # the calendar, and the models' work on it, go on.
    assert second.request(GET) == 0
    assert controller.now == 3_000
    second.request(REQUEST, 500)
    assert second.wait_run() == 500
    assert controller.now == 3_500


def shared_guest(controller: Controller) -> tuple[Guest, mmap.mmap]:
    """A booted guest that took the shared schedule, as time_travel_setup_shm() does."""
    guest = Guest(controller.path)
    fds = guest.start()
    schedule = mmap.mmap(fds[0], 4096 + 128)
    for fd in fds:
        os.close(fd)
    CLIENT.pack_into(schedule, 4096, 0x1, 0, 0, 0)  # CAP_TIME_SHARE
    return guest, schedule


HEADER = struct.Struct("<IIQQHH")  # version, len, free_until, current_time, running_id
CLIENT = struct.Struct("<IIQQ")  # capa, flags, req_time, name


@pytest.fixture
def windowed(tmp_path: Path, loop: EventLoop) -> Iterator[Controller]:
    """A controller that lets the guest run 1 us past each RUN on its own."""
    yield from listening(loop, Controller(tmp_path / "w.sock", window_ns=1_000))


def test_shared_memory_schedule(windowed: Controller) -> None:
    """The guest of um_timetravel.h's "Time travel shared memory overview": it keeps its
    request in its client entry, WAIT and RUN are not acknowledged, and it may take
    what it asks for before free_until without asking."""
    guest, schedule = shared_guest(windowed)
    _, _, free_until, now, running, _ = HEADER.unpack_from(schedule)
    assert (now, running) == (0, 0)
    assert free_until <= 1  # nothing later than now may run unasked before the first RUN
    CLIENT.pack_into(schedule, 4096, 0x1, 0x1, 2_000, 0)  # REQ_RUN at 2 us
    guest.sock.sendall(MSG.pack(WAIT, 1, 0))  # no ACK comes
    op, _, when = guest.recv()
    assert (op, when) == (RUN, 2_000)  # and the guest does not ACK it
    _, _, free_until, now, _, _ = HEADER.unpack_from(schedule)
    assert now == 2_000
    assert free_until == 3_000  # its window: what it asks for before 3 us it takes unasked
    CLIENT.pack_into(schedule, 4096, 0x1, 0x1, 3_500, 0)
    guest.sock.sendall(MSG.pack(WAIT, 2, 0))
    op, _, when = guest.recv()
    assert (op, when) == (RUN, 3_500)
    schedule.close()


def test_what_falls_due_while_the_guest_runs_ahead_finds_it_where_it_may_be(
    windowed: Controller, loop: EventLoop
) -> None:
    """After a RUN at 2 us the guest may have moved its own clock anywhere short of 3 us
    without saying so. Something due at 2 us (a device's answer) reaches it when it waits,
    at the latest time it can be at (3 us - 1 ns): never in its past, which would panic
    the guest ("time goes backwards"), and the same whatever it did meanwhile."""
    guest, schedule = shared_guest(windowed)
    CLIENT.pack_into(schedule, 4096, 0x1, 0x1, 2_000, 0)
    guest.sock.sendall(MSG.pack(WAIT, 1, 0))
    assert guest.recv()[::2] == (RUN, 2_000)
    CLIENT.pack_into(schedule, 4096, 0x1, 0, 0, 0)  # running: no request
    seen: list[tuple[int, int]] = []

    def answer() -> None:  # what the device sees, and what the guest would read
        seen.append((windowed.guest_time, HEADER.unpack_from(schedule)[3]))

    on_loop(loop, lambda: windowed.at(windowed.now, answer))
    assert guest.nothing_for(0.2) and not seen  # the guest runs: nothing reaches it
    CLIENT.pack_into(schedule, 4096, 0x1, 0x1, 50_000, 0)  # its next timer
    guest.sock.sendall(MSG.pack(WAIT, 2, 0))
    assert guest.recv()[::2] == (RUN, 50_000)
    assert seen == [(2_999, 2_999)]
    schedule.close()


def test_the_agent_going_idle_takes_the_window_back_at_the_guests_told_time(
    windowed: Controller, loop: EventLoop
) -> None:
    """The agent's last reply byte comes in a kick, before which the guest wrote its own
    time (time_travel_propagate_time). From there the guest gets no window: the calendar
    is its exact time and stands still until the agent works again."""
    guest, schedule = shared_guest(windowed)
    CLIENT.pack_into(schedule, 4096, 0x1, 0x1, 2_000, 0)
    guest.sock.sendall(MSG.pack(WAIT, 1, 0))
    assert guest.recv()[::2] == (RUN, 2_000)
    assert HEADER.unpack_from(schedule)[2] == 3_000  # the agent works: a window
    CLIENT.pack_into(schedule, 4096, 0x1, 0, 0, 0)
    struct.pack_into("<Q", schedule, 16, 2_512)  # its time, told as it kicks
    on_loop(loop, lambda: windowed.agent_idle(True))
    _, _, free_until, now, _, _ = HEADER.unpack_from(schedule)
    assert (windowed.guest_time, now, free_until) == (2_512, 2_512, 2_513)
    CLIENT.pack_into(schedule, 4096, 0x1, 0x1, 2_768, 0)  # a clock read: 256 ns more
    guest.sock.sendall(MSG.pack(WAIT, 2, 0))
    assert guest.nothing_for(0.2) and windowed.guest_time == 2_512
    on_loop(loop, lambda: windowed.agent_idle(False))
    assert guest.recv()[::2] == (RUN, 2_768)
    assert HEADER.unpack_from(schedule)[2] == 3_768
    schedule.close()


def test_a_rider_goes_with_the_guests_next_turn_and_wakes_nobody(
    controller: Controller, loop: EventLoop
) -> None:
    guest = booted(controller)
    ridden: list[int] = []
    on_loop(loop, lambda: controller.with_next_turn(lambda: ridden.append(controller.now)))
    guest.request(REQUEST, 10_000)
    guest.request(WAIT)
    op, seq, when = guest.recv()
    assert (op, when) == (RUN, 10_000)
    assert ridden == [10_000]  # not at 0: it did not make a turn of its own
    guest.sock.sendall(MSG.pack(ACK, seq, 0))
    guest.request(WAIT)
    assert guest.nothing_for(0.2) and ridden == [10_000]


def test_how_long_the_guest_has_run_without_waiting(controller: Controller) -> None:
    """What tells a guest stuck in a busy loop (its clock stands still) from one that waits."""
    guest = booted(controller)
    assert controller.running_for == 0.0  # booting: no RUN yet
    guest.request(REQUEST, 1_000)
    guest.request(WAIT)
    op, seq, _ = guest.recv()
    assert op == RUN
    guest.sock.sendall(MSG.pack(ACK, seq, 0))
    time.sleep(0.3)
    assert controller.running_for >= 0.3
    guest.request(WAIT)
    assert controller.running_for == 0.0


# The transport's notifications on the calendar (roadtest.simtime.notify)


class FakeQueue:
    def __init__(self, index: int, driver_spins: bool = False) -> None:
        self.index = index
        self.driver_spins = driver_spins


class FakeLink:
    """The transport as a notifier sees it: records its calls at the calendar's time, each
    owing a reply as under REPLY_ACK."""

    def __init__(self, controller: Controller | None) -> None:
        self.controller = controller
        self.notifier: Notifier | None = None
        self.looked = 0
        self.calls: list[tuple[int, list[int]]] = []  # (the calendar's time, queues)

    def look_at_rings(self) -> None:
        self.looked += 1

    def send_calls(self, queues: list[int]) -> None:
        self.calls.append((self.controller.now if self.controller else -1, queues))
        assert self.notifier is not None
        self.notifier.in_flight(len(queues))


def attached(loop: EventLoop, controller: Controller) -> tuple[FakeLink, Notifier]:
    link = FakeLink(controller)
    scheduler = SimulatedTime(controller)
    assert scheduler.in_band
    on_loop(loop, lambda: setattr(link, "notifier", scheduler.notifier(link)))
    assert link.notifier is not None
    return link, link.notifier


def test_a_completion_is_called_at_its_time_and_holds_the_calendar_until_the_reply(
    controller: Controller, loop: EventLoop
) -> None:
    guest = booted(controller)
    link, notifier = attached(loop, controller)
    assert not notifier.kicks(FakeQueue(0))  # its ring is looked at when the guest waits
    on_loop(loop, lambda: notifier.signal(FakeQueue(0), 3_000))  # 3 us on the bus
    assert link.calls == []  # nothing while the guest runs
    guest.request(REQUEST, 10_000)
    guest.request(WAIT)
    assert guest.nothing_for(0.3)  # the call's reply is due: no RUN
    assert link.calls == [(3_000, [0])]
    assert link.looked == 1  # before the calendar moved
    on_loop(loop, notifier.replied)
    op, _, when = guest.recv()
    assert (op, when) == (RUN, 10_000)


def test_a_spinning_drivers_call_rides_the_guests_next_turn(
    controller: Controller, loop: EventLoop
) -> None:
    guest = booted(controller)
    link, notifier = attached(loop, controller)
    spins = FakeQueue(1, driver_spins=True)
    assert notifier.kicks(spins)  # served at once: it waits for nothing else

    def twice() -> None:
        notifier.signal(spins, 0)
        notifier.signal(spins, 0)

    on_loop(loop, twice)
    guest.request(REQUEST, 10_000)
    guest.request(WAIT)
    assert guest.nothing_for(0.2)  # one call, owing its reply, just before the turn
    assert link.calls == [(10_000, [1])]
    on_loop(loop, notifier.replied)
    op, _, when = guest.recv()
    assert (op, when) == (RUN, 10_000)


def test_settle_returns_once_the_guest_has_nothing_left_to_do_now(
    controller: Controller, loop: EventLoop
) -> None:
    controller.settle(timeout=5.0)  # no guest: at once
    guest = booted(controller)
    on_loop(loop, lambda: controller.agent_idle(True))
    settled = threading.Event()

    def settle() -> None:
        controller.settle(timeout=5.0)
        settled.set()

    guest.request(REQUEST, 0)  # work at this instant: an interrupt thread, say
    threading.Thread(target=settle, daemon=True).start()
    guest.request(WAIT)
    op, seq, when = guest.recv()
    assert (op, when) == (RUN, 0)
    assert not settled.wait(0.2)  # the guest runs at this instant
    guest.sock.sendall(MSG.pack(ACK, seq, 0))
    guest.request(REQUEST, 1_000)  # done for now: its next timer is later
    guest.request(WAIT)
    assert settled.wait(5)
    assert controller.guest_time == 0  # and time stood still: the agent is idle


def test_a_signal_from_the_tests_thread_comes_after_the_guests_turn(
    controller: Controller, loop: EventLoop
) -> None:
    guest = booted(controller)
    link, notifier = attached(loop, controller)
    notifier.signal(FakeQueue(2), 0)  # a GPIO line the test drives, say
    on_loop(loop, lambda: None)  # it is on the calendar now
    guest.request(REQUEST, 0)
    guest.request(WAIT)
    op, seq, when = guest.recv()
    assert (op, when) == (RUN, 0)
    assert link.calls == []  # the guest's own work at that instant came first
    guest.sock.sendall(MSG.pack(ACK, seq, 0))
    guest.request(WAIT)
    assert guest.nothing_for(0.2)
    assert link.calls == [(0, [2])]


def test_a_closed_notifiers_rings_are_not_looked_at(
    controller: Controller, loop: EventLoop
) -> None:
    guest = booted(controller)
    link, notifier = attached(loop, controller)
    on_loop(loop, notifier.close)
    guest.request(REQUEST, 1_000)
    assert guest.wait_run() == 1_000
    assert link.looked == 0


def test_in_the_hosts_time_nothing_is_in_band_and_drivers_kick() -> None:
    scheduler = RealTime()
    assert not scheduler.in_band
    link = FakeLink(None)
    notifier = link.notifier = scheduler.notifier(link)
    assert notifier.kicks(FakeQueue(0))
    notifier.signal(FakeQueue(0), 5_000)  # were a call taken in-band, it would go at once
    assert link.calls == [(-1, [0])]
